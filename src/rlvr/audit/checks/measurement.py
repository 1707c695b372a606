"""Readiness checks 1-3, whether the measured gain is measured right: matched compute (the two
evaluations spend the same budget), the verifier (recall, specificity, hack rejection) and reward
separation (the reward's correctness part drives learning, not its format part).
"""

from __future__ import annotations

import re

from rlvr.audit import plots
from rlvr.audit.context import AuditContext, PairedChange, finite
from rlvr.audit.result import CheckResult, Record, Status, Table, check, fmt, worst
from rlvr.audit.runs import EvalRun
from rlvr.audit.separation import RewardShares, ablation_rows, reward_shares
from rlvr.audit.verifier_audit import ProbeFailure, SecondExample, VerifierEvidence, answer_probes, audit_verifier

__all__ = [
    "MatchedComputeEvidence",
    "SeparationEvidence",
    "check_matched_compute",
    "check_reward_separation",
    "check_verifier",
]


MetricRow = tuple[str, float | None, float | None, float | None, float | None, float | None]
"""`[metric, base value, base tokens/problem, trained value, trained tokens/problem, token ratio]`."""


class ComputePair(Record):
    """A base and a trained evaluation of one split, metric by metric with their token budgets."""

    split: str
    base: str
    trained: str
    multi_sample: list[str]
    token_ratio: float | None
    settings_differ: list[str]
    truncated_frac: dict[str, float]  # base, trained
    metrics: list[MetricRow]
    change: PairedChange | None = None


class MatchedComputeEvidence(Record):
    pairs: list[ComputePair] = []
    evaluations: dict[str, str] = {}  # evaluation name -> role
    error: str | None = None  # the check could not run (or, where said, what it could not read)


class SeparationEvidence(Record):
    shares: RewardShares | None = None
    # the audited run and each ablation: run, kind, rewards, train_accuracy, dev_pass@1, <split>_pass@1
    ablations: list[dict[str, str | float | None]] = []
    thresholds: dict[str, float] = {}
    hint: str | None = None
    error: str | None = None  # the check could not run (or, where said, what it could not read)


# (pass at or above, warn at or above; below: fail)
VERIFIER_THRESHOLDS = {"recall": (0.98, 0.90), "specificity": (0.99, 0.95), "rejection": (0.95, 0.85)}
BUDGET_RATIO = (0.8, 1.25)  # trained / base tokens per problem counted as a matched budget
TRUNCATION_WARN = 0.05  # share of completions cut at max_new_tokens above which the budget hides answers
SEPARATION = {"fail_below": 0.2, "warn_below": 0.5, "format_gain_warn": 0.5, "format_only_margin": 0.02}
_MULTI = re.compile(r"^(pass|maj)@(\d+)$")


# ------------------------------------------------------------------ 1. matched compute
def _metric_order(name: str) -> tuple[int, int, str]:
    m = _MULTI.match(name)
    return (int(m.group(2)), 0 if m.group(1) == "pass" else 1, name) if m else (1, 2, name)


def _sampling_keys(base: EvalRun, trained: EvalRun) -> list[str]:
    """The sampling settings to compare: the whole `sampling` record where both evaluations wrote one
    (stop strings and system prompt included), else the fields older eval.json files state."""
    if base.result.sampling and trained.result.sampling:
        return list(dict.fromkeys([*base.result.sampling, *trained.result.sampling]))
    return ["max_new_tokens", "temperature", "top_p", "top_k", "prompt_format"]


