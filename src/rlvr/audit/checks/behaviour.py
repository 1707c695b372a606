"""Readiness checks 6-7, what training did and whether people agree: drift in the trained model's
outputs (length, entropy, structure, reward hacking flags) and the human-reviewed slice (the verifier
against people's labels)."""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import Field

from rlvr.audit import plots
from rlvr.audit.context import AuditContext, finite
from rlvr.audit.drift import DriftReport, StructureStats, drift_alarms, reward_flags, structure_stats
from rlvr.audit.result import CheckResult, Record, Status, Table, check, fmt, worst
from rlvr.runs import RewardAudit, RunFileError
from rlvr.runs.review import ReviewStats, ReviewSummary, read_review_stats

__all__ = ["HumanEvidence", "check_drift", "check_human"]


class HumanEvidence(Record):
    eval: str | None = None  # the labelled evaluation the verdict is about
    schema_: str | None = Field(None, alias="schema")
    summary: ReviewSummary | None = None
    thresholds: dict[str, float] = {}
    all: list[str] = []  # every evaluation with a labelled slice
    found: list[str] | None = None
    error: str | None = None  # its stats.json could not be read, or the check could not run


HUMAN = {"min_labelled": 30, "kappa_fail": 0.4, "kappa_warn": 0.6, "pr_fail": 0.8, "pr_warn": 0.95}


# ------------------------------------------------------------------ 6. training drift
def _drift_tables(d: DriftReport, struct: StructureStats, flags: list[RewardAudit]) -> list[Table]:
    tables = []
    if d.alarms:
        tables.append(Table("alarms", ["alarm", "level", "detail"], [[a.alarm, a.level, a.message] for a in d.alarms]))
    rows = [
        [f"completion length ({k})", fmt(v.early, ".1f"), fmt(v.late, ".1f"), fmt(v.ratio, ".2f")]
        for k, v in d.length.items()
    ]
    trends = {"entropy": d.entropy, "truncated_frac": d.truncated_frac, "zero_std_frac": d.zero_std_frac}
    rows += [[k, fmt(t.early), fmt(t.late), fmt(t.ratio, ".2f")] for k, t in trends.items() if t is not None]
    if rows:
        tables.append(
            Table("early vs late training (first and last 20% of steps)", ["measure", "early", "late", "ratio"], rows)
        )
    feats = ("n", "tokens", "lines", "steps", "arith_density")
    if struct.n_rows and struct.correct and struct.incorrect:
        c, i = struct.correct, struct.incorrect
        rows = [[f, fmt(getattr(c, f), ".3g"), fmt(getattr(i, f), ".3g")] for f in feats]
        tables.append(Table("structure of training completions", ["feature", "correct", "incorrect"], rows))
    if flags:
        rows = [
            [
                f.reward,
                f.kind,
                fmt(f.mean_correct),
                fmt(f.mean_incorrect),
                fmt(f.corr_correct, "+.2f"),
                fmt(f.corr_length, "+.2f"),
                "; ".join(f.flags) or f.note or "ok",
            ]
            for f in flags
        ]
        cols = ["reward", "kind", "mean | correct", "mean | incorrect", "r(correct)", "r(length)", "flags"]
        tables.append(Table("does each reward pay for correctness?", cols, rows))
    return tables


@check(
    "drift",
    "Training drift",
    "Completion length, entropy, truncation and zero-std groups over training, reward vs held-out accuracy, and "
    "whether any reward pays regardless of correctness.",
    DriftReport,
    plots.drift,
)
def check_drift(ctx: AuditContext) -> CheckResult:
    fallback = ctx.changes.get("test") or next(iter(ctx.changes.values()), None)
    d = drift_alarms(ctx.run, fallback)
    samples = ctx.run.samples()
    struct, flags = structure_stats(samples), reward_flags(samples)
    levels = [a.level for a in d.alarms]
    flagged = [f for f in flags if f.flags]
    levels += ["fail" if f.kind == "correctness" else "warn" for f in flagged]
    if not samples:
        levels.append("warn")
    status = worst(levels)
    parts = [a.message for a in d.alarms] + [f"reward {f.reward}: {'; '.join(f.flags)}" for f in flagged]
    if not samples:
        parts.append("no samples/train.jsonl: structural audit skipped")
    if not parts:
        h, mean = d.hacking, d.length.get("mean")
        held = h.heldout if h is not None else None
        parts.append(
            f"no alarms over {d.n_steps} steps: length x{fmt(mean.ratio if mean else None, '.2f')}, entropy "
            f"x{fmt(d.entropy.ratio if d.entropy else None, '.2f')}, truncation "
            f"{fmt(d.truncated_frac.late if d.truncated_frac else None, '.0%')}, reward "
            f"{fmt(h.reward_rise if h else None, '+.3f')} with held-out {fmt(held.gain if held else None, '+.3f')}"
        )
    d.structure, d.reward_flags = struct, flags
    return CheckResult("drift", status, "; ".join(parts), d, tables=_drift_tables(d, struct, flags))


