"""`rlvr compare`: several evaluations side by side, paired on shared problems, at equal token budgets.

Reads only each folder's `eval.json`; the first folder is the baseline. `compare_runs` compares and
`format_comparison` renders the result as text; docs/evaluation.md explains the paired tests, the
multiplicity correction and the budget matching.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np
import numpy.typing as npt

from rlvr.evaluate.metrics import pass_at_k_array
from rlvr.evaluate.stats import Correction, adjust_pvalues, mcnemar, paired_diff_ci
from rlvr.runs import EvalResult, Metric, ProblemResult, RunFileError, read_eval, read_judge, write_json

__all__ = [
    "BudgetMatch",
    "CompareError",
    "Comparison",
    "Correction",
    "Discordant",
    "PairedTest",
    "Pairs",
    "RunSummary",
    "budget_ratio",
    "compare_runs",
    "comparison_tables",
    "format_comparison",
    "paired_tests",
    "render_comparison",
    "sign_flip_pvalue",
]

Pairs = Literal["baseline", "all"]
_EXACT_SIGN_FLIP_MAX = 16  # nonzero differences up to which all 2^m sign patterns are enumerated
_SIGN_FLIP_DRAWS = 10_000
_PASS_RE = re.compile(r"^pass@(\d+)$")


class CompareError(ValueError):
    """Evaluations that cannot be compared (different task or split, no shared problems, bad file)."""


@dataclass(frozen=True)
class RunSummary:
    """One evaluation: where it came from and each metric's value, CI and tokens per problem."""

    name: str
    path: str
    model: str
    task: str
    preset: str | None
    split: str
    data_hash: str | None
    n_problems: int
    n_samples: int
    tokens_per_sample: float
    metrics: dict[str, Metric]  # as eval.json holds them
    judge: dict[str, int] | None = None  # error categories from `rlvr judge` (judge.json), when judged
    judge_model: str | None = None


class Discordant(TypedDict, total=False):
    """McNemar's discordant problems of a greedy test: right only in `a` (b10) or only in `b` (b01);
    empty for the other tests."""

    b01: int
    b10: int


@dataclass(frozen=True)
class PairedTest:
    """A paired test of run `b` against run `a` on their `n_problems` shared problems.

    `diff` = value_b - value_a with bootstrap interval `ci`; `pvalue` is raw, `pvalue_adj` adjusted
    over the whole family. `budget_ratio` = larger / smaller tokens per problem of the two rows.
    `paired_tests` fills the statistics and leaves `pvalue_adj` and the token budgets NaN.
    """

    a: str
    b: str
    metric: str
    n_problems: int
    value_a: float
    value_b: float
    diff: float
    ci: tuple[float, float]
    test: str
    pvalue: float
    pvalue_adj: float = math.nan
    tokens_a: float = math.nan
    tokens_b: float = math.nan
    budget_ratio: float = math.nan
    budget_matched: bool = False
    detail: Discordant = field(default_factory=Discordant)


@dataclass(frozen=True)
class BudgetMatch:
    """pass@k_a of run `a` vs the pass@k_b of run `b` with the closest tokens per problem.

    `matched` iff `ratio` = max(tokens) / min(tokens) <= 1 + budget_tolerance. `diff` is the mean
    paired difference of per-problem unbiased pass@k (b - a) on the shared problems, `ci` its
    bootstrap interval (descriptive: not in the corrected family).
    """

    a: str
    b: str
    metric_a: str
    metric_b: str
    tokens_a: float
    tokens_b: float
    value_a: float
    value_b: float
    ratio: float
    matched: bool
    diff: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class Comparison:
    """Everything `compare_runs` found; `to_json()` is what `compare.json` holds."""

    runs: list[RunSummary]
    tests: list[PairedTest]
    budget_matches: list[BudgetMatch]
    correction: str
    pairs: str
    budget_tolerance: float
    seed: int
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists; each run's metrics as its eval.json holds them)."""
        return json.loads(json.dumps(asdict(self), default=_metric_json))


def _metric_json(m: object) -> object:
    if isinstance(m, Metric):
        return m.model_dump(exclude_unset=True)
    raise TypeError(f"{type(m).__name__} is not JSON serializable")


def budget_ratio(tokens_a: float, tokens_b: float) -> float:
    """max / min of two token budgets (1.0 = equal; inf when exactly one is 0).

    >>> round(budget_ratio(118.0, 121.0), 4), budget_ratio(30.0, 90.0)
    (1.0254, 3.0)
    """
    lo, hi = sorted((float(tokens_a), float(tokens_b)))
    if hi == 0.0:
        return 1.0
    return math.inf if lo == 0.0 else hi / lo