def _pair_evidence(base: EvalRun, trained: EvalRun, ctx: AuditContext) -> tuple[Status, ComputePair, list[str]]:
    names = sorted(set(base.result.metrics) & set(trained.result.metrics), key=_metric_order)
    rows: list[MetricRow] = []
    problems: list[str] = []
    for n in names:
        b, t = base.result.metric(n), trained.result.metric(n)
        if b is None or t is None:
            continue
        bt, tt = b.tokens_per_problem, t.tokens_per_problem
        rows.append((n, b.value, bt, t.value, tt, tt / bt if finite(bt) and finite(tt) and bt > 0 else None))
    multi = [r[0] for r in rows if (m := _MULTI.match(r[0])) and int(m.group(2)) > 1]
    p1 = next((r for r in rows if r[0] == "pass@1"), None)
    status: Status = "pass"
    if p1 is None or not multi:
        status = "fail"
        problems.append("pass@1 missing" if p1 is None else "no pass@k or maj@k with k > 1 in both evaluations")
    if any(r[2] is None or r[4] is None for r in rows):
        status = "fail"
        problems.append("a metric states no tokens_per_problem")
    diffs = [
        f"{k}: {base.result.setting(k)} vs {trained.result.setting(k)}"
        for k in ("n_samples", *_sampling_keys(base, trained))
        if base.result.setting(k) != trained.result.setting(k)
    ]
    ratio = p1[5] if p1 else None
    trunc = {who: _truncated(e) for who, e in (("base", base), ("trained", trained))}
    cut = [f"{who} {v:.0%}" for who, v in trunc.items() if v > TRUNCATION_WARN]
    unmatched = not (finite(ratio) and BUDGET_RATIO[0] <= ratio <= BUDGET_RATIO[1])
    if status == "pass" and (diffs or unmatched or cut):
        status = "warn"
        problems += [f"settings differ ({'; '.join(diffs)})"] if diffs else []
        problems += [f"trained model spends x{fmt(ratio, '.2f')} the base's tokens per problem"] if ratio else []
        problems += [f"completions cut at max_new_tokens: {', '.join(cut)}"] if cut else []
    ev = ComputePair(
        split=trained.split,
        base=str(base.path),
        trained=str(trained.path),
        multi_sample=multi,
        token_ratio=ratio,
        settings_differ=diffs,
        truncated_frac=trunc,
        metrics=rows,
        change=ctx.changes.get(trained.split),
    )
    return status, ev, problems


def _truncated(e: EvalRun) -> float:
    """The larger share of sampled or greedy completions cut at max_new_tokens (0 when not recorded)."""
    vals = [e.result.truncated_frac, e.result.greedy_truncated_frac]
    return max([float(v) for v in vals if finite(v)], default=0.0)


@check(
    "matched_compute",
    "Matched compute",
    "pass@1 and a multi-sample metric (pass@k or maj@k) of base and trained model on the same problems, each at a "
    "stated token budget, compared at matched budgets.",
    MatchedComputeEvidence,
    plots.compute,
)
def check_matched_compute(ctx: AuditContext) -> CheckResult:
    roles = {e.name: e.role for e in ctx.evals}
    if not ctx.pairs:
        have = set(roles.values())
        why = "no evaluation of the base model" if "base" not in have else "no evaluation of the trained model"
        if {"base", "trained"} <= have:
            why = "base and trained evaluations share no split and problem set"
        ev = MatchedComputeEvidence(evaluations=roles)
        return CheckResult("matched_compute", "fail", f"{why}: nothing to compare at a matched budget", ev)
    statuses: list[Status] = []
    pairs: list[ComputePair] = []
    tables, notes = [], []
    for base, trained in ctx.pairs:
        st, pair, problems = _pair_evidence(base, trained, ctx)
        statuses.append(st)
        pairs.append(pair)
        notes += [f"{trained.split}: {p}" for p in problems]
        rows = [
            [r[0], fmt(r[1]), fmt(r[2], ".1f"), fmt(r[3]), fmt(r[4], ".1f"), fmt(r[5], ".2f")] for r in pair.metrics
        ]
        cols = ["metric", "base", "base tokens/problem", "trained", "trained tokens/problem", "token ratio"]
        tables.append(Table(f"{trained.split}: {base.name} vs {trained.name}", cols, rows))
    status = worst(statuses)
    head = pairs[0]
    c = head.change
    text = f"{head.split}: pass@1 " + (
        f"{c.base:.3f} -> {c.trained:.3f} ({c.gain:+.3f}, 95% CI {c.ci[0]:+.3f} to {c.ci[1]:+.3f})" if c else "compared"
    )
    if status == "pass":
        text += f"; {', '.join(head.multi_sample)} at matched budgets (token ratio {fmt(head.token_ratio, '.2f')})"
    else:
        text += "; " + "; ".join(notes)
    ev = MatchedComputeEvidence(pairs=pairs, evaluations=roles)
    return CheckResult("matched_compute", status, text, ev, tables=tables)


