"""Typed records of a study folder: `study.json` (`StudyResult`: every condition x seed, pooled
metrics, Holm-adjusted comparisons, learning curves) and one study job's result (`StudyJobResult`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from rlvr.runs.records import Record, read_record

__all__ = [
    "PooledPass",
    "Spread",
    "StudyComparison",
    "StudyCondition",
    "StudyJobResult",
    "StudyPooled",
    "StudyResult",
    "StudyRun",
    "read_study",
]


class Spread(Record):
    """A number over seeds: mean, sample sd (None for one seed), min and max."""

    mean: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None


class StudyRun(Record):
    """One condition x seed of a study: its folders, status and evaluation numbers."""

    seed: int
    status: str
    run_dir: str | None = None
    eval_dir: str | None = None
    train_seconds: float | None = None
    steps_done: int | None = None
    error: str | None = None
    pass_at_1: float | None = Field(None, alias="pass@1")
    greedy: float | None = None
    fidelity: dict[str, float | None] = {}
    judge: dict[str, int] | None = None


class StudyJobResult(Record):
    """What one study job (an arm x seed) did: its folders, status, training time; a failed job is a
    result too. `rlvr.study.run.run_study_job` returns it; the analysis reads it."""

    key: str
    kind: str
    condition: str
    seed: int
    run_dir: str | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _old_name(cls, v: Any) -> Any:
        return "sft-oracle" if v == "sft-matched" else v  # results written before 2026-12-08

    eval_dir: str
    status: str = "failed"
    train_seconds: float | None = None
    steps_done: int | None = None
    error: str | None = None
    traceback: str | None = None
    seconds: float | None = None


class PooledPass(Record):
    value: float
    ci: list[float]
    seeds: Spread


class StudyPooled(Record):
    """A condition pooled over its seeds (docs/study.md, "Statistics")."""

    pass_at_1: PooledPass = Field(alias="pass@1")
    greedy: Spread
    fidelity: dict[str, Spread]
    judge: dict[str, int] | None = None
    n_seeds: int


class StudyCondition(Record):
    name: str
    kind: str
    runs: list[StudyRun]
    pooled: StudyPooled | None = None


class StudyComparison(Record):
    """A paired test of `condition` against `reference` on the study's shared problems."""

    condition: str
    reference: str
    metric: str
    n_problems: int
    reference_value: float
    value: float
    diff: float
    ci: list[float]
    test: str
    pvalue: float
    pvalue_adj: float | None = None
    seeds: list[int]
    diff_per_seed: list[float]
    pvalue_per_seed: list[float] | None = None


class StudyResult(Record):
    """`study.json`: the study's config, every condition x seed, the pooled metrics, the paired
    comparisons (Holm-adjusted), learning curves per condition (train accuracy per step by seed)."""

    schema_version: int = 1
    config: dict[str, Any]
    base: str
    split: str
    n_problems: int
    n_samples: int
    seeds: list[int]
    conditions: list[StudyCondition]
    comparisons: list[StudyComparison]
    correction: str = "holm"
    curves: dict[str, dict[str, list[float | None]]] = {}
    notes: list[str] = []
    failed: list[str] = []
    errors: dict[str, str | None] = {}

    def condition(self, name: str) -> StudyCondition:
        return next(c for c in self.conditions if c.name == name)

    def to_json(self) -> dict[str, Any]:
        """The file's contents (keys as written: `pass@1`)."""
        return self.model_dump(mode="json", by_alias=True)


def read_study(path: str | Path) -> StudyResult:
    """The `study.json` of a study folder (or the file itself), validated."""
    return read_record(StudyResult, path, "study.json")