def sign_flip_pvalue(diffs: npt.ArrayLike, *, seed: int = 0) -> float:
    """Two-sided paired sign-flip permutation test that the mean difference is 0: with S = sum_i d_i,
    p = P(|sum_i s_i |d_i|| >= |S|) over uniform random signs s_i (zeros dropped). Exact over all 2^m
    patterns for m <= 16 nonzero differences, else 10,000 seeded draws, p = (1 + hits) / (1 + draws).
    On 0/1 outcomes this is the exact McNemar (sign) test.

    >>> sign_flip_pvalue([1, 1, 1, 0, 0])  # 2 of the 8 sign patterns reach |S| = 3
    0.25
    >>> sign_flip_pvalue([0.5, -0.25, 0.0])  # |+-0.5 +-0.25| >= 0.25 always
    1.0
    """
    d = np.asarray(diffs, dtype=np.float64).ravel()
    d = np.abs(d[d != 0.0])  # (m,)
    if d.size == 0:
        return 1.0
    observed = abs(float(np.asarray(diffs, dtype=np.float64).sum()))
    tol = 1e-9 * max(1.0, float(d.sum()))
    if d.size <= _EXACT_SIGN_FLIP_MAX:
        bits = (np.arange(2**d.size)[:, None] >> np.arange(d.size)[None, :]) & 1  # (2^m, m)
        sums = np.abs((1 - 2 * bits) @ d)  # (2^m,)
        return float(np.mean(sums >= observed - tol))
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(_SIGN_FLIP_DRAWS, d.size))  # (D, m)
    hits = int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
    return (1 + hits) / (1 + _SIGN_FLIP_DRAWS)


def _names(paths: list[Path]) -> list[str]:
    """Folder names, or longer path tails where names repeat."""
    for depth in range(1, 8):
        names = ["/".join(p.resolve().parts[-depth:]) for p in paths]
        if len(set(names)) == len(names):
            return names
    return [f"{i}:{p}" for i, p in enumerate(paths)]


def _summary(name: str, path: Path, e: EvalResult) -> RunSummary:
    try:
        judged = read_judge(path) if path.is_dir() else None
    except RunFileError as err:
        raise CompareError(str(err)) from None
    return RunSummary(
        name=name,
        path=str(path),
        **e.model_dump(include={"model", "task", "preset", "split", "data_hash"}),
        n_problems=e.n_problems if e.n_problems is not None else len(e.per_problem),
        n_samples=e.n_samples or 0,
        tokens_per_sample=e.tokens_per_sample or 0.0,
        metrics=dict(e.metrics),
        judge=judged.categories if judged else None,
        judge_model=judged.model if judged else None,
    )


def _check_compatible(runs: list[RunSummary]) -> list[str]:
    """Raise on a task, preset or split mismatch; return warnings (data hash differs)."""
    base = runs[0]
    for r in runs[1:]:
        for attr in ("task", "preset", "split"):
            if getattr(r, attr) != getattr(base, attr):
                raise CompareError(
                    f"{r.name} was evaluated on {attr} {getattr(r, attr)!r}, {base.name} on "
                    f"{getattr(base, attr)!r}; only evaluations of the same task, preset and split compare"
                )
    return [
        f"data_hash differs: {base.name} {base.data_hash} vs {r.name} {r.data_hash}; paired on shared ids"
        for r in runs[1:]
        if r.data_hash != base.data_hash
    ]


Rows = list[ProblemResult]
Array = npt.NDArray[np.float64]


def _shared(ea: EvalResult, eb: EvalResult, na: str, nb: str) -> tuple[Rows, Rows, list[str]]:
    """Per-problem rows of a and b on their shared ids (in a's order), and warnings."""
    pb = {r.id: r for r in eb.per_problem}
    rows_a = [r for r in ea.per_problem if r.id in pb]
    if not rows_a:
        raise CompareError(f"{na} and {nb} share no problems (problem ids do not overlap)")
    rows_b = [pb[r.id] for r in rows_a]
    notes = []
    if len(rows_a) < max(len(ea.per_problem), len(eb.per_problem)):
        notes.append(
            f"{na} vs {nb}: paired on {len(rows_a)} shared problems "
            f"({len(ea.per_problem)} and {len(eb.per_problem)} evaluated)"
        )
    return rows_a, rows_b, notes


def _pass_ks(metrics: Mapping[str, object]) -> list[int]:
    return sorted(int(m.group(1)) for name in metrics if (m := _PASS_RE.match(name)))


