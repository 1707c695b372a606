"""Readiness check 8, the reasoning boundary: did training make the model solve fewer distinct problems
at large k? RLVR tends to raise pass@1 while the base overtakes it at large k (Yue et al. 2025, "Does
Reinforcement Learning Really Incentivize Reasoning Capacity in LLMs Beyond the Base Model?",
arXiv:2504.13837): the trained model samples the base's solutions more often, but solves no new ones
and loses some. The check draws both pass@k curves from k = 1 to the largest k both evaluations drew
(unbiased estimator, per problem from eval.json's `per_problem`), finds where they cross, and warns
when the trained curve ends below the base's (paired bootstrap CI over problems)."""

from __future__ import annotations

import numpy as np

from rlvr.audit import plots
from rlvr.audit.context import AuditContext
from rlvr.audit.result import CheckResult, Record, Status, Table, check, fmt, worst
from rlvr.audit.runs import EvalRun
from rlvr.evaluate.compare import sign_flip_pvalue
from rlvr.evaluate.metrics import pass_at_k_array
from rlvr.evaluate.stats import paired_diff_ci

__all__ = ["BoundaryEvidence", "BoundaryPair", "boundary_curves", "check_boundary", "crossing"]

MIN_K = 2  # below this largest k there is no boundary to see: "not enough data"
LARGE_K = 16  # a largest k below this is said to be small in the summary (the paper's curves reach 256)


class BoundaryPair(Record):
    """One split's base and trained evaluation on the problems both scored: pass@k for k = 1..k_max,
    the first k where the trained curve falls below the base's after being at or above it (None: no
    crossing), and the paired change at k_max with its 95% bootstrap CI and sign-flip p."""

    split: str
    base: str
    trained: str
    n_problems: int
    k_max: int
    ks: list[int]
    base_pass: list[float]  # pass@k of the base, one per k in `ks`
    trained_pass: list[float]
    crossing_k: int | None = None
    gain_at_max: float
    ci_at_max: tuple[float, float]
    pvalue_at_max: float
    solved_base_only: int  # problems with a correct sample from the base and none from the trained model
    solved_trained_only: int


class BoundaryEvidence(Record):
    pairs: list[BoundaryPair] = []
    evaluations: dict[str, str] = {}  # evaluation name -> role
    error: str | None = None  # the check could not run (or, where said, what it could not read)


def boundary_curves(n: np.ndarray, c: np.ndarray, k_max: int) -> np.ndarray:
    """Per-problem unbiased pass@k for k = 1..k_max, `(k_max, P)`, from `n`, `c` `(P,)` (samples drawn
    and correct; every n >= k_max).

    >>> boundary_curves(np.array([4, 4]), np.array([1, 0]), 4).mean(1).round(4).tolist()
    [0.125, 0.25, 0.375, 0.5]
    """
    return np.stack([pass_at_k_array(n, c, k) for k in range(1, k_max + 1)])


def crossing(base: list[float], trained: list[float], ks: list[int]) -> int | None:
    """The first k at which the trained curve falls below the base's after being at or above it at
    an earlier k: where the base overtakes (None when it never does).

    >>> crossing([0.2, 0.5, 0.8], [0.4, 0.6, 0.7], [1, 2, 4]), crossing([0.2, 0.5], [0.1, 0.4], [1, 2])
    (4, None)
    """
    above = False
    for b, t, k in zip(base, trained, ks, strict=True):
        if t >= b:
            above = True
        elif above:
            return k
    return None