# ------------------------------------------------------------------ 2. verifier audit
def _rate_status(name: str, value: float | None) -> Status:
    ok, warn = VERIFIER_THRESHOLDS[name]
    if value is None:
        return "warn"
    return "pass" if value >= ok else "warn" if value >= warn else "fail"


@check(
    "verifier",
    "Verifier audit",
    "The verifier alone, on rewritings of the evaluation golds (recall), wrong answers (specificity) and reward "
    "hacks (rejection), and against a second verifier when installed.",
    VerifierEvidence,
    plots.verifier,
)
def check_verifier(ctx: AuditContext) -> CheckResult:
    golds, source = ctx.probe_problems()
    if not golds:
        ev = VerifierEvidence(source=source)
        return CheckResult("verifier", "warn", "no gold answers found to build probes from", ev)
    task = ctx.task
    verify = task.verify if task is not None else None  # None: rlvr.verify.verify_answer
    probes = task.probes if task is not None else answer_probes  # the task's own probe forms
    answers = task is None or not task.columns  # a gold that is one answer string: a math verifier compares
    limit = min(ctx.max_golds, task.probe_limit or ctx.max_golds) if task is not None else ctx.max_golds
    second = ctx.second_verifier and answers
    res = audit_verifier(golds, verify=verify, probes=probes, use_second=second, max_golds=limit)
    res.source, res.thresholds = source, VERIFIER_THRESHOLDS
    rates = {"recall": res.recall, "specificity": res.specificity, "rejection": res.rejection}
    status = worst([_rate_status(k, rates[k]) for k in VERIFIER_THRESHOLDS])
    text = (
        f"recall {fmt(res.recall)}, specificity {fmt(res.specificity)}, adversarial rejection "
        f"{fmt(res.rejection)} on {res.n_probes} probes from {res.n_golds} " + ("golds" if answers else "problems")
    )
    if res.accepted_hacks:
        text += "; hacks it accepts: " + ", ".join(f"{f} ({n}/{res.n_golds})" for f, n in res.accepted_hacks.items())
    elif not answers:
        text += "; it accepts no hack"
    sec = res.second
    if sec:
        text += (
            f"; {sec.name} disagrees on {fmt(sec.disagreement, '.1%')} of {sec.n} probes"
            f" (the probe label sides with rlvr on {sec.rlvr_right} of {sec.rlvr_right + sec.second_right})"
        )
    elif answers:
        text += "; no second verifier installed (pip install math-verify)"
    rows = [
        [k, fmt(rates[k]), f">= {VERIFIER_THRESHOLDS[k][0]}", f">= {VERIFIER_THRESHOLDS[k][1]}"]
        for k in VERIFIER_THRESHOLDS
    ]
    tables = [Table("rates", ["rate", "value", "pass", "warn"], rows)]
    failed = [[f.kind, f.form, f.n, f.failed] for f in res.by_form if f.failed]
    if failed:
        tables.append(Table("probe forms with failures", ["kind", "form", "probes", "failed"], failed))
    if not answers:  # every hack family, and whether the run's verifier paid for it
        hacks = [f for f in res.by_form if f.kind == "adversarial"]
        fams = [[f.form, f.n, f.failed, "ACCEPTED" if f.failed else "refused"] for f in hacks]
        tables.append(Table("hack families", ["family", "probes", "accepted", "verdict"], fams))
    if sec and sec.by_form:
        per_form = [[d.form, d.n, d.rlvr_right, d.n - d.rlvr_right] for d in sec.by_form]
        cols = ["form", "probes", "rlvr right", f"{sec.name} right"]
        tables.append(Table(f"disagreements with {sec.name} by probe form", cols, per_form))
    examples: list[ProbeFailure | SecondExample] = [*res.failures, *(sec.examples if sec else [])]
    return CheckResult("verifier", status, text, res, examples, tables)


