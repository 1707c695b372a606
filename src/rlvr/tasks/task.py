"""A task, declared once (subclass `Task`, `register` it): its name, its own load settings, its splits,
whether it keeps a private holdout, and its verifier. `get_task(name)` returns it (or a `JsonlTask` for a
path); `Task.load` checks the split and the holdout rule; `Task.load_args` is what a manifest records so
the audit can `replay` the load. docs/tasks.md shows a task declared and registered.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rlvr.tasks import arith
from rlvr.tasks.gsm8k import DataError, load_gsm8k, load_jsonl
from rlvr.tasks.problem import Problem
from rlvr.verify import Verdict, verify_answer
from rlvr.verify.probes import Probe, number_probes

__all__ = [
    "Construction",
    "HoldoutError",
    "JsonlTask",
    "NoParams",
    "SPLITS",
    "Split",
    "Task",
    "bucket",
    "get_task",
    "hashed_split",
    "register",
    "replay",
    "task_names",
]

Split = Literal["train", "dev", "test", "holdout"]
SPLITS: tuple[Split, ...] = ("train", "dev", "test", "holdout")


class HoldoutError(PermissionError):
    """Raised when code that trains or selects asks for the private holdout."""


@dataclass(frozen=True)
class Construction:
    """Whether a synthetic task's split rule holds for an evaluation set (arith: test/dev questions
    hash into their own split; holdout questions use templates training never uses)."""

    rule: str
    ok: bool
    violations: list[str] = field(default_factory=list)
    templates: list[str] | None = None  # holdout: its templates and training's
    train_templates: list[str] | None = None


class NoParams(BaseModel):
    """A task without load settings of its own."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class Task:
    """One task. Subclasses set `name`, `params` (their load settings), `splits`, `templated`, and
    implement `generate`; `verify` defaults to the numeric final-answer verifier. A task whose gold is
    more than a string declares the `Problem.columns` its `verify` reads in `columns`."""

    name: ClassVar[str]
    params: ClassVar[type[BaseModel]] = NoParams
    splits: ClassVar[tuple[Split, ...]] = ("train", "dev", "test")
    templated: ClassVar[bool] = False  # questions share template phrases by construction (contamination check)
    columns: ClassVar[tuple[str, ...]] = ()  # the `Problem.columns` its `verify` reads besides the gold answer
    probe_limit: ClassVar[int | None] = None  # at most this many problems feed the audit's probes (None: its own cap)

    @property
    def holdout(self) -> bool:
        """Whether the task keeps a private holdout split (readable by evaluation only)."""
        return "holdout" in self.splits

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        raise NotImplementedError

    def verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """Is `completion`'s final answer `gold`? (`rlvr.verify.verify_answer`). `columns` are the
        problem's `Problem.columns` (a task that declares `columns` reads them; others ignore them)."""
        return verify_answer(completion, gold)

    def strict_verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """The task's strictest verdict whatever verifier a run was paid with (the audit's strict
        re-verification of training samples): `verify` unless the task can be loaded with a laxer one
        (`code`, `pyfunc`: rlvr's harness even under `verifier: naive`; `ifeval`: strict mode)."""
        return self.verify(completion, gold, **columns)

    def probes(self, problem: Problem) -> list[Probe]:
        """Completions written from `problem` (its gold `answer`, and its `columns` and `solution` where the
        gold is more than a string) that the verifier should accept, reject as wrong, or reject as hacks
        (the audit's verifier check scores `verify(probe.completion, probe.gold, **probe.columns)` on
        them): numeric rewritings of the answer by default (`rlvr.verify.probes`)."""
        return number_probes(problem.answer)

    def construction(self, problems: list[Problem], split: str) -> Construction | None:
        """For a synthetic task, whether an evaluation set obeys the rule that keeps it out of training
        (the audit's contamination check); None for a task without such a rule."""
        return None

    def settings(self, **settings: Any) -> BaseModel:
        """The task's own load settings out of whatever a config has (the undeclared ones are ignored)."""
        declared = {k: v for k, v in settings.items() if k in self.params.model_fields and v is not None}
        try:
            return self.params.model_validate(declared)
        except ValidationError as e:
            err = e.errors()[0]
            raise DataError(f"task {self.name!r}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None

    def load(
        self, split: Split, *, n: int | None = None, seed: int = 0, allow_holdout: bool = False, **settings: Any
    ) -> list[Problem]:
        """Problems of `split`; the holdout only with `allow_holdout` (evaluation; never training or selection)."""
        if split not in SPLITS:
            raise DataError(f"unknown split {split!r}: use train, dev, test or holdout")
        if split == "holdout" and not allow_holdout:
            raise HoldoutError(f"the private holdout of {self.name!r} is not available to training or selection")
        if split not in self.splits:
            if split == "holdout":
                raise DataError(f"{self.name} has no private holdout; evaluate a JSONL file of your own instead")
            raise DataError(f"{self.name} has no {split} split (it has {', '.join(self.splits)})")
        return self.generate(split, n, seed, self.settings(**settings))

    def load_args(self, split: Split, *, n: int | None = None, seed: int = 0, **settings: Any) -> dict[str, Any]:
        """The exact arguments of a `load`, as a manifest records them (`DataRef.load`)."""
        return {"task": self.name, "split": split, "n": n, "seed": seed, **self.settings(**settings).model_dump()}


def replay(args: dict[str, Any], *, allow_holdout: bool = False) -> list[Problem]:
    """Load the problems a `load_args` record names (a run's manifest keeps them; the audit replays
    them with `allow_holdout=True`)."""
    a = dict(args)
    task = get_task(str(a.pop("task")))
    return task.load(a.pop("split"), n=a.pop("n", None), seed=a.pop("seed", 0), allow_holdout=allow_holdout, **a)


class ArithParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    preset: str = "easy"  # the rung of the ladder (docs/embedded.md)


class ArithTask(Task):
    """The synthetic arithmetic ladder (`rlvr.tasks.arith`), seeded, with a private holdout of its own
    templates; `n` defaults to 1,000."""

    name = "arith"
    params = ArithParams
    splits = SPLITS
    templated = True

    def construction(self, problems: list[Problem], split: str) -> Construction | None:
        """test/dev: every question hashes into its own split (`arith.split_of`), so no test or dev
        question can be a training question. holdout: every problem's template is one training never uses."""
        if split in ("test", "dev"):
            wrong = [p.id for p in problems if arith.split_of(p.question) != split]
            return Construction(f"every question hashes into split {split!r}", not wrong, wrong[:5])
        if split == "holdout":
            train_templates = {p.meta.get("template") for p in arith.generate("train", 2000)}
            wrong = [p.id for p in problems if p.meta.get("template") in train_templates]
            used = sorted({str(p.meta.get("template")) for p in problems})
            rule = "holdout templates are disjoint from training templates"
            return Construction(rule, not wrong, wrong[:5], used, sorted(str(t) for t in train_templates))
        return Construction("n/a", True)

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        if params.preset not in arith.PRESETS:
            raise DataError(f"unknown arith preset {params.preset!r}: use one of {', '.join(arith.PRESETS)}")
        return arith.generate(split, n if n is not None else 1000, seed=seed, preset=params.preset)


def bucket(text: str) -> int:
    """A question's hash bucket, 0-99 (a split rule that needs no stored list)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % 100


def hashed_split(problems: list[Problem], split: Split, n: int | None) -> list[Problem]:
    """`dev`: the 5% of `problems` whose question hashes into bucket < 5; `train`: the rest (disjoint by
    construction); the first `n` of them."""
    picked = [p for p in problems if (bucket(p.question) < 5) == (split == "dev")]
    return picked[:n] if n is not None else picked


class GSM8KTask(Task):
    """GSM8K, vendored. `dev` is the 5% of its train split whose question hashes into bucket < 5 and
    `train` the rest, so dev is disjoint from train; GSM8K has no private holdout."""

    name = "gsm8k"

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        if split == "test":
            return load_gsm8k("test", limit=n)
        return hashed_split(load_gsm8k("train"), split, n)


@dataclass(frozen=True)
class JsonlTask(Task):
    """A GSM8K-format JSONL file of your own: every split reads the whole file (it is your evaluation
    set, or your holdout: the holdout still needs `allow_holdout`)."""

    path: str
    splits = SPLITS

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.path

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        return load_jsonl(Path(self.path), limit=n)


_TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Declare a task under its name (once)."""
    if task.name in _TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    _TASKS[task.name] = task
    return task


def task_names() -> list[str]:
    return list(_TASKS)


def get_task(name: str) -> Task:
    """The registered task `name`, or the JSONL file at that path.

    >>> get_task("arith").holdout, get_task("gsm8k").holdout
    (True, False)
    """
    if name in _TASKS:
        return _TASKS[name]
    if name.endswith(".jsonl") or Path(name).exists():
        return JsonlTask(name)
    raise DataError(f"unknown task {name!r}: use {', '.join(repr(t) for t in _TASKS)} or a path to a .jsonl file")


register(ArithTask())
register(GSM8KTask())
