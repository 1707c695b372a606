"""Tests for rlvr.evaluate.stats against hand-worked examples and independent implementations."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from scipy import stats as sps

from rlvr.evaluate.stats import (
    McNemarResult,
    adjust_pvalues,
    bonferroni,
    bootstrap_ci,
    cohen_kappa,
    holm,
    mcnemar,
    paired_diff_ci,
)


def _pairs(b01: int, b10: int, n11: int = 0, n00: int = 0) -> tuple[list[bool], list[bool]]:
    """Paired correctness lists with the given cell counts (a, b)."""
    a = [False] * b01 + [True] * b10 + [True] * n11 + [False] * n00
    b = [True] * b01 + [False] * b10 + [True] * n11 + [False] * n00
    return a, b


@pytest.fixture
def untouched_global_rng() -> Iterator[None]:
    state = np.random.get_state(legacy=False)
    yield
    after = np.random.get_state(legacy=False)
    assert np.array_equal(state["state"]["key"], after["state"]["key"])
    assert (state["state"]["pos"], state["has_gauss"], state["gauss"]) == (
        after["state"]["pos"],
        after["has_gauss"],
        after["gauss"],
    )


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_is_deterministic_and_leaves_global_rng_alone(untouched_global_rng: None) -> None:
    x = np.random.default_rng(0).normal(size=200)
    for method in ("percentile", "BCa"):
        first = bootstrap_ci(x, seed=7, method=method)
        assert bootstrap_ci(x, seed=7, method=method) == first
        assert bootstrap_ci(x, seed=8, method=method) != first
        assert first[0] < x.mean() < first[1]
        assert all(isinstance(v, float) for v in first)


def test_bootstrap_matches_a_hand_rolled_percentile_bootstrap() -> None:
    x = np.random.default_rng(1).exponential(size=150)
    low, high = bootstrap_ci(x, n_resamples=4000, seed=0)
    means = x[np.random.default_rng(5).integers(0, x.size, size=(4000, x.size))].mean(axis=1)
    want_low, want_high = np.percentile(means, [2.5, 97.5])
    se = x.std() / np.sqrt(x.size)
    assert low == pytest.approx(want_low, abs=0.25 * se)  # ~4 Monte-Carlo standard errors
    assert high == pytest.approx(want_high, abs=0.25 * se)


def test_bootstrap_width_shrinks_with_n() -> None:
    rng = np.random.default_rng(2)
    widths = []
    for n in (25, 100, 400, 1600):
        low, high = bootstrap_ci(rng.normal(size=n), seed=0)
        widths.append(high - low)
    assert all(w1 > w2 for w1, w2 in zip(widths, widths[1:], strict=False))
    assert widths[0] / widths[-1] == pytest.approx(8.0, rel=0.3)  # ~ 1/sqrt(n)


def test_bootstrap_coverage_on_normal_samples() -> None:
    rng = np.random.default_rng(3)
    hits = 0
    trials = 200
    for seed in range(trials):
        low, high = bootstrap_ci(rng.normal(loc=1.0, size=40), n_resamples=500, seed=seed)
        hits += low <= 1.0 <= high
    assert 0.88 <= hits / trials <= 0.99  # nominal 0.95; percentile bootstrap is a bit narrow


def test_bootstrap_other_statistics_and_confidence() -> None:
    x = np.random.default_rng(4).normal(size=300)
    narrow, wide = bootstrap_ci(x, confidence=0.5), bootstrap_ci(x, confidence=0.99)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    low, high = bootstrap_ci(x, statistic=np.median, seed=0)
    assert low < np.median(x) < high
    # A statistic without an `axis` argument goes through scipy's non-vectorised path.
    low2, high2 = bootstrap_ci(x, statistic=lambda v: float(np.median(v)), seed=0, n_resamples=300)
    assert low2 < np.median(x) < high2


def test_bootstrap_degenerate_inputs() -> None:
    assert bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    assert bootstrap_ci([1, 1, 1, 1], method="BCa") == (1.0, 1.0)
    assert bootstrap_ci([0.25]) == (0.25, 0.25)
    for bad in ([], [[1.0, 2.0]]):
        with pytest.raises(ValueError):
            bootstrap_ci(bad)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], method="bca")  # type: ignore[arg-type]


def test_paired_bootstrap_equals_bootstrap_of_differences(untouched_global_rng: None) -> None:
    rng = np.random.default_rng(5)
    a = (rng.random(300) < 0.5).astype(float)
    b = np.where(rng.random(300) < 0.8, a, 1 - a)
    d = b - a
    diff, low, high = paired_diff_ci(a, b, seed=11)
    assert diff == pytest.approx(d.mean())
    assert (low, high) == bootstrap_ci(d, seed=11)
    joint = bootstrap_ci(a, paired_with=b, seed=11)
    assert joint == pytest.approx((low, high), abs=1e-12)  # same indices, mean is linear
    with pytest.raises(ValueError):
        paired_diff_ci([1, 0], [1, 0, 1])


# ---------------------------------------------------------------- McNemar


def test_mcnemar_exact_hand_computed() -> None:
    r = mcnemar(*_pairs(2, 8, n11=30, n00=5))
    # p = 2 * P(Bin(10, 1/2) <= 2) = 2 * (1 + 10 + 45) / 1024
    assert isinstance(r, McNemarResult)
    assert (r.statistic, r.b01, r.b10, r.exact) == (2.0, 2, 8, True)
    assert r.pvalue == pytest.approx(112 / 1024, abs=1e-12)
    symmetric = mcnemar(*_pairs(5, 5))
    assert symmetric.pvalue == pytest.approx(1.0) and symmetric.exact


def test_mcnemar_chi_square_textbook() -> None:
    # Wikipedia's McNemar example: discordant cells 121 and 59.
    r = mcnemar(*_pairs(121, 59, n11=101, n00=33))
    assert not r.exact and (r.b01, r.b10) == (121, 59)
    assert r.statistic == pytest.approx((62 - 1) ** 2 / 180, abs=1e-12)
    # chi2 with one degree of freedom: P(X >= s) = erfc(sqrt(s / 2)).
    assert r.pvalue == pytest.approx(math.erfc(math.sqrt(3721 / 180 / 2)), rel=1e-9)


def test_mcnemar_switches_at_25_and_obeys_exact_flag() -> None:
    assert mcnemar(*_pairs(6, 18)).exact
    assert not mcnemar(*_pairs(7, 18)).exact
    forced = mcnemar(*_pairs(7, 18), exact=True)
    assert forced.exact and forced.pvalue == pytest.approx(sps.binomtest(7, 25, 0.5).pvalue, abs=1e-15)
    assert not mcnemar(*_pairs(2, 8), exact=False).exact


def test_mcnemar_matches_scipy_binomtest() -> None:
    for b01 in range(0, 13):
        for b10 in range(0, 13):
            if b01 + b10 == 0:
                continue
            r = mcnemar(*_pairs(b01, b10, n11=3))
            want = sps.binomtest(min(b01, b10), b01 + b10, 0.5).pvalue
            assert r.pvalue == pytest.approx(want, abs=1e-15)
            assert r.statistic == min(b01, b10)


def test_mcnemar_no_discordant_pairs_and_bad_input() -> None:
    for exact in (None, True, False):
        r = mcnemar([True, False, True], [True, False, True], exact=exact)
        assert (r.pvalue, r.b01, r.b10) == (1.0, 0, 0)
    with pytest.raises(ValueError):
        mcnemar([True], [True, False])


def test_mcnemar_matches_statsmodels() -> None:
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    for b01, b10, n11, n00 in [
        (2, 8, 30, 5),
        (0, 3, 1, 1),
        (12, 12, 4, 4),
        (121, 59, 101, 33),
        (30, 40, 5, 5),
    ]:
        table = [[n00, b01], [b10, n11]]  # rows: a wrong/right; columns: b wrong/right
        for exact in (True, False):
            ours = mcnemar(*_pairs(b01, b10, n11, n00), exact=exact)
            theirs = contingency.mcnemar(table, exact=exact, correction=True)
            assert ours.statistic == pytest.approx(theirs.statistic, abs=1e-12)
            assert ours.pvalue == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-15)


# ---------------------------------------------------------------- multiplicity


def test_holm_and_bonferroni_hand_computed() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06.
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert bonferroni(p) == pytest.approx([0.04, 0.16, 0.12, 0.02], abs=1e-15)
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert bonferroni([0.5, 0.6]) == [1.0, 1.0]
    assert holm([0.02, 0.02, 0.02]) == pytest.approx([0.06, 0.06, 0.06])
    assert holm([]) == [] and bonferroni([]) == []
    with pytest.raises(ValueError):
        holm([0.1, 1.5])
    with pytest.raises(ValueError):
        bonferroni([float("nan")])


def test_adjust_pvalues_names_the_correction() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert adjust_pvalues(p, "holm") == holm(p) and adjust_pvalues(p, "bonferroni") == bonferroni(p)
    with pytest.raises(ValueError, match="correction must be one of holm, bonferroni"):
        adjust_pvalues(p, "sidak")  # type: ignore[arg-type]


def test_holm_properties_on_random_pvalues() -> None:
    rng = np.random.default_rng(6)
    for _ in range(20):
        p = rng.random(int(rng.integers(1, 30))) ** 3
        h, b = np.array(holm(list(p))), np.array(bonferroni(list(p)))
        order = np.argsort(p)
        assert np.all(np.diff(h[order]) >= 0)  # monotone in the raw p-values
        assert np.all(h >= p) and np.all(h <= b + 1e-15) and np.all(h <= 1.0)


def test_holm_matches_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = list(np.random.default_rng(7).random(12) ** 2)
    for method, ours in (("holm", holm), ("bonferroni", bonferroni)):
        np.testing.assert_allclose(ours(p), multitest.multipletests(p, method=method)[1], atol=1e-15)


# ---------------------------------------------------------------- Cohen's kappa


def test_cohen_kappa_worked_example() -> None:
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-15)  # (0.7 - 0.5) / (1 - 0.5)
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    # Three labels: p_o = 4/6, p_e = (2*1 + 2*2 + 2*3) / 36 = 1/3 -> kappa = (2/3 - 1/3) / (2/3) = 1/2.
    assert cohen_kappa(list("aabbcc"), list("abbccc")) == pytest.approx(0.5, abs=1e-15)


def test_cohen_kappa_degenerate_and_bad_input() -> None:
    assert cohen_kappa([True] * 5, [True] * 5) == 1.0  # p_e = 1: perfect agreement
    assert cohen_kappa([True] * 5, [False] * 5) == 0.0  # p_e = 0, p_o = 0
    with pytest.raises(ValueError):
        cohen_kappa([], [])
    with pytest.raises(ValueError):
        cohen_kappa([1, 2], [1])


def test_cohen_kappa_matches_sklearn() -> None:
    sk_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(8)
    for _ in range(10):
        a = rng.integers(0, 3, size=60)
        b = np.where(rng.random(60) < 0.6, a, rng.integers(0, 3, size=60))
        assert cohen_kappa(list(a), list(b)) == pytest.approx(sk_metrics.cohen_kappa_score(a, b), abs=1e-12)
