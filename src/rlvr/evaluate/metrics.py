"""Sampling metrics for evaluation: unbiased pass@k, majority vote, exact maj@k, and a budget summary.

Pure functions of per-sample correctness flags and canonical answer strings (numpy + scipy, no torch,
no global RNG). Shapes: `P` problems, `n` samples per problem. `summarize` puts every metric next to
the tokens it costs (`tokens@k`). docs/evaluation.md ("Metrics") explains each.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view
from scipy.special import comb, gammaln

__all__ = ["pass_at_k", "pass_at_k_array", "majority_vote", "maj_at_k", "maj_at_ks", "summarize"]

FloatArray = npt.NDArray[np.float64]
# gold's count, the sorted counts of the answers first seen before gold, of those after it, and None's
Counts = tuple[int, tuple[int, ...], tuple[int, ...], int]

# maj@k falls back to Monte-Carlo when the exact count would overflow float64 (log C(n, k) above
# this) or the dynamic programme would do more multiply-adds than _MAJ_EXACT_MAX_WORK. With the
# usual n <= 256 samples neither triggers; the fallback's standard error is <= 0.5/sqrt(draws).
_MAJ_EXACT_MAX_LOG_COUNT = 700.0
_MAJ_EXACT_MAX_WORK = 50_000_000
_MAJ_MC_DRAWS = 20_000


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of Chen et al. 2021 for one problem with `c` correct of `n` samples.

    pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i): the probability that a
    uniformly random k-subset of the n samples holds at least one correct sample. The product form
    never builds large binomials. Raises ValueError when k < 1, k > n, or c is outside [0, n].

    >>> round(pass_at_k(10, 3, 2), 4)  # 1 - C(7,2)/C(10,2) = 1 - 21/45
    0.5333
    >>> pass_at_k(10, 0, 5), pass_at_k(10, 8, 5)  # no correct sample; fewer than k wrong ones
    (0.0, 1.0)
    """
    n, c, k = operator.index(n), operator.index(c), operator.index(k)
    if k < 1 or k > n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k={k}, n={n}")
    if c < 0 or c > n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def pass_at_k_array(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray:
    """`pass_at_k` over many problems at once; `n` and `c` broadcast together, e.g. `(P,)`.

    Same product, taken as a sum of log1p(-k/i) per problem (one `np.add.reduceat` over the
    concatenated factors, so memory is sum(c), the size of the correctness matrix) and returned as
    -expm1(sum). Agrees with the scalar to well under 1e-12.

    >>> pass_at_k_array(10, np.array([0, 3, 9]), 2).round(4)
    array([0.    , 0.5333, 1.    ])
    """
    k = operator.index(k)
    n_arr, c_arr = np.broadcast_arrays(np.asarray(n), np.asarray(c))
    if not (np.issubdtype(n_arr.dtype, np.integer) and np.issubdtype(c_arr.dtype, np.integer)):
        raise ValueError(f"n and c must be integer arrays, got {n_arr.dtype} and {c_arr.dtype}")
    if k < 1 or np.any(n_arr < k):
        raise ValueError(f"pass@k needs 1 <= k <= n for every problem, got k={k}")
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("pass@k needs 0 <= c <= n for every problem")
    nf = n_arr.ravel().astype(np.int64)
    cf = c_arr.ravel().astype(np.int64)
    out = np.ones(nf.shape, dtype=np.float64)  # n - c < k: every k-subset holds a correct sample
    open_ = nf - cf >= k
    out[open_ & (cf == 0)] = 0.0
    idx = np.flatnonzero(open_ & (cf > 0))
    if idx.size:
        lengths = cf[idx]
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        # i runs over n-c+1 .. n for each problem, all problems concatenated; i > k here.
        i = np.repeat(nf[idx] - lengths + 1 - offsets, lengths) + np.arange(int(lengths.sum()))
        out[idx] = -np.expm1(np.add.reduceat(np.log1p(-k / i), offsets))
    return out.reshape(n_arr.shape)


def majority_vote(answers: Sequence[str | None]) -> str | None:
    """Most frequent non-None answer (None never wins; all-None gives None); among answers tied for the
    top count the first to appear wins, so the vote does not depend on hashing.

    >>> majority_vote(["7", None, "5", "5", "7", None, None])  # "7" and "5" tie; "7" came first
    '7'
    >>> majority_vote([None, None]) is None
    True
    """
    counts = Counter(a for a in answers if a is not None)  # insertion order = first-occurrence order
    if not counts:
        return None
    return max(counts, key=counts.__getitem__)  # max keeps the first of equal keys


def maj_at_k(answers: Sequence[str | None], gold: str, k: int, *, seed: int = 0) -> float:
    """Expected maj@k: P(majority vote of a uniformly random k-subset of the samples == gold).

    `answers` are canonical strings compared with `==`; None samples count toward k but never win;
    tied answers rank by first occurrence in `answers` (so maj@n is `majority_vote(answers) == gold`).
    Exact (`maj_at_ks`); `seed` only feeds the Monte-Carlo fallback for very large n.

    >>> round(maj_at_k(["4", "4", "5", None], "4", 2), 4)  # 5 of the 6 pairs vote "4"
    0.8333
    >>> round(maj_at_k(["4", "4", "5", None], "5", 2), 4)  # only {"5", None}
    0.1667
    """
    return float(maj_at_ks(answers, gold, [k], seed=seed)[0])


def maj_at_ks(answers: Sequence[str | None], gold: str, ks: Sequence[int], *, seed: int = 0) -> FloatArray:
    """`maj_at_k` for several k at once, shape `(len(ks),)`; one dynamic programme serves all k.

    Let gold have count g, answers ranked before it (first occurrence) counts h_j, after it l_j,
    and u None samples. Gold wins a subset with t >= 1 gold samples iff every earlier answer has
    < t and every later one <= t samples in it, so

        maj@k = sum_t C(g, t) [z^(k-t)] prod_j H_j^t(z) prod_j L_j^t(z) (1+z)^u / C(n, k),

    with H_j^t = sum_{x<t} C(h_j, x) z^x and L_j^t = sum_{x<=t} C(l_j, x) z^x: the multivariate
    hypergeometric law of the subset's answer counts, summed exactly over all count vectors. The
    cost is about min(g, K) * K * n multiply-adds for K = max(ks). Beyond float64 range or
    5e7 multiply-adds it falls back to Monte-Carlo with `np.random.default_rng(seed)` and 20,000
    draws per k (standard error <= 0.0035).

    >>> maj_at_ks(["a", "b", "a"], "a", [1, 2, 3]).round(4)
    array([0.6667, 1.    , 1.    ])
    """
    n = len(answers)
    ks = [operator.index(k) for k in ks]
    if not ks or any(k < 1 or k > n for k in ks):
        raise ValueError(f"maj@k needs non-empty ks with 1 <= k <= n={n}, got ks={ks}")
    return _maj_from_counts(_priority_counts(answers, gold), tuple(ks), seed)


def summarize(
    correct: npt.ArrayLike,
    tokens: npt.ArrayLike,
    ks: Sequence[int],
    answers: Sequence[Sequence[str | None]] | None = None,
    golds: Sequence[str] | None = None,
    *,
    seed: int = 0,
) -> dict[str, float | int]:
    """Mean pass@k (and maj@k when `answers` and `golds` are given) over problems, per k.

    `correct` `(P, n)` bool and `tokens` `(P, n)` int are per sample; `answers[p][i]` is sample
    i's canonical answer to problem p and `golds[p]` its gold. Keys: `n_problems`, `n_samples`,
    `tokens_per_sample`, and for each k `pass@k`, `maj@k` and `tokens@k` = k * mean tokens per
    sample, the expected tokens one problem costs under pass@k or maj@k. Values are plain
    floats/ints, ready for JSON; prefix them (`eval/<split>/`) when logging.

    >>> s = summarize([[True, False], [False, False]], [[10, 30], [20, 20]], [1, 2],
    ...               answers=[["3", "4"], ["5", None]], golds=["3", "6"])
    >>> s["pass@1"], s["pass@2"], s["maj@2"], s["tokens@2"]
    (0.25, 0.5, 0.5, 40.0)
    """
    correct_arr = np.asarray(correct, dtype=bool)  # (P, n)
    tokens_arr = np.asarray(tokens)  # (P, n)
    if correct_arr.ndim != 2 or correct_arr.shape[0] == 0 or correct_arr.shape[1] == 0:
        raise ValueError(f"correct must be a non-empty (P, n) array, got shape {correct_arr.shape}")
    if tokens_arr.shape != correct_arr.shape:
        raise ValueError(f"tokens shape {tokens_arr.shape} != correct shape {correct_arr.shape}")
    n_problems, n = correct_arr.shape
    ks = sorted({operator.index(k) for k in ks})
    if not ks or ks[0] < 1 or ks[-1] > n:
        raise ValueError(f"ks must be non-empty with 1 <= k <= n={n}, got {ks}")
    mean_tokens = float(tokens_arr.mean())
    out: dict[str, float | int] = {"n_problems": n_problems, "n_samples": n, "tokens_per_sample": mean_tokens}
    n_correct = correct_arr.sum(axis=1)  # (P,)
    for k in ks:
        out[f"pass@{k}"] = float(pass_at_k_array(n, n_correct, k).mean())
        out[f"tokens@{k}"] = k * mean_tokens
    if answers is not None:
        for k, value in zip(ks, _mean_maj(answers, golds, n_problems, n, ks, seed), strict=True):
            out[f"maj@{k}"] = float(value)
    return out


def _mean_maj(
    answers: Sequence[Sequence[str | None]],
    golds: Sequence[str] | None,
    n_problems: int,
    n: int,
    ks: list[int],
    seed: int,
) -> FloatArray:
    """Mean over problems of `maj_at_ks`, shape `(len(ks),)`; problems with equal counts share work."""
    if golds is None or len(golds) != n_problems or len(answers) != n_problems:
        raise ValueError("maj@k needs `answers` and `golds` with one entry per problem")
    cache: dict[Counts, FloatArray] = {}
    pascal = _pascal(n, ks[-1]) if n * ks[-1] <= 4_000_000 else None  # shared by all problems
    total = np.zeros(len(ks), dtype=np.float64)
    for row, gold in zip(answers, golds, strict=True):
        if len(row) != n:
            raise ValueError(f"every answers row needs n={n} entries, got {len(row)}")
        key = _priority_counts(row, gold)
        if key not in cache:
            cache[key] = _maj_from_counts(key, tuple(ks), seed, pascal)
        total += cache[key]
    return total / n_problems


def _priority_counts(answers: Sequence[str | None], gold: str) -> Counts:
    """The `Counts` of `answers`: only these multisets matter for gold's win probability, so they double
    as a cache key."""
    counts = Counter(a for a in answers if a is not None)  # in first-occurrence order
    n_none = sum(a is None for a in answers)
    order = list(counts)
    if gold not in counts:
        return 0, (), tuple(sorted(counts.values())), n_none
    g = order.index(gold)
    higher = tuple(sorted(counts[a] for a in order[:g]))
    lower = tuple(sorted(counts[a] for a in order[g + 1 :]))
    return counts[gold], higher, lower, n_none


def _pascal(n: int, k_max: int) -> FloatArray:
    """Binomial table `(n+1, k_max+1)`: `[m, x] = C(m, x)` (0 where x > m)."""
    return comb(np.arange(n + 1)[:, None], np.arange(k_max + 1)[None, :])


def _maj_from_counts(counts: Counts, ks: tuple[int, ...], seed: int, pascal: FloatArray | None = None) -> FloatArray:
    """maj@k for each k from answer counts in priority order; exact unless too large.

    `pascal` is `_pascal(n, k)` for some k >= max(ks), built here when not given.
    """
    gold_count, higher, lower, n_none = counts
    if gold_count == 0:
        return np.zeros(len(ks), dtype=np.float64)
    n = gold_count + sum(higher) + sum(lower) + n_none
    k_max = max(ks)
    t_max, depth = min(gold_count, k_max), k_max
    work = t_max * depth * sum(min(c, depth - 1) + 1 for c in (*higher, *lower, n_none))
    k_mid = min(k_max, n // 2)
    log_count = gammaln(n + 1) - gammaln(k_mid + 1) - gammaln(n - k_mid + 1)
    if log_count > _MAJ_EXACT_MAX_LOG_COUNT or work > _MAJ_EXACT_MAX_WORK:
        return _maj_monte_carlo(counts, ks, seed)
    return _maj_exact(counts, ks, _pascal(n, k_max) if pascal is None else pascal)


def _maj_exact(counts: Counts, ks: tuple[int, ...], pascal: FloatArray) -> FloatArray:
    """The generating-function sum of `maj_at_ks`, one row per gold count t (see there)."""
    gold_count, higher, lower, n_none = counts
    n = gold_count + sum(higher) + sum(lower) + n_none
    k_max = max(ks)
    t = np.arange(1, min(gold_count, k_max) + 1)  # (T,) gold samples in the subset
    # acc[t-1, s]: ways to pick s non-gold samples with every answer under gold's bar, s < k_max.
    acc = np.zeros((t.size, k_max), dtype=np.float64)  # (T, K)
    acc[:, 0] = 1.0
    # A later answer seen once never beats t >= 1 gold samples, so it is as free as a None sample;
    # earlier answers seen once are one factor, (1+z)^r, that only binds at t = 1 (x = 0 there).
    n_free = n_none + sum(1 for c in lower if c == 1)
    hi_singles = sum(1 for c in higher if c == 1)
    factors: list[tuple[int, npt.NDArray[np.integer] | None]] = []  # (count, most allowed per t)
    factors += [(c, t - 1) for c in higher if c > 1] + [(c, t) for c in lower if c > 1]
    factors += [(hi_singles, np.where(t == 1, 0, hi_singles)), (n_free, None)]
    for count, limit in factors:
        if count == 0:
            continue
        x = np.arange(min(count, k_max - 1) + 1)  # (X,) samples of this answer in the subset
        weights = pascal[count, x[::-1]]  # (X,) reversed for the windows below
        if limit is not None:
            weights = np.where(x[None, ::-1] <= limit[:, None], weights, 0.0)  # (T, X)
        padded = np.zeros((t.size, k_max + x.size - 1))  # (T, K+X-1)
        padded[:, x.size - 1 :] = acc
        windows = sliding_window_view(padded, x.size, axis=1)  # (T, K, X): [t, s, i] = acc[t, s+i-X+1]
        acc = windows @ weights if weights.ndim == 1 else np.einsum("tsi,ti->ts", windows, weights)
    k_arr = np.asarray(ks)
    s = k_arr[:, None] - t[None, :]  # (len(ks), T) non-gold samples in the subset
    ways = np.where(s >= 0, acc[t - 1, np.maximum(s, 0)], 0.0) * pascal[gold_count, t]
    return ways.sum(axis=1) / pascal[n, k_arr]


def _maj_monte_carlo(counts: Counts, ks: tuple[int, ...], seed: int, draws: int = _MAJ_MC_DRAWS) -> FloatArray:
    """Monte-Carlo maj@k: draw subset answer counts from the multivariate hypergeometric law."""
    gold_count, higher, lower, n_none = counts
    colors = np.array([*higher, gold_count, *lower, n_none], dtype=np.int64)  # priority order, None last
    g = len(higher)
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // colors.size)
    out = np.empty(len(ks), dtype=np.float64)
    for j, k in enumerate(ks):
        wins = 0
        for start in range(0, draws, chunk):
            x = rng.multivariate_hypergeometric(colors, k, size=min(chunk, draws - start))  # (D, A+1)
            votes = x[:, :-1]
            # argmax picks the first maximum, i.e. the highest-priority tied answer.
            wins += int(np.count_nonzero((votes.argmax(axis=1) == g) & (votes[:, g] > 0)))
        out[j] = wins / draws
    return out
