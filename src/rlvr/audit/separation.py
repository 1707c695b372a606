"""Reward separation (check 3): each configured reward's share of the weighted training reward and
its gain (`reward_shares`), and the audited run beside its ablations (`ablation_rows`); the
definitions: docs/audit.md, "3. Reward separation"."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rlvr.audit.drift import Series, window_means
from rlvr.audit.runs import EvalRun, TrainRun, ablation_kind, reward_kind

__all__ = ["RewardShares", "ablation_rows", "reward_shares"]


@dataclass
class RewardShare:
    """One configured reward over training: its weighted mass, share of the total and gain."""

    reward: str  # the metrics name
    kind: str  # correctness | format | other
    weight: float
    steps: int
    mass: float  # sum over steps of |weight * mean reward|
    early: float
    late: float
    gain: float
    share: float = math.nan


@dataclass
class KindShare:
    share: float
    gain: float
    rewards: list[str]
    gain_share: float = math.nan


@dataclass
class RewardShares:
    rewards: list[RewardShare]
    kinds: dict[str, KindShare]  # correctness, format, other
    total_mass: float
    series: dict[str, Series]  # per reward: steps and weighted values


def _metric_names(run: TrainRun) -> list[str]:
    """The metrics name of each configured reward (the trainer suffixes `_i` when names repeat)."""
    names = [r.name for r in run.rewards]
    return names if len(set(names)) == len(names) else [f"{n}_{i}" for i, n in enumerate(names)]


def reward_shares(run: TrainRun) -> RewardShares:
    """Per reward and per kind: weight, share of the total |weighted reward| over training, gain."""
    rows: list[RewardShare] = []
    series: dict[str, Series] = {}
    for spec, key in zip(run.rewards, _metric_names(run), strict=True):
        steps, vals = run.metrics.series(f"reward/{key}/mean")
        w = spec.weight if math.isfinite(spec.weight) else 0.0
        contrib = [w * v for v in vals]
        early, late, n = window_means(contrib)
        mass = sum(abs(c) for c in contrib if math.isfinite(c))
        rows.append(RewardShare(key, reward_kind(spec.name), w, n, mass, early, late, late - early if n else math.nan))
        series[key] = Series(steps, [round(c, 5) if math.isfinite(c) else math.nan for c in contrib])
    total = sum(r.mass for r in rows)
    for r in rows:
        r.share = r.mass / total if total > 0 else math.nan
    kinds: dict[str, KindShare] = {}
    for kind in ("correctness", "format", "other"):
        part = [r for r in rows if r.kind == kind]
        gains = [r.gain for r in part if math.isfinite(r.gain)]
        share = sum(r.mass for r in part) / total if total > 0 else (math.nan if part else 0.0)
        kinds[kind] = KindShare(share, sum(gains) if gains else 0.0, [r.reward for r in part])
    pos_gain = sum(max(0.0, k.gain) for k in kinds.values())
    for k in kinds.values():
        k.gain_share = max(0.0, k.gain) / pos_gain if pos_gain > 0 else math.nan
    return RewardShares(rows, kinds, total, series)


def _late(run: TrainRun, key: str) -> float | None:
    early, late, n = window_means(run.metrics.series(key)[1])
    return late if n else None


def _eval_value(evals: list[EvalRun], split: str, metric: str = "pass@1") -> float | None:
    for ev in evals:
        m = ev.result.metric(metric)
        if ev.split == split and m is not None and m.value is not None:
            return float(m.value)
    return None


def ablation_rows(
    run: TrainRun, ablations: list[TrainRun], evals: list[EvalRun]
) -> list[dict[str, str | float | None]]:
    """The audited run and each ablation side by side: rewards, late training accuracy, late dev
    pass@1, and evaluated pass@1 per split."""
    trained = [e for e in evals if e.role == "trained"]
    splits = sorted({e.split for e in evals if e.role in ("trained", "ablation")}, key=lambda s: (s != "test", s))
    out: list[dict[str, str | float | None]] = []
    for r, kind, evs in [(run, "audited run", trained)] + [
        (a, ablation_kind(a) or "ablation", [e for e in evals if e.role == "ablation" and e.ablation == a.name])
        for a in ablations
    ]:
        out.append(
            {
                "run": r.name,
                "kind": kind,
                "rewards": ", ".join(f"{x.name}x{x.weight:g}" for x in r.rewards),
                "train_accuracy": _late(r, "train/accuracy"),
                "dev_pass@1": _late(r, "eval/dev/pass@1"),
                **{f"{s}_pass@1": _eval_value(evs, s) for s in splits},
            }
        )
    return out