def _pair(base: EvalRun, trained: EvalRun) -> BoundaryPair | str:
    """The pair's curves and change at the largest k, or why there are none."""
    pb = {r.id: r for r in base.result.per_problem}
    common = [(pb[r.id], r) for r in trained.result.per_problem if r.id in pb]
    if not common:
        return "the two evaluations share no problem in per_problem"
    nb, cb = (np.array([getattr(b, f) for b, _ in common]) for f in ("n", "correct"))
    nt, ct = (np.array([getattr(t, f) for _, t in common]) for f in ("n", "correct"))
    k_max = int(min(nb.min(), nt.min()))
    if k_max < MIN_K:
        return f"the evaluations drew {k_max} sample(s) a problem; pass@k needs k >= {MIN_K} (rlvr eval --samples 64)"
    cur_b, cur_t = boundary_curves(nb, cb, k_max), boundary_curves(nt, ct, k_max)  # (k_max, P)
    gain, low, high = paired_diff_ci(cur_b[-1], cur_t[-1], seed=0)
    ks = list(range(1, k_max + 1))
    bp, tp = cur_b.mean(1).tolist(), cur_t.mean(1).tolist()
    return BoundaryPair(
        split=trained.split,
        base=str(base.path),
        trained=str(trained.path),
        n_problems=len(common),
        k_max=k_max,
        ks=ks,
        base_pass=bp,
        trained_pass=tp,
        crossing_k=crossing(bp, tp, ks),
        gain_at_max=gain,
        ci_at_max=(low, high),
        pvalue_at_max=sign_flip_pvalue(cur_t[-1] - cur_b[-1], seed=0),
        solved_base_only=int(((cb > 0) & (ct == 0)).sum()),
        solved_trained_only=int(((ct > 0) & (cb == 0)).sum()),
    )


def _grid(k_max: int) -> list[int]:
    """The k a table shows: 1, 2, 4, ... and k_max."""
    return sorted({*(2**i for i in range(k_max.bit_length()) if 2**i <= k_max), k_max})


def _curve_table(p: BoundaryPair) -> Table:
    rows = [
        [k, fmt(b), fmt(t), fmt(t - b, "+.3f")]
        for k in _grid(p.k_max)
        for b, t in [(p.base_pass[k - 1], p.trained_pass[k - 1])]
    ]
    return Table(f"{p.split}: pass@k on {p.n_problems} problems", ["k", "base", "trained", "trained - base"], rows)


@check(
    "boundary",
    "Reasoning boundary",
    "pass@k of base and trained model from k = 1 to the largest k both evaluations drew: does the base overtake "
    "the trained model at large k (RL narrowing what the model can solve)?",
    BoundaryEvidence,
    plots.boundary,
)
def check_boundary(ctx: AuditContext) -> CheckResult:
    roles = {e.name: e.role for e in ctx.evals}
    if not ctx.pairs:
        text = "not enough data: no base and trained evaluation of the same problems"
        return CheckResult("boundary", "warn", text, BoundaryEvidence(evaluations=roles))
    pairs: list[BoundaryPair] = []
    notes: list[str] = []
    statuses: list[Status] = []
    for base, trained in ctx.pairs:
        p = _pair(base, trained)
        if isinstance(p, str):
            notes.append(f"{trained.split}: not enough data: {p}")
            statuses.append("warn")
            continue
        pairs.append(p)
        below = p.gain_at_max < 0
        statuses.append("warn" if below else "pass")
        change = (
            f"pass@{p.k_max} {p.base_pass[-1]:.3f} -> {p.trained_pass[-1]:.3f} ({p.gain_at_max:+.3f}, "
            f"95% CI {p.ci_at_max[0]:+.3f} to {p.ci_at_max[1]:+.3f})"
        )
        where = f"; the base overtakes at k = {p.crossing_k}" if p.crossing_k is not None else ""
        verdict = "the trained model solves fewer problems at large k" if below else "no narrowing at large k"
        small = f" (k = {p.k_max} only: rlvr eval --samples 64 shows large k)" if p.k_max < LARGE_K else ""
        notes.append(f"{p.split}: {change}{where}: {verdict}{small}")
    tables = [_curve_table(p) for p in pairs]
    if pairs:
        rows = [[p.split, p.solved_base_only, p.solved_trained_only, fmt(p.pvalue_at_max)] for p in pairs]
        cols = ["split", "solved by base only", "solved by trained only", "p (pass@k_max, sign-flip)"]
        tables.append(Table("problems solved at least once", cols, rows))
    ev = BoundaryEvidence(pairs=pairs, evaluations=roles)
    return CheckResult("boundary", worst(statuses), "; ".join(notes), ev, tables=tables)
