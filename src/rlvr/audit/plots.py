"""The report's figures: one function per check that has something to draw, from its evidence
record with matplotlib (Agg); each check's declaration names its function, and `png` turns a figure
into the base64 PNG string report.html embeds, so the report needs no other file."""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend is chosen first
from matplotlib.figure import Figure  # noqa: E402

from rlvr.audit.context import finite  # noqa: E402

if TYPE_CHECKING:
    from rlvr.audit.checks.boundary import BoundaryEvidence
    from rlvr.audit.checks.data import ContaminationEvidence, HoldoutEvidence
    from rlvr.audit.checks.measurement import MatchedComputeEvidence, SeparationEvidence
    from rlvr.audit.checks.strict import StrictEvidence
    from rlvr.audit.drift import DriftReport, Series
    from rlvr.audit.verifier_audit import VerifierEvidence

__all__ = ["boundary", "compute", "contamination", "drift", "holdout", "png", "separation", "strict", "verifier"]

_MULTI = re.compile(r"^(pass|maj)@(\d+)$")
_BASE, _TRAINED = "#7f7f7f", "#1f77b4"


def png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def compute(ev: MatchedComputeEvidence) -> Figure | None:
    pairs = ev.pairs
    if not pairs:
        return None
    fig, axes = plt.subplots(1, len(pairs[:3]), figsize=(4.2 * len(pairs[:3]), 3.2), squeeze=False)
    for ax, pair in zip(axes[0], pairs[:3], strict=False):
        for fam, style in (("pass", "-o"), ("maj", "--s")):
            rows = sorted(
                (r for r in pair.metrics if (m := _MULTI.match(r[0])) and m.group(1) == fam), key=lambda r: r[2] or 0
            )
            for who, vi, ti, color in (("base", 1, 2, _BASE), ("trained", 3, 4, _TRAINED)):
                pts = [(r[ti], r[vi]) for r in rows if finite(r[ti]) and finite(r[vi])]
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, color=color, label=f"{who} {fam}@k", ms=4)
        for r in pair.metrics:
            if r[0] == "greedy":
                ax.plot([r[2]], [r[1]], "^", color=_BASE, label="base greedy")
                ax.plot([r[4]], [r[3]], "^", color=_TRAINED, label="trained greedy")
        ax.set_xscale("log", base=2)
        ax.set(title=pair.split, xlabel="tokens per problem", ylabel="accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def boundary(ev: BoundaryEvidence) -> Figure | None:
    """pass@k against k (log2) of base and trained model, one panel per split, the crossing marked."""
    pairs = ev.pairs[:3]
    if not pairs:
        return None
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 3.2), squeeze=False)
    for ax, p in zip(axes[0], pairs, strict=False):
        ax.plot(p.ks, p.base_pass, "-", color=_BASE, label="base")
        ax.plot(p.ks, p.trained_pass, "-", color=_TRAINED, label="trained")
        if p.crossing_k is not None:
            ax.axvline(p.crossing_k, color="#d62728", ls=":", lw=1, label=f"base overtakes (k={p.crossing_k})")
        ax.set_xscale("log", base=2)
        ax.set(title=f"{p.split} ({p.n_problems} problems)", xlabel="k (samples)", ylabel="pass@k")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def verifier(ev: VerifierEvidence) -> Figure | None:
    rates = {"recall": ev.recall, "specificity": ev.specificity, "rejection": ev.rejection}
    names = [k for k, v in rates.items() if finite(v)]
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(5, 2.2))
    vals = [float(rates[k] or 0.0) for k in names]
    ax.barh(names, vals, color=["#2ca02c" if v >= 0.95 else "#ff7f0e" for v in vals])
    for i, v in enumerate(vals):
        ax.text(min(v, 0.98), i, f"{v:.1%}", va="center", ha="right", color="white", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_title(f"verifier on {ev.n_probes} probes")
    return fig


def _series_fig(panels: Sequence[tuple[str, Sequence[tuple[str, Series | None]]]]) -> Figure | None:
    """One panel per `(title, [(label, series or None)])`; empty panels are left out."""
    drawn = [(t, [(lbl, s) for lbl, s in lines if s is not None and s.steps]) for t, lines in panels]
    drawn = [p for p in drawn if p[1]]
    if not drawn:
        return None
    cols = min(2, len(drawn))
    rows = math.ceil(len(drawn) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 2.8 * rows), squeeze=False)
    for ax, (title, lines) in zip(axes.flat, drawn, strict=False):
        for label, s in lines:
            pts = [(x, y) for x, y in zip(s.steps, s.values, strict=True) if finite(y)]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="." if len(pts) < 30 else None, label=label)
        ax.set(title=title, xlabel="step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(drawn) :]:
        ax.axis("off")
    return fig


def separation(ev: SeparationEvidence) -> Figure | None:
    series = ev.shares.series if ev.shares else {}
    return _series_fig([("weighted reward per step", list(series.items()))])


def contamination(ev: ContaminationEvidence) -> Figure | None:
    sets = [(s.set, s.report.overlaps) for s in ev.sets if s.report and s.report.overlaps]
    if not sets:
        return None
    fig, ax = plt.subplots(figsize=(6, 2.8))
    for name, overlaps in sets:
        ax.hist(overlaps, bins=[i / 20 for i in range(21)], histtype="step", linewidth=1.5, label=name)
    ax.axvline(0.5, color="red", linestyle="--", linewidth=1, label="item threshold")
    ax.set(title="share of each item's 8-grams found in training", xlabel="overlap", ylabel="items")
    ax.legend(fontsize=7)
    return fig


def holdout(ev: HoldoutEvidence) -> Figure | None:
    sbs = ev.side_by_side
    if not sbs:
        return None
    splits = sorted(sbs, key=lambda s: s != "test")
    fig, ax = plt.subplots(figsize=(4.8, 2.8))
    x = range(len(splits))
    ax.bar([i - 0.2 for i in x], [sbs[s].base for s in splits], 0.4, color=_BASE, label="base")
    ax.bar([i + 0.2 for i in x], [sbs[s].trained for s in splits], 0.4, color=_TRAINED, label="trained")
    for i, s in enumerate(splits):
        ax.text(i + 0.2, sbs[s].trained, f"{sbs[s].gain:+.3f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x), splits)
    ax.set(title="sampled pass@1", ylabel="accuracy")
    ax.legend(fontsize=7)
    return fig


_DRIFT_PANELS = (
    ("completion length", (("mean", "train/completion_len/mean"), ("correct", "train/completion_len/correct"),
                           ("incorrect", "train/completion_len/incorrect"))),
    ("entropy", (("entropy", "train/entropy"),)),
    ("truncation and zero-std groups", (("truncated", "train/truncated_frac"), ("zero-std", "train/zero_std_frac"))),
    ("reward vs held-out accuracy", (("reward", "reward/total/mean"), ("train acc", "train/accuracy"),
                                     ("dev pass@1", "eval/dev/pass@1"), ("dev greedy", "eval/dev/greedy_acc"))),
)  # fmt: skip


def drift(ev: DriftReport) -> Figure | None:
    s = ev.series
    return _series_fig([(title, [(label, s.get(key)) for label, key in lines]) for title, lines in _DRIFT_PANELS])


def strict(ev: StrictEvidence) -> Figure | None:
    """Per window of steps (at its last step): the training reward and paid share, the strict pass rate
    and the share paid but strictly wrong, of the re-verified samples."""
    ws = ev.windows
    if not ws:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = [w.last_step for w in ws]
    lines = (
        ("reward (re-verified)", "reward_reverified", "-o", _TRAINED),
        ("paid by the run's verifier", "paid", "--", "#9467bd"),
        ("strict pass rate", "strict", "-s", "#2ca02c"),
        ("hack share", "hack", "-^", "#d62728"),
    )
    for label, field, style, color in lines:
        pts = [(xi, getattr(w, field)) for xi, w in zip(x, ws, strict=True) if finite(getattr(w, field))]
        if pts:
            ax.plot(*zip(*pts, strict=True), style, color=color, label=label, ms=4)
    ax.set(title=f"strict re-verification ({ev.n_reverified} samples)", xlabel="step", ylabel="share / reward")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig
