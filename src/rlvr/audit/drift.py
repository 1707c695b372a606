"""Training drift (check 6): length, entropy, truncation and zero-std groups over training, the
reward-hacking alarm, and the structural audit of completions and rewards (from `samples/train.jsonl`).
The windows, alarm thresholds (`THRESHOLDS`, each `(warn, fail)`) and flags: docs/audit.md, "6. Training drift"."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlvr.audit.context import PairedChange
from rlvr.audit.result import Record
from rlvr.audit.runs import TrainRun, reward_kind
from rlvr.runs import RewardAudit, Sample
from rlvr.verify import parse_steps

__all__ = ["DriftReport", "Series", "drift_alarms", "reward_flags", "structure_stats", "window_means"]


@dataclass(frozen=True)
class Alarm:
    alarm: str
    level: str  # warn | fail
    message: str


@dataclass(frozen=True)
class Trend:
    """The mean of the first and the last 20% of logged steps, and late / early."""

    early: float
    late: float
    ratio: float | None = None


@dataclass(frozen=True)
class HeldOutTrend:
    """Dev accuracy logged during training: its early and late window means and the gain."""

    source: str
    points: int
    early: float
    late: float
    gain: float


@dataclass(frozen=True)
class Hacking:
    """Did the training reward rise while held-out accuracy did not?"""

    reward_early: float
    reward_late: float
    reward_rise: float  # per unit of total reward weight
    heldout: HeldOutTrend | PairedChange | None
    note: str | None = None


@dataclass(frozen=True)
class Series:
    steps: list[int]
    values: list[float]


class StructureGroup(Record):
    n: int
    lines: float | None = None
    arith_density: float | None = None
    steps: float | None = None
    tokens: float | None = None


class StructureStats(Record):
    """Mean structure of correct vs incorrect training completions."""

    n_rows: int
    correct: StructureGroup | None = None
    incorrect: StructureGroup | None = None


class DriftReport(Record):
    """Trend evidence and alarms of a GRPO run (the trends are None when the run is too short), the
    structure of its training completions and whether each reward pays for correctness."""

    n_steps: int = 0
    min_steps: int = 0
    thresholds: dict[str, tuple[float, float]] = {}
    alarms: list[Alarm] = []
    series: dict[str, Series] = {}
    length: dict[str, Trend] = {}  # mean, correct, incorrect
    truncated_frac: Trend | None = None
    entropy: Trend | None = None
    zero_std_frac: Trend | None = None
    hacking: Hacking | None = None
    structure: StructureStats | None = None
    reward_flags: list[RewardAudit] = []
    error: str | None = None  # the check could not run (or, where said, what it could not read)

    def alarm(self, name: str, level: str | None, message: str) -> None:
        if level is not None:
            self.alarms.append(Alarm(name, level, message))


MIN_STEPS = 10
WINDOW = 0.2
THRESHOLDS: dict[str, tuple[float, float]] = {
    "length_explosion": (2.0, 3.0),
    "length_collapse": (0.5, 0.25),
    "truncation": (0.10, 0.30),
    "entropy_collapse": (0.25, 0.10),
    "entropy_explosion": (2.0, 3.0),
    "zero_std": (0.80, 0.95),
    "hacking_gain": (0.02, 0.0),
}
HACKING_REWARD_RISE = 0.05
MAX_SAMPLE_ROWS = 20_000
_ARITH_CHARS = re.compile(r"[0-9+\-*/=<>×÷]")
SERIES = (
    "train/completion_len/mean",
    "train/completion_len/correct",
    "train/completion_len/incorrect",
    "train/entropy",
    "train/truncated_frac",
    "train/zero_std_frac",
    "train/accuracy",
    "reward/total/mean",
    "eval/dev/pass@1",
    "eval/dev/greedy_acc",
)


def window_means(values: Sequence[float], frac: float = WINDOW) -> tuple[float, float, int]:
    """Mean of the first and last `frac` of the finite values, and how many finite values there are.

    >>> window_means([1.0, float("nan"), 2.0, 3.0, 4.0, 5.0])
    (1.0, 5.0, 5)
    """
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return math.nan, math.nan, 0
    k = max(1, round(frac * len(vals)))
    return float(np.mean(vals[:k])), float(np.mean(vals[-k:])), len(vals)


def _ratio(late: float, early: float) -> float:
    return late / early if math.isfinite(late) and math.isfinite(early) and early > 0 else math.nan


_LOW = ("length_collapse", "entropy_collapse")  # alarms on values at or below their thresholds


def _level(value: float, alarm: str) -> str | None:
    """`fail`, `warn` or None for `value` against `THRESHOLDS[alarm]` (at or above them; `_LOW`: at or below)."""
    warn, fail = THRESHOLDS[alarm]
    sign = -1.0 if alarm in _LOW else 1.0
    if not math.isfinite(value):
        return None
    if sign * value >= sign * fail:
        return "fail"
    if sign * value >= sign * warn:
        return "warn"
    return None


def _length_alarms(run: TrainRun, out: DriftReport) -> None:
    for part in ("mean", "correct", "incorrect"):
        early, late, _ = window_means(run.metrics.series(f"train/completion_len/{part}")[1])
        r = _ratio(late, early)
        out.length[part] = Trend(early, late, r)
        change = f"completion length x{r:.2f} ({early:.1f} -> {late:.1f})"
        out.alarm("length explosion", _level(r, "length_explosion"), f"{part} {change}")
        if part == "mean":
            out.alarm("length collapse", _level(r, "length_collapse"), change)


def _dynamics_alarms(run: TrainRun, out: DriftReport) -> None:
    early, late, _ = window_means(run.metrics.series("train/truncated_frac")[1])
    out.truncated_frac = Trend(early, late)
    msg = f"{late:.0%} of completions truncated late in training"
    out.alarm("truncation", _level(late, "truncation"), msg)
    early, late, _ = window_means(run.metrics.series("train/entropy")[1])
    r = _ratio(late, early)
    out.entropy = Trend(early, late, r)
    msg = f"entropy x{r:.2f} ({early:.3f} -> {late:.3f})"
    out.alarm("entropy collapse", _level(r, "entropy_collapse"), msg)
    out.alarm("entropy explosion", _level(r, "entropy_explosion"), msg)
    early, late, _ = window_means(run.metrics.series("train/zero_std_frac")[1])
    out.zero_std_frac = Trend(early, late)
    msg = f"{late:.0%} of groups had identical rewards late in training (no gradient)"
    out.alarm("no learning signal", _level(late, "zero_std"), msg)


def _heldout(run: TrainRun, fallback: PairedChange | None) -> HeldOutTrend | PairedChange | None:
    for key in ("eval/dev/pass@1", "eval/dev/greedy_acc"):
        steps, vals = run.metrics.series(key)
        early, late, n = window_means(vals)
        if n >= 2:
            return HeldOutTrend(key, n, early, late, late - early)
    return fallback


def _hacking(run: TrainRun, fallback: PairedChange | None, out: DriftReport) -> Hacking:
    scale = sum(abs(r.weight) for r in run.rewards if math.isfinite(r.weight)) or 1.0
    early, late, _ = window_means(run.metrics.series("reward/total/mean")[1])
    rise = (late - early) / scale if math.isfinite(late - early) else math.nan
    held = _heldout(run, fallback)
    if held is None:
        note = "no held-out accuracy (no dev evaluations logged, no base/trained evaluation pair)"
        return Hacking(early, late, rise, None, note)
    if math.isfinite(rise) and rise >= HACKING_REWARD_RISE and math.isfinite(held.gain):
        warn, fail = THRESHOLDS["hacking_gain"]
        level = "fail" if held.gain <= fail else "warn" if held.gain < warn else None
        msg = f"training reward rose {rise:+.3f} while held-out accuracy ({held.source}) changed {held.gain:+.3f}"
        out.alarm("reward hacking", level, msg)
    return Hacking(early, late, rise, held)


def _downsample(steps: list[int], vals: list[float], limit: int = 300) -> Series:
    keep = [i for i, v in enumerate(vals) if math.isfinite(v)]
    if len(keep) > limit:
        keep = [keep[int(j * len(keep) / limit)] for j in range(limit)]
    return Series([steps[i] for i in keep], [round(vals[i], 5) for i in keep])


def drift_alarms(run: TrainRun, heldout_fallback: PairedChange | None = None) -> DriftReport:
    """Trend evidence and alarms of a GRPO run (thresholds: docs/audit.md); `heldout_fallback`, the paired
    base -> trained change, stands in for dev accuracy when the run logged fewer than two dev evaluations."""
    out = DriftReport(n_steps=len(run.metrics), min_steps=MIN_STEPS, thresholds=THRESHOLDS)
    if out.n_steps < MIN_STEPS:
        out.alarm("too short", "warn", f"only {out.n_steps} logged steps (< {MIN_STEPS}): too short to judge trends")
    else:
        _length_alarms(run, out)
        _dynamics_alarms(run, out)
        out.hacking = _hacking(run, heldout_fallback, out)
    out.series = {k: _downsample(*run.metrics.series(k)) for k in SERIES if run.metrics.has(k)}
    return out


def _even(rows: list[Sample], limit: int) -> list[Sample]:
    return rows if len(rows) <= limit else [rows[int(i * len(rows) / limit)] for i in range(limit)]


def _features(text: str) -> dict[str, float]:
    chars = [c for c in text if not c.isspace()]
    return {
        "lines": float(sum(1 for line in text.splitlines() if line.strip())),
        "arith_density": len(_ARITH_CHARS.findall(text)) / len(chars) if chars else 0.0,
        "steps": float(len(parse_steps(text))),
    }


def _structure(group: list[Sample]) -> StructureGroup:
    feats = [_features(r.text or "") for r in group]  # with an environment: the whole conversation
    stats = {k: float(np.mean([f[k] for f in feats])) if feats else None for k in ("lines", "arith_density", "steps")}
    toks = [float(r.tokens) for r in group if r.tokens is not None]
    return StructureGroup(n=len(group), **stats, tokens=float(np.mean(toks)) if toks else None)


def structure_stats(samples: list[Sample]) -> StructureStats:
    """Mean structure of correct vs incorrect training completions (features: docs/audit.md)."""
    rows = _even([r for r in samples if r.completion is not None], MAX_SAMPLE_ROWS)
    return StructureStats(
        n_rows=len(rows),
        correct=_structure([r for r in rows if bool(r.correct)]),
        incorrect=_structure([r for r in rows if not bool(r.correct)]),
    )


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.std(x) < 1e-12 or np.std(y) < 1e-12:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _one_reward(name: str, rows: list[Sample]) -> RewardAudit:
    data = [
        (float(value), bool(r.correct), float(r.tokens or 0))
        for r in rows
        if (value := r.rewards.get(name)) is not None
    ]
    out = RewardAudit(reward=name, kind=reward_kind(name), n=len(data))
    if not data:
        return out
    v, c, t = (np.array(col, dtype=float) for col in zip(*data, strict=True))
    has_both = bool(c.any() and (~c.astype(bool)).any())
    out.mean, out.std = float(v.mean()), float(v.std())
    out.mean_correct = float(v[c > 0].mean()) if c.any() else None
    out.mean_incorrect = float(v[c == 0].mean()) if (c == 0).any() else None
    rc, rl = _corr(v, c), _corr(v, t)
    out.corr_correct, out.corr_length = rc, rl
    if not has_both or out.mean_correct is None or out.mean_incorrect is None:
        out.note = "all completions were scored the same by the verifier: cannot compare"
        return out
    if out.std < 1e-9:
        out.flags.append("constant")
    elif out.mean_incorrect >= out.mean_correct:
        out.flags.append("pays incorrect completions at least as much as correct ones")
    if math.isfinite(rl) and abs(rl) >= 0.1 and (not math.isfinite(rc) or abs(rl) > abs(rc)):
        out.flags.append(f"tracks length (r={rl:+.2f}) more than correctness (r={rc:+.2f})")
    return out


def reward_flags(samples: list[Sample]) -> list[RewardAudit]:
    """Per reward in the training samples: means for correct/incorrect, correlations and flags."""
    rows = _even(samples, MAX_SAMPLE_ROWS)
    names = sorted({k for r in rows for k in r.rewards})
    return [_one_reward(n, rows) for n in names]