def _per_problem_pass(rows: Rows, k: int) -> npt.NDArray[np.float64]:
    """Unbiased pass@k of each problem, shape (P,)."""
    n = np.array([r.n for r in rows], dtype=np.int64)
    c = np.array([r.correct for r in rows], dtype=np.int64)
    return pass_at_k_array(n, c, k)


def _mean_tokens(rows: Rows) -> float:
    return float(np.mean([r.tokens for r in rows]))


def paired_tests(
    pass1: tuple[npt.ArrayLike, npt.ArrayLike],
    greedy: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    *,
    names: tuple[str, str] = ("a", "b"),
    seed: int = 0,
    n_resamples: int = 2000,
) -> list[PairedTest]:
    """Paired tests of arm `b` against arm `a` on the same P problems, arrays `(P,)` in one order:
    `pass@1` (per-problem sampled pass@1: bootstrap CI of the mean difference, sign-flip p) and, when
    given, `greedy` (0/1 correctness: bootstrap CI, McNemar p, `detail` = {b01, b10}). The p-values are
    raw and the token budgets NaN: the caller adjusts the family and fills them.

    >>> p1, g = paired_tests(([0, 0, 0.5, 1], [1, 0.5, 0.5, 1]), ([0, 0, 0, 1], [1, 1, 1, 1]))
    >>> p1.diff, p1.pvalue  # d = [1, .5, 0, 0]: 2 of the 4 sign patterns of (1, .5) reach |S| = 1.5
    (0.375, 0.5)
    >>> g.diff, g.pvalue, g.detail  # b01 = 3, b10 = 0: exact McNemar p = 2 / 2^3
    (0.75, 0.25, {'b01': 3, 'b10': 0})
    """
    na, nb = names

    def paired(
        metric: str, a: Array, b: Array, test: str, pvalue: float, detail: Discordant | None = None
    ) -> PairedTest:
        diff, low, high = paired_diff_ci(a, b, n_resamples=n_resamples, seed=seed)
        means = float(a.mean()), float(b.mean())
        return PairedTest(
            na, nb, metric, len(a), *means, diff, (low, high), test, pvalue, detail=detail or Discordant()
        )

    pa, pb = np.asarray(pass1[0], dtype=np.float64), np.asarray(pass1[1], dtype=np.float64)  # (P,)
    out = [paired("pass@1", pa, pb, "sign-flip permutation", sign_flip_pvalue(pb - pa, seed=seed))]
    if greedy is not None:
        ga, gb = np.asarray(greedy[0], dtype=bool), np.asarray(greedy[1], dtype=bool)  # (P,)
        m = mcnemar(ga.tolist(), gb.tolist())
        test = "McNemar" + (" exact" if m.exact else " chi2")
        out.append(
            paired("greedy", ga.astype(float), gb.astype(float), test, m.pvalue, Discordant(b01=m.b01, b10=m.b10))
        )
    return out


def _greedy_tokens(e: EvalResult) -> float:
    m = e.metrics.get("greedy")
    return math.nan if m is None or m.tokens_per_problem is None else float(m.tokens_per_problem)


def _headline_tests(
    names: tuple[str, str], e: tuple[EvalResult, EvalResult], rows: tuple[Rows, Rows], tol: float, seed: int, nres: int
) -> list[PairedTest]:
    """`paired_tests` of one pair's sampled pass@1 and greedy, with their token budgets; p-values not yet adjusted."""
    (ea, eb), (ra, rb) = e, rows
    greedy = None
    if all(r.greedy is not None for r in (*ra, *rb)):
        greedy = ([bool(r.greedy) for r in ra], [bool(r.greedy) for r in rb])
    pass1 = (_per_problem_pass(ra, 1), _per_problem_pass(rb, 1))
    tokens = {
        "pass@1": (_mean_tokens(ra), _mean_tokens(rb)),
        "greedy": tuple(_greedy_tokens(x) for x in (ea, eb)),
    }
    out = []
    for t in paired_tests(pass1, greedy, names=names, seed=seed, n_resamples=nres):
        ta, tb = tokens[t.metric]
        ratio = math.nan if math.isnan(ta) or math.isnan(tb) else budget_ratio(ta, tb)
        out.append(replace(t, tokens_a=ta, tokens_b=tb, budget_ratio=ratio, budget_matched=bool(ratio <= 1 + tol)))
    return out


