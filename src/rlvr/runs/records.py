"""Typed records every run folder shares: `manifest.json` (`Manifest`: what reproduces a run), the
completions of `samples.jsonl` and `samples/train.jsonl` (`Sample`, `TrainSample`), a reward's audit
(`RewardAudit`), and `read_record`, the one reader behind every typed JSON file of rlvr.runs (its
records per folder kind: eval, study, demo, review, search, audit, metrics); the rules: docs/outputs.md.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rlvr.runs.io import RunFileError, iter_jsonl, read_json

__all__ = [
    "DataRef",
    "Host",
    "Interruption",
    "Manifest",
    "Record",
    "ModelInfo",
    "ModelPaths",
    "Paths",
    "RewardAudit",
    "Sample",
    "TrainSample",
    "conversation_text",
    "load_record",
    "read_manifest",
    "read_record",
    "read_samples",
    "validation_line",
]


R = TypeVar("R", bound=BaseModel)


class Record(BaseModel):
    """A typed record of a run file: unknown fields are refused when one is built (the writer's side);
    `load_record` reads a file's record leniently. Records of single-owner files live beside their owner."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def load_record(model: type[R], data: Any) -> R:
    """`data` validated as `model`, without the fields (at any depth) that `model` does not declare:
    a file written by a newer rlvr reads; any other error is raised as pydantic's ValidationError
    (naming the real problem, not an unknown field beside it)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        unknown = [err["loc"] for err in e.errors() if err["type"] == "extra_forbidden"]
        if not unknown:
            raise
    data = copy.deepcopy(data)
    for *path, key in unknown:
        node = data
        try:  # a union member's name in `loc` is no key of the data: leave that field for the error
            for step in path:
                node = node[step]
            del node[key]
        except (KeyError, IndexError, TypeError):
            continue
    return model.model_validate(data)


class DataRef(Record):
    """One data split a run used: task, number of problems, the problems' hash, and the exact load
    arguments (`rlvr.tasks.Task.load_args`: task, split, n, seed and the task's own settings), which
    the audit replays."""

    task: str | None = None
    n: int | None = None
    hash: str | None = None
    skipped_long_prompts: list[str] = []  # train: ids left out because their prompt was too long
    load: dict[str, Any] | None = None


class Host(Record):
    """The machine a run ran on."""

    platform: str | None = None
    cpus: int | None = None


class ModelPaths(Record):
    """Where a run's model input was: its absolute path and its path relative to the run folder (so
    a moved or copied group of run folders still finds it)."""

    absolute: str | None = None
    from_run: str | None = None


class Paths(Record):
    """The inputs a run read from disk (`manifest.json` `paths`)."""

    model: ModelPaths | None = None
    base: str | None = None  # a study's base model


class ModelInfo(Record):
    """The model a command loaded: its path and number of parameters."""

    path: str | None = None
    parameters: int | None = None


class Interruption(Record):
    """Where a run stopped on a signal (`rlvr.interrupt`): the step its last checkpoint holds (train),
    the steps its saved model had (sft), none (an evaluation, abandoned whole)."""

    signal: str
    step: int | None = None


class Manifest(Record):
    """`manifest.json`: the command, its argv, seeds, data hashes, package versions, git commit, host,
    the resolved config, where the model input was, and whether the run finished."""

    schema_version: int = 1
    command: str | None = None
    argv: list[str] = []
    created: str | None = None
    git_commit: str | None = None
    versions: dict[str, str] = {}
    host: Host = Field(default_factory=Host)
    seeds: dict[str, int | list[int]] = {}  # what each seed drives (train, sampling, ...) -> seed(s)
    data: dict[str, DataRef] = {}
    config: dict[str, Any] | None = None  # the command's resolved config (its config.yaml), as values
    paths: Paths = Field(default_factory=Paths)
    resumed_from: str | None = None  # when the run was resumed: the first start's `created`
    model: ModelInfo | None = None
    objective: dict[str, str | int | float | bool | None] | None = None  # train: the resolved objective's settings
    prompt_format: str | None = None
    world_size: int | None = None  # train: data-parallel ranks
    reward_files: dict[str, str] = {}  # train: each reward file's sha256
    base_model: str | None = None  # search: the base every screen trains from
    finished: bool = False
    interrupted: Interruption | None = None  # set when a signal stopped the run; cleared by --resume
    wall_s: float | None = None
    samples_drawn: int | None = None  # train: completions sampled over the run (every sampling round)
    train_s: float | None = None  # train: wall seconds in training steps over the run, resumes included
    steps_done: int | None = None  # sft: steps run (fewer than asked when a time budget ran out)
    failed: list[str] = []  # study: the jobs that failed

    @field_validator("data", mode="before")
    @classmethod
    def _legacy_skipped(cls, v: Any) -> Any:
        """Manifests written before 2026-12-02 kept `data.skipped_long_prompts` beside the splits."""
        if isinstance(v, dict) and isinstance(v.get("skipped_long_prompts"), list):
            v = dict(v)
            skipped = v.pop("skipped_long_prompts")
            if isinstance(v.get("train"), dict):
                v["train"] = {**v["train"], "skipped_long_prompts": skipped}
        return v

    def data_hash(self, split: str) -> str | None:
        """The hash of the problems the run used for `split` (train, dev, test, holdout), if recorded."""
        ref = self.data.get(split)
        return ref.hash if ref is not None else None


class Sample(Record):
    """One completion of `samples.jsonl` (an evaluation) or `samples/train.jsonl` (training); fields
    either file lacks are None (docs/outputs.md lists both)."""

    problem_id: str | None = None
    completion: str | None = None
    correct: bool | None = None
    tokens: int | None = None
    truncated: bool | None = None
    rewards: dict[str, float | None] = {}  # training: each reward's value
    step: int | None = None  # training
    group: int | None = None  # training
    total: float | None = None  # training
    advantage: float | None = None  # training
    policy_version: int | None = None  # training: the policy version (updates applied) that drew it
    sample: int | None = None  # evaluation: the sample's index for its problem
    question: str | None = None  # evaluation
    gold: str | None = None  # evaluation
    gold_solution: str | None = None  # evaluation
    parsed: str | None = None  # evaluation
    reason: str | None = None  # evaluation: the verifier's reason
    messages: list[dict[str, Any]] | None = None  # an environment's conversation after the prompt

    @property
    def text(self) -> str | None:
        """What the model wrote: the completion, or with an environment the whole conversation."""
        return conversation_text(self.messages) if self.messages else self.completion


def conversation_text(messages: list[dict[str, Any]]) -> str:
    """A conversation as one text to read, each turn behind its role (a tool's with its name).

    >>> print(conversation_text([{"role": "assistant", "content": "<tool_call>...</tool_call>"},
    ...                          {"role": "tool", "name": "calc", "content": "28"}]))
    assistant: <tool_call>...</tool_call>
    tool (calc): 28
    """
    out = []
    for m in messages:
        role = f"tool ({m['name']})" if m.get("role") == "tool" and m.get("name") else str(m.get("role"))
        out.append(f"{role}: {m.get('content', '')}")
    return "\n".join(out)


class TrainSample(Record):
    """One row of `samples/train.jsonl` as the GRPO trainer writes it: a completion of a sampled group
    with each reward's value, the total (None: unscorable), its advantage and the verifier's verdict.
    `Sample` reads it back (with the evaluation samples' fields)."""

    step: int
    problem_id: str
    group: int  # the group's index within the step
    completion: str
    tokens: int
    truncated: bool
    rewards: dict[str, float | None]
    total: float | None
    advantage: float
    correct: bool
    policy_version: int | None = Field(None, exclude_if=lambda v: v is None)  # the weights' updates that drew it
    # an environment's conversation after the prompt, tool turns included (left out of the file otherwise)
    messages: list[dict[str, Any]] | None = Field(None, exclude_if=lambda v: v is None)


def read_samples(path: str | Path, *, missing_ok: bool = False) -> list[Sample]:
    """The rows of a samples file, validated; a bad row names the file, line and field."""
    path = Path(path)
    if missing_ok and not path.exists():
        return []
    out = []
    for no, row in iter_jsonl(path):
        try:
            out.append(load_record(Sample, row))
        except ValidationError as e:
            raise RunFileError(validation_line(Path(f"{path}:{no}"), e)) from None
    return out


class RewardAudit(Record):
    """Does a reward pay for correctness? One reward over a run's training samples: its mean on correct
    and incorrect completions, its correlation with correctness and with length, and what is wrong with it
    (`flags`). Written by the audit's drift check (`rlvr.audit.drift.reward_flags`) and the search's screens."""

    reward: str
    kind: str
    n: int
    mean: float | None = None
    std: float | None = None
    mean_correct: float | None = None
    mean_incorrect: float | None = None
    corr_correct: float | None = None
    corr_length: float | None = None
    flags: list[str] = []
    note: str | None = None


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_line(file: Path, e: ValidationError) -> str:
    """The first error of a record's validation as one line: `FILE: field 'a[0].b': message`."""
    err = e.errors()[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "missing"
    return f"{file}: field '{_loc(tuple(err['loc']))}': {msg}" if err["loc"] else f"{file}: {msg}"


def _file(path: str | Path, name: str) -> Path:
    p = Path(path)
    return p / name if p.is_dir() else p


def read_record(model: type[R], path: str | Path, name: str) -> R:
    """The JSON file `name` of a folder (or `path` itself when it is a file), validated as `model`;
    a bad file is a RunFileError naming the file and the field."""
    file = _file(path, name)
    try:
        return load_record(model, read_json(file))
    except ValidationError as e:
        raise RunFileError(validation_line(file, e)) from None


def read_manifest(path: str | Path) -> Manifest:
    """The `manifest.json` of a run folder (or the file itself), validated."""
    return read_record(Manifest, path, "manifest.json")
