"""Typed `metrics.jsonl` of a training run (`read_metrics` -> `MetricsLog`): one row per logged step,
namespaced keys (docs/metrics.md); null (how NaN is written) reads as NaN, anything that is not a number
is left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rlvr.runs.io import RunFileError, iter_jsonl
from rlvr.runs.records import _file

__all__ = ["MetricsLog", "MetricsRow", "read_metrics"]


@dataclass(frozen=True)
class MetricsRow:
    """One logged step: its number and the values it logged (NaN: logged as null)."""

    step: int
    values: dict[str, float] = field(default_factory=dict)

    def get(self, key: str) -> float:
        """The value of `key`, NaN when the step did not log it."""
        return self.values.get(key, math.nan)

    def __contains__(self, key: object) -> bool:
        return key in self.values


@dataclass(frozen=True)
class MetricsLog:
    """A run's metrics.jsonl, row by row."""

    rows: list[MetricsRow] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[MetricsRow]:
        return iter(self.rows)

    def has(self, key: str) -> bool:
        """Whether any step logged `key`."""
        return any(key in r for r in self.rows)

    def series(self, key: str) -> tuple[list[int], list[float]]:
        """Steps and values of one key (NaN where a step did not log it)."""
        return [r.step for r in self.rows], [r.get(key) for r in self.rows]

    def tail_mean(self, key: str, last: int | None = None) -> float | None:
        """The mean of the finite values of `key` over the last `last` rows (all rows: None); None when
        there are none.

        >>> log = MetricsLog([MetricsRow(1, {"a": 1.0}), MetricsRow(2, {"a": math.nan}), MetricsRow(3, {"a": 3.0})])
        >>> log.tail_mean("a"), log.tail_mean("a", last=1), log.tail_mean("b")
        (2.0, 3.0, None)
        """
        rows = self.rows[-last:] if last else self.rows
        xs = [v for r in rows if math.isfinite(v := r.get(key))]
        return float(np.mean(xs)) if xs else None


def _number(v: object) -> float | None:
    """A logged value as a float (null: NaN); None for what is not a number."""
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def read_metrics(path: str | Path, *, missing_ok: bool = False) -> MetricsLog:
    """The `metrics.jsonl` of a run folder (or the file itself); a bad line is a RunFileError naming
    the file and line. A row without `step` is the row's position (1-based)."""
    file = _file(path, "metrics.jsonl")
    if missing_ok and not file.exists():
        return MetricsLog()
    rows = []
    for i, (no, raw) in enumerate(iter_jsonl(file)):
        step = raw.get("step", i + 1)
        if isinstance(step, bool) or not isinstance(step, int | float):
            raise RunFileError(f"{file}:{no}: field 'step': expected a number, got {step!r}")
        values = {k: x for k, v in raw.items() if k != "step" and (x := _number(v)) is not None}
        rows.append(MetricsRow(int(step), values))
    return MetricsLog(rows)