def _budget_matches(
    names: tuple[str, str], e: tuple[EvalResult, EvalResult], rows: tuple[Rows, Rows], tol: float, seed: int, nres: int
) -> list[BudgetMatch]:
    """For each reported pass@k of either run, the other run's pass@k' with the closest budget (docs/
    evaluation.md, "Budgets"); a pair found from both sides is listed once, ordered by A's k, then B's."""
    (na, nb), (ea, eb), (ra, rb) = names, e, rows
    n_a, n_b = min(r.n for r in ra), min(r.n for r in rb)
    ta, tb = _mean_tokens(ra), _mean_tokens(rb)

    def closest(k: int, t_from: float, n_to: int, t_to: float) -> int:
        return min(range(1, n_to + 1), key=lambda j: (abs(math.log(max(j * t_to, 1e-9) / max(k * t_from, 1e-9))), j))

    found = {(k, closest(k, ta, n_b, tb)) for k in _pass_ks(ea.metrics) if k <= n_a}
    found |= {(closest(k, tb, n_a, ta), k) for k in _pass_ks(eb.metrics) if k <= n_b}
    out = []
    for ka, kb in sorted(found):
        va, vb = _per_problem_pass(ra, ka), _per_problem_pass(rb, kb)
        diff, low, high = paired_diff_ci(va, vb, n_resamples=nres, seed=seed)
        ratio = budget_ratio(ka * ta, kb * tb)
        out.append(
            BudgetMatch(
                a=na,
                b=nb,
                metric_a=f"pass@{ka}",
                metric_b=f"pass@{kb}",
                tokens_a=ka * ta,
                tokens_b=kb * tb,
                value_a=float(va.mean()),
                value_b=float(vb.mean()),
                ratio=ratio,
                matched=ratio <= 1 + tol,
                diff=diff,
                ci=(low, high),
            )
        )
    return out


def compare_runs(
    paths: list[Path],
    *,
    correction: Correction = "holm",
    pairs: Pairs = "baseline",
    seed: int = 0,
    budget_tolerance: float = 0.1,
    ci_resamples: int = 2000,
    out: Path | None = None,
) -> Comparison:
    """Compare evaluation folders; the first is the baseline. Writes `out/compare.json` when `out`.

    Raises CompareError for fewer than two runs, an unreadable eval.json, a different task, preset
    or split, or a pair with no shared problem ids. A differing data_hash or a partial overlap is a
    warning (`warnings.warn` and `Comparison.warnings`).
    """
    if correction not in ("holm", "bonferroni"):
        raise CompareError(f"correction must be holm or bonferroni, got {correction!r}")
    if pairs not in ("baseline", "all"):
        raise CompareError(f"pairs must be 'baseline' or 'all', got {pairs!r}")
    if not budget_tolerance >= 0 or budget_tolerance == math.inf:  # NaN fails every comparison
        raise CompareError(f"--budget-tolerance: expected a finite number >= 0, got {budget_tolerance}")
    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise CompareError(f"compare needs at least two evaluation folders, got {len(paths)}")
    try:
        evals = [read_eval(p) for p in paths]
    except RunFileError as e:
        raise CompareError(str(e)) from None
    names = _names(paths)
    runs = [_summary(n, p, e) for n, p, e in zip(names, paths, evals, strict=True)]
    notes = _check_compatible(runs)
    index_pairs = (
        [(0, j) for j in range(1, len(runs))]
        if pairs == "baseline"
        else list(itertools.combinations(range(len(runs)), 2))
    )
    tests: list[PairedTest] = []
    matches: list[BudgetMatch] = []
    for i, j in index_pairs:
        rows_a, rows_b, shared_notes = _shared(evals[i], evals[j], names[i], names[j])
        notes += shared_notes
        nm, rows = (names[i], names[j]), (rows_a, rows_b)
        tests += _headline_tests(nm, (evals[i], evals[j]), rows, budget_tolerance, seed, ci_resamples)
        matches += _budget_matches(nm, (evals[i], evals[j]), rows, budget_tolerance, seed, ci_resamples)
    adjusted = adjust_pvalues([t.pvalue for t in tests], correction)
    tests = [replace(t, pvalue_adj=p) for t, p in zip(tests, adjusted, strict=True)]
    for note in notes:
        warnings.warn(note, stacklevel=2)
    result = Comparison(runs, tests, matches, correction, pairs, budget_tolerance, seed, notes)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        write_json(Path(out) / "compare.json", result.to_json())
    return result