# ------------------------------------------------------------------ 7. human judgment
def _read_stats(path: Path) -> ReviewStats | str:
    """The review's statistics, or why they cannot be read."""
    try:
        return read_review_stats(path)
    except RunFileError as e:
        return f"unreadable: {e}"


def _human_status(s: ReviewSummary) -> tuple[Status, list[str]]:
    n, kappa, in_ci = s.n_labelled, s.answer_kappa_min, s.verifier_in_corrected_ci
    fails, warns = [], []
    if in_ci is False:
        ci = s.pass_at_1_corrected_ci or [math.nan, math.nan]
        fails.append(
            f"verifier pass@1 {fmt(s.pass_at_1_verifier)} lies outside the human-corrected CI "
            f"[{fmt(ci[0])}, {fmt(ci[1])}]"
        )
    if finite(kappa) and kappa < HUMAN["kappa_fail"]:
        fails.append(f"reviewers disagree (kappa {kappa:.2f})")
    elif finite(kappa) and kappa < HUMAN["kappa_warn"]:
        warns.append(f"moderate reviewer agreement (kappa {kappa:.2f})")
    elif not finite(kappa):
        warns.append("one reviewer only: no agreement measured")
    for name, v in (("verifier precision", s.verifier_precision), ("verifier recall", s.verifier_recall)):
        if finite(v) and v < HUMAN["pr_fail"]:
            fails.append(f"{name} {v:.2f} against people")
        elif finite(v) and v < HUMAN["pr_warn"]:
            warns.append(f"{name} {v:.2f} against people")
    if n < HUMAN["min_labelled"]:
        warns.append(f"only {n} labelled items (< {HUMAN['min_labelled']})")
    return ("fail" if fails else "warn" if warns else "pass"), fails + warns


@check(
    "human",
    "Human judgment",
    "A human-labelled slice: reviewer agreement, verifier precision/recall against people, and pass@1 re-estimated "
    "from the labels.",
    HumanEvidence,
)
def check_human(ctx: AuditContext) -> CheckResult:
    found = [
        (e, _read_stats(e.path / "review" / "stats.json"))
        for e in ctx.evals
        if (e.path / "review" / "stats.json").is_file()
    ]
    target = next((e for e in ctx.evals if e.role == "trained" and e.split == "test"), next(iter(ctx.evals), None))
    if not found:
        where = str(target.path) if target else "EVAL_DIR"
        text = f"no human-labelled slice; run `rlvr review export {where}`"
        return CheckResult("human", "warn", text, HumanEvidence(found=[]))
    found.sort(key=lambda es: (es[0].role != "trained", es[0].split != "test"))
    ev, stats = found[0]
    if isinstance(stats, str):
        return CheckResult("human", "warn", stats, HumanEvidence(error=stats))
    s = stats.summary
    status, notes = _human_status(s)
    ci = s.pass_at_1_corrected_ci or [math.nan, math.nan]
    text = (
        f"{ev.name}: {s.n_labelled} items labelled by {s.n_reviewers} reviewer(s); verifier precision "
        f"{fmt(s.verifier_precision, '.2f')}, recall {fmt(s.verifier_recall, '.2f')}; pass@1 "
        f"{fmt(s.pass_at_1_verifier)} by the verifier vs {fmt(s.pass_at_1_corrected)} corrected by people "
        f"(CI {fmt(ci[0])} to {fmt(ci[1])})"
    )
    if notes:
        text += "; " + "; ".join(notes)
    rows = [
        [str(e.path), e.role, e.split, "n/a" if isinstance(st, str) else str(st.summary.n_labelled)] for e, st in found
    ]
    evid = HumanEvidence(
        eval=str(ev.path), schema_=stats.schema_, summary=s, thresholds=HUMAN, all=[str(e.path) for e, _ in found]
    )
    return CheckResult(
        "human", status, text, evid, tables=[Table("review slices", ["eval", "role", "split", "labelled"], rows)]
    )
