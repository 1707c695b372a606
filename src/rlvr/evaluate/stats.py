"""Statistics for comparing evaluations: bootstrap intervals, McNemar's test, multiplicity, kappa.

Pure functions over per-problem numbers (numpy + scipy). Randomness only ever comes from a local
`np.random.default_rng(seed)`; the global numpy RNG is never read or reseeded.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = [
    "Correction",
    "McNemarResult",
    "adjust_pvalues",
    "bonferroni",
    "bootstrap_ci",
    "cohen_kappa",
    "holm",
    "mcnemar",
    "paired_diff_ci",
]

# scipy >= 1.15 takes the generator as `rng`; older releases (we allow >= 1.11) as `random_state`.
_RNG_KWARG = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
_BOOTSTRAP_BATCH_ELEMENTS = 4_000_000  # resampled values held at once (index matrix + data)
_MCNEMAR_EXACT_BELOW = 25  # discordant pairs under which the exact binomial test is used

Correction = Literal["holm", "bonferroni"]


def bootstrap_ci(
    values: npt.ArrayLike,
    statistic: Callable[..., Any] = np.mean,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    paired_with: npt.ArrayLike | None = None,
    method: Literal["percentile", "BCa"] = "percentile",
) -> tuple[float, float]:
    """Bootstrap confidence interval `(low, high)` for `statistic` of 1-D `values`, shape `(N,)`.

    The percentile (or `"BCa"`) interval of `n_resamples` resamples with replacement, through
    `scipy.stats.bootstrap` with `np.random.default_rng(seed)`, vectorised when `statistic` accepts
    `axis`, in batches of at most ~4M resampled values. With `paired_with` (same length) items are
    resampled jointly and the interval is for `statistic(paired_with) - statistic(values)`. Fewer than
    two items or a constant bootstrap distribution give `(s, s)` for the point estimate s; a BCa
    interval scipy cannot form falls back to percentile.

    >>> low, high = bootstrap_ci([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], seed=0)
    >>> bool(low < 0.7 < high), (low, high) == bootstrap_ci([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], seed=0)
    (True, True)
    """
    _check_bootstrap_args(confidence, n_resamples, method)
    x = _as_1d(values, "values")
    vectorized = _accepts_axis(statistic)
    data, stat, point = _bootstrap_target(x, paired_with, statistic, vectorized)
    if x.size < 2:
        return point, point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", category=RuntimeWarning)
        res = stats.bootstrap(
            data,
            stat,
            n_resamples=n_resamples,
            batch=max(1, _BOOTSTRAP_BATCH_ELEMENTS // x.size),
            vectorized=vectorized,
            paired=paired_with is not None,
            confidence_level=confidence,
            method=method,
            **{_RNG_KWARG: np.random.default_rng(seed)},
        )
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    if np.ptp(dist) == 0.0:
        return point, point
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):  # BCa undefined (e.g. zero acceleration denominator)
        alpha = (1.0 - confidence) / 2.0
        low, high = (float(q) for q in np.percentile(dist, [100 * alpha, 100 * (1 - alpha)]))
    return low, high


def _check_bootstrap_args(confidence: float, n_resamples: int, method: str) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if method not in ("percentile", "BCa"):
        raise ValueError(f"method must be 'percentile' or 'BCa', got {method!r}")


def _bootstrap_target(
    x: np.ndarray, paired_with: npt.ArrayLike | None, statistic: Callable[..., Any], vectorized: bool
) -> tuple[tuple[np.ndarray, ...], Callable[..., Any], float]:
    """The data tuple, the statistic scipy resamples, and the point estimate: `statistic(x)`, or
    `statistic(y) - statistic(x)` with items of x and y resampled jointly when paired."""
    if paired_with is None:
        return (x,), statistic, float(statistic(x))
    y = _as_1d(paired_with, "paired_with")
    if y.shape != x.shape:
        raise ValueError(f"paired_with has {y.size} items, values has {x.size}")
    stat: Callable[..., Any]
    if vectorized:
        stat = lambda a, b, axis=-1: statistic(b, axis=axis) - statistic(a, axis=axis)  # noqa: E731
    else:
        stat = lambda a, b: statistic(b) - statistic(a)  # noqa: E731
    return (x, y), stat, float(statistic(y) - statistic(x))


def paired_diff_ci(
    a: Sequence[float] | npt.ArrayLike,
    b: Sequence[float] | npt.ArrayLike,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    method: Literal["percentile", "BCa"] = "percentile",
) -> tuple[float, float, float]:
    """Mean per-problem difference `b - a` with its bootstrap interval: `(mean_diff, low, high)`.

    d_i = b_i - a_i for paired scores on the same N problems (e.g. 0/1 correctness or pass@k of
    two checkpoints); mean_diff = mean(d), interval from `bootstrap_ci(d, np.mean, ...)`.

    >>> diff, low, high = paired_diff_ci([0, 0, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 0, 1, 1])
    >>> diff, bool(low <= diff <= high)
    (0.375, True)
    """
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a has {x.size} items, b has {y.size}")
    d = y - x
    low, high = bootstrap_ci(d, np.mean, confidence, n_resamples, seed, method=method)
    return float(d.mean()), low, high


@dataclass(frozen=True)
class McNemarResult:
    """Outcome of `mcnemar`.

    `b01`: items a got wrong and b right; `b10`: a right, b wrong. `statistic` is min(b01, b10)
    for the exact test, the continuity-corrected chi-square value otherwise. `exact` says which.
    """

    statistic: float
    pvalue: float
    b01: int
    b10: int
    exact: bool


def mcnemar(a: Sequence[bool], b: Sequence[bool], exact: bool | None = None) -> McNemarResult:
    """McNemar's test that two systems have the same accuracy on the same items (two-sided).

    Only discordant items count: b01 (a wrong, b right) and b10 (a right, b wrong), m = b01+b10.
    Exact (default when m < 25, or `exact=True`): binomial test of min(b01, b10) ~ Bin(m, 1/2),
    via `scipy.stats.binomtest`. Otherwise chi2 = (|b01 - b10| - 1)^2 / m with Edwards'
    continuity correction (as R and statsmodels), p = P(chi2_1 >= chi2). m = 0 gives p = 1.

    >>> r = mcnemar([1, 1, 0, 0, 1, 0, 1, 1, 0, 1], [1, 1, 1, 1, 1, 1, 0, 1, 0, 1])
    >>> r.b01, r.b10, r.exact, r.statistic, round(r.pvalue, 4)  # 2 * (C(4,0) + C(4,1)) / 2^4
    (3, 1, True, 1.0, 0.625)
    """
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"a and b must be 1-D of equal length, got shapes {x.shape} and {y.shape}")
    b01 = int(np.count_nonzero(~x & y))
    b10 = int(np.count_nonzero(x & ~y))
    m = b01 + b10
    use_exact = m < _MCNEMAR_EXACT_BELOW if exact is None else bool(exact)
    if m == 0:
        return McNemarResult(0.0, 1.0, b01, b10, use_exact)
    if use_exact:
        pvalue = stats.binomtest(min(b01, b10), m, 0.5, alternative="two-sided").pvalue
        return McNemarResult(float(min(b01, b10)), float(pvalue), b01, b10, True)
    chi2 = (abs(b01 - b10) - 1.0) ** 2 / m
    return McNemarResult(float(chi2), float(stats.chi2.sf(chi2, df=1)), b01, b10, False)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error control), in the input order.

    Sort p ascending p_(1) <= ... <= p_(m); adjusted p_(i) = min(1, max_{j<=i} (m - j + 1) p_(j)),
    which is monotone in i. Reject hypothesis i at level alpha iff its adjusted p <= alpha.

    >>> [round(p, 6) for p in holm([0.01, 0.04, 0.03, 0.005])]
    [0.03, 0.06, 0.06, 0.02]
    """
    p = _as_pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(v) for v in adjusted]