# ------------------------------------------------------------------ 3. reward separation
def _separation_status(shares: RewardShares, abl: list[dict[str, str | float | None]]) -> tuple[Status, list[str]]:
    kinds = shares.kinds
    corr, fmt_gain = kinds["correctness"].share, kinds["format"].gain_share
    notes: list[str] = []
    if not kinds["correctness"].rewards:
        return "fail", ["the training reward has no correctness term"]
    if not finite(corr):
        return "warn", ["no reward was earned, so no share can be measured"]
    status: Status = "pass"
    if corr < SEPARATION["fail_below"]:
        status = "fail"
    elif corr < SEPARATION["warn_below"]:
        status = "warn"
    if finite(fmt_gain) and fmt_gain > SEPARATION["format_gain_warn"]:
        status = worst([status, "warn"])
        notes.append(f"{fmt_gain:.0%} of the reward gain came from format")
    main = abl[0] if abl else {}
    for row in (r for r in abl[1:] if r["kind"] == "format-only"):
        for key, val in row.items():
            mine = main.get(key)
            evaluated = key.endswith("_pass@1") and key != "dev_pass@1"
            if evaluated and finite(val) and finite(mine) and val >= mine - SEPARATION["format_only_margin"]:
                status = worst([status, "warn"])
                notes.append(f"format-only ablation {row['run']} reaches {key} {val:.3f} vs {mine:.3f}")
    return status, notes


@check(
    "reward_separation",
    "Reward separation",
    "How much of the training reward came from correctness and how much from format, and what correctness-only "
    "and format-only ablations reach.",
    SeparationEvidence,
    plots.separation,
)
def check_reward_separation(ctx: AuditContext) -> CheckResult:
    shares = reward_shares(ctx.run)
    abl = ablation_rows(ctx.run, ctx.ablations, ctx.evals)
    status, notes = _separation_status(shares, abl)
    k = shares.kinds
    if finite(k["correctness"].share) or finite(k["format"].share):
        text = (
            f"{fmt(k['correctness'].share, '.0%')} of the training reward came from correctness, "
            f"{fmt(k['format'].share, '.0%')} from format"
        )
    else:
        text = "no reward was earned during training, so its sources cannot be separated"
        notes = [n for n in notes if not n.startswith("no reward was earned")]
    text += "; " + "; ".join(notes) if notes else ""
    text += (
        f"; {len(ctx.ablations)} ablation(s) compared"
        if ctx.ablations
        else "; no correctness-only/format-only ablations"
    )
    rows = [[r.reward, r.kind, f"{r.weight:g}", fmt(r.share, ".1%"), fmt(r.gain, "+.3f")] for r in shares.rewards]
    tables = [Table("rewards", ["reward", "kind", "weight", "share of reward", "gain (late - early)"], rows)]
    if len(abl) > 1:
        cols = list(abl[0])
        cells = [[fmt(r.get(c)) if c not in ("run", "kind", "rewards") else r.get(c) for c in cols] for r in abl]
        tables.append(Table("ablations", cols, cells))
    hint = "rlvr train --preset correctness-only / --preset format-only from the same base, then rlvr eval each"
    ev = SeparationEvidence(shares=shares, ablations=abl, thresholds=SEPARATION, hint=None if ctx.ablations else hint)
    return CheckResult("reward_separation", status, text, ev, tables=tables)
