"""What the checks share: the loaded run folders, problems re-created from their configs (each
checked against the content hash its manifest recorded), and paired base-vs-trained comparisons."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np

from rlvr.audit.runs import EvalRun, TrainRun, eval_pairs
from rlvr.evaluate.compare import paired_tests
from rlvr.runs.records import Manifest
from rlvr.tasks import DataError, Problem, Task, get_task, problems_hash, replay

__all__ = ["AuditContext", "GreedyChange", "PairedChange"]


@dataclass(frozen=True)
class GreedyChange:
    base: float
    trained: float
    pvalue: float  # McNemar


@dataclass(frozen=True)
class PairedChange:
    """Base -> trained on the problems both evaluated: sampled pass@1 with its paired bootstrap CI, and
    greedy accuracy with McNemar's p when both evaluations decoded greedily."""

    source: str
    split: str
    n_problems: int
    base: float
    trained: float
    gain: float
    ci: tuple[float, float]
    greedy: GreedyChange | None = None


@dataclass
class LoadedProblems:
    """Problems re-created from a run's config; `verified` when their hash equals the manifest's."""

    problems: list[Problem]
    expected_hash: str | None
    actual_hash: str | None
    error: str | None = None

    @property
    def verified(self) -> bool:
        return self.error is None and self.expected_hash is not None and self.expected_hash == self.actual_hash


def _load(
    manifest: Manifest, split: str, config: dict[str, Any], task: Any, n: Any, expected: str | None
) -> LoadedProblems:
    """The problems a run loaded for `split`: its manifest's load arguments replayed; a run written
    before they were recorded (2026-12-06) has them rebuilt from its config."""
    ref = manifest.data.get(split)
    args = ref.load if ref is not None and ref.load else None
    if args is None:
        seed, preset = int(config.get("seed") or 0), config.get("preset") or "easy"
        args = {"task": str(task), "split": split, "n": None if n is None else int(n), "seed": seed, "preset": preset}
    try:
        probs = replay(args, allow_holdout=True)
    except Exception as e:  # a missing data file, an unknown task: the check reports it
        return LoadedProblems([], expected, None, f"{type(e).__name__}: {e}")
    return LoadedProblems(probs, expected, problems_hash(probs))


def paired_change(base: EvalRun, trained: EvalRun, seed: int = 0) -> PairedChange | None:
    """Paired change of sampled pass@1 (bootstrap CI) and greedy accuracy (McNemar) from the base's
    evaluation to the trained model's, over the problems both evaluated (from `per_problem`), by
    `evaluate.compare.paired_tests`; one comparison, so its p-value is not adjusted."""
    pa = {r.id: r for r in base.result.per_problem}
    common = [r for r in trained.result.per_problem if r.id in pa]
    if not common:
        return None
    a = np.array([pa[r.id].correct / pa[r.id].n for r in common], dtype=float)
    b = np.array([r.correct / r.n for r in common], dtype=float)
    greedy = None
    if all(r.greedy is not None and pa[r.id].greedy is not None for r in common):
        greedy = ([bool(pa[r.id].greedy) for r in common], [bool(r.greedy) for r in common])
    p1, *g = paired_tests((a, b), greedy, names=(base.name, trained.name), seed=seed)
    return PairedChange(
        source=f"pass@1 {base.name} -> {trained.name}",
        split=trained.split,
        n_problems=len(common),
        base=p1.value_a,
        trained=p1.value_b,
        gain=p1.diff,
        ci=(p1.ci[0], p1.ci[1]),
        greedy=GreedyChange(g[0].value_a, g[0].value_b, g[0].pvalue) if g else None,
    )


@dataclass
class AuditContext:
    """The run under audit, its evaluations (roles assigned) and ablations, plus audit options."""

    run: TrainRun
    evals: list[EvalRun] = field(default_factory=list)
    ablations: list[TrainRun] = field(default_factory=list)
    second_verifier: bool = True
    max_golds: int = 200

    @functools.cached_property
    def task(self) -> Task | None:
        """The run's task (its verifier, whether it is synthetic); None when it cannot be found."""
        try:
            return get_task(str(self.run.config.get("task", "arith")))
        except DataError:
            return None

    @functools.cached_property
    def pairs(self) -> list[tuple[EvalRun, EvalRun]]:
        return eval_pairs(self.evals)

    @functools.cached_property
    def changes(self) -> dict[str, PairedChange]:
        """Paired base -> trained change per split (first pair of each split)."""
        out: dict[str, PairedChange] = {}
        for base, trained in self.pairs:
            change = paired_change(base, trained)
            if change is not None and trained.split not in out:
                out[trained.split] = change
        return out

    @functools.cached_property
    def train_problems(self) -> LoadedProblems:
        c, m = self.run.config, self.run.manifest
        return _load(m, "train", c, c.get("task"), c.get("n_train"), m.data_hash("train"))

    @functools.cached_property
    def dev_problems(self) -> LoadedProblems | None:
        c, m = self.run.config, self.run.manifest
        if not c.get("eval_every"):
            return None
        return _load(m, "dev", c, c.get("task"), c.get("eval_n"), m.data_hash("dev"))

    def eval_problems(self, ev: EvalRun) -> LoadedProblems:
        c = ev.config
        expected = ev.result.data_hash or ev.manifest.data_hash(ev.split)
        return _load(ev.manifest, ev.split, c, c.get("task", ev.task), c.get("n_problems"), expected)

    def eval_items(self, ev: EvalRun) -> tuple[list[tuple[str, str]], str]:
        """`(id, question)` of the problems an evaluation scored, and where they came from:
        its samples.jsonl, else re-created from its config when the hash matches."""
        seen: dict[str, str] = {}
        for row in ev.samples():
            if row.problem_id is not None and row.question is not None and row.problem_id not in seen:
                seen[row.problem_id] = row.question
        if seen:
            return list(seen.items()), "samples.jsonl"
        loaded = self.eval_problems(ev)
        if loaded.error is None and (loaded.verified or loaded.expected_hash is None):
            return [(p.id, p.question) for p in loaded.problems], "re-created from config.yaml"
        return [], f"no samples.jsonl and the config does not re-create the problems ({loaded.error or 'hash differs'})"

    def probe_problems(self) -> tuple[list[str] | list[Problem], str]:
        """What the verifier check builds its probes from: the golds (`golds`) for a task whose gold is one
        string; for a task whose `verify` reads `Problem.columns` (code: the tests, and the `verifier` the
        run was paid by), the run's own training problems re-created with its task settings, else the
        evaluations' problems."""
        task = self.task
        if task is None or not task.columns:
            return self.golds()
        train = self.train_problems
        if train.problems:
            return train.problems, "training problems (the run's task settings)"
        for ev in self.evals:
            loaded = self.eval_problems(ev)
            if loaded.problems:
                return loaded.problems, f"problems of the {ev.split} evaluation {ev.name}"
        return [], f"no training or evaluation problems could be re-created ({train.error or 'none'})"

    def golds(self) -> tuple[list[str], str]:
        """Gold answers of the evaluations (their samples), else of the training problems."""
        golds = {r.gold for ev in self.evals for r in ev.samples() if r.gold is not None}
        if golds:
            return sorted(golds), "evaluation samples"
        return sorted({p.answer for p in self.train_problems.problems}), "training problems"


def finite(x: Any) -> TypeGuard[float]:
    """A real, finite number (not a bool, not None, not NaN)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