def bonferroni(pvalues: Sequence[float]) -> list[float]:
    """Bonferroni adjusted p-values: min(1, m * p_i) for m hypotheses, in the input order.

    >>> [round(p, 6) for p in bonferroni([0.01, 0.04, 0.03, 0.005, 0.5])]
    [0.05, 0.2, 0.15, 0.025, 1.0]
    """
    p = _as_pvalues(pvalues)
    return [float(v) for v in np.minimum(p * p.size, 1.0)]


def adjust_pvalues(pvalues: Sequence[float], correction: Correction) -> list[float]:
    """The family's p-values adjusted for multiple comparisons by `holm` or `bonferroni`.

    >>> adjust_pvalues([0.01, 0.04], "holm"), adjust_pvalues([0.01, 0.04], "bonferroni")
    ([0.02, 0.04], [0.02, 0.08])
    """
    if correction not in ("holm", "bonferroni"):
        raise ValueError(f"correction must be one of holm, bonferroni, got {correction!r}")
    return holm(pvalues) if correction == "holm" else bonferroni(pvalues)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters' labels on the same items (e.g. a person vs a verifier).

    kappa = (p_o - p_e) / (1 - p_e), with observed agreement p_o = mean(a_i == b_i) and chance
    agreement p_e = sum_l P_a(l) P_b(l) from each rater's label frequencies; computed in integer
    counts, so exact. Degenerate case p_e = 1 (both raters always give the same single label):
    kappa is 0/0, and we return 1.0 when p_o = 1 (always so in that case), else 0.0.

    >>> a = ["y"] * 25 + ["n"] * 25  # 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no
    >>> b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    >>> round(cohen_kappa(a, b), 10)  # p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5
    0.4
    """
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"a and b must be non-empty and of equal length, got {len(a)} and {len(b)}")
    n = len(a)
    agree = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(c * count_b.get(label, 0) for label, c in count_a.items())  # n^2 * p_e
    denominator = n * n - expected
    if denominator == 0:
        return 1.0 if agree == n else 0.0
    return (n * agree - expected) / denominator


def _as_1d(values: npt.ArrayLike, name: str) -> npt.NDArray[np.float64]:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {x.shape}")
    return x


def _as_pvalues(pvalues: Sequence[float]) -> npt.NDArray[np.float64]:
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    if np.any(~((p >= 0.0) & (p <= 1.0))):
        raise ValueError("p-values must lie in [0, 1]")
    return p


def _accepts_axis(statistic: Callable[..., Any]) -> bool:
    try:
        return "axis" in inspect.signature(statistic).parameters
    except (TypeError, ValueError):  # some builtins have no signature
        return False