def _diff_cells(a: float, b: float, diff: float, ci: tuple[float, float]) -> tuple[str, ...]:
    """The A, B, B-A and 95% CI cells of a paired row."""
    return f"{a:.3f}", f"{b:.3f}", f"{diff:+.3f}", f"{ci[0]:+.3f}..{ci[1]:+.3f}"


def _budget(matched: bool, ratio: float) -> str:
    return "ok" if matched else f"NO {ratio:.2f}x"


def comparison_tables(c: Comparison) -> list[Any]:
    """Rich tables: the runs' metrics, then per pair its paired tests and its budget-matched pass@k."""
    from rich import box
    from rich.table import Table

    def table(title: str, cols: tuple[str, ...]) -> Table:
        return Table(*cols, title=title, box=box.SIMPLE_HEAD, title_justify="left", collapse_padding=True)

    runs = table("Runs: each metric on the run's own problems", ("run", "metric", "value", "95% CI", "tok/problem"))
    for r in c.runs:
        for name, v in r.metrics.items():
            lo, hi = v.ci or (None, None)
            runs.add_row(r.name, name, f"{v.value:.3f}", f"{lo:.3f}..{hi:.3f}", f"{v.tokens_per_problem:.1f}")
    out = [runs]
    for a, b in dict.fromkeys((t.a, t.b) for t in c.tests):
        tests = [t for t in c.tests if (t.a, t.b) == (a, b)]
        pt = table(
            f"B = {b} vs A = {a}: paired on {tests[0].n_problems} shared problems",
            ("metric", "A", "B", "B-A", "95% CI", "p", "p adj", "budget"),
        )
        for t in tests:
            pt.add_row(
                t.metric,
                *_diff_cells(t.value_a, t.value_b, t.diff, t.ci),
                f"{t.pvalue:.3g}",
                f"{t.pvalue_adj:.3g}",
                _budget(t.budget_matched, t.budget_ratio),
            )
        bt = table(
            f"B = {b} vs A = {a}: pass@k at the closest token budgets",
            ("A", "tok", "B", "tok", "A", "B", "B-A", "95% CI", "budget"),
        )
        for m in (m for m in c.budget_matches if (m.a, m.b) == (a, b)):
            bt.add_row(
                m.metric_a,
                f"{m.tokens_a:.1f}",
                m.metric_b,
                f"{m.tokens_b:.1f}",
                *_diff_cells(m.value_a, m.value_b, m.diff, m.ci),
                _budget(m.matched, m.ratio),
            )
        out += [pt, bt]
    judged = [r for r in c.runs if r.judge is not None]
    if judged:
        jt = table(
            "Error categories of wrong completions (LLM judge, `rlvr judge`)",
            ("category", *(f"{r.name} ({r.judge_model})" for r in judged)),
        )
        for cat in dict.fromkeys(k for r in judged for k in r.judge or {}):
            jt.add_row(cat, *(str((r.judge or {}).get(cat, 0)) for r in judged))
        out.append(jt)
    return out


def render_comparison(c: Comparison, console: Any) -> None:
    """Print to a rich Console: the tables, a line per budget-matched pair at different k, a
    line per headline test that is not budget-matched, then the warnings."""
    for table in comparison_tables(c):
        console.print(table)
    console.print(
        f"p: sign-flip permutation (pass@1), McNemar (greedy); p adj: {c.correction} over all {len(c.tests)} "
        f"tests; budget ok: token ratio <= {1 + c.budget_tolerance:.2f}",
        highlight=False,
    )
    for m in c.budget_matches:
        if m.matched and m.metric_a != m.metric_b:
            console.print(
                f"budget-matched: {m.metric_a} of {m.a} ({m.tokens_a:.0f} tokens/problem) vs {m.metric_b} of {m.b} "
                f"({m.tokens_b:.0f} tokens/problem): {m.value_a:.3f} vs {m.value_b:.3f}",
                highlight=False,
            )
    for t in c.tests:
        if not t.budget_matched:
            console.print(
                f"not budget-matched: {t.metric} of {t.b} uses {t.tokens_b / max(t.tokens_a, 1e-9):.2f}x the tokens "
                f"of {t.a} ({t.tokens_b:.0f} vs {t.tokens_a:.0f} per problem); read the budget-matched rows",
                highlight=False,
            )
    for w in c.warnings:
        console.print(f"warning: {w}", highlight=False)


def format_comparison(c: Comparison, width: int = 160) -> str:
    """`render_comparison` as plain text (no colour), `width` columns wide."""
    from rich.console import Console

    buf = io.StringIO()
    render_comparison(c, Console(file=buf, width=width, color_system=None, force_terminal=False))
    return buf.getvalue()
