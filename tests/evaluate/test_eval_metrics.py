"""Tests for rlvr.evaluate.metrics against brute-force enumeration of k-subsets."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from rlvr.evaluate.metrics import (
    _maj_exact,
    _maj_monte_carlo,
    _pascal,
    _priority_counts,
    maj_at_k,
    maj_at_ks,
    majority_vote,
    pass_at_k,
    pass_at_k_array,
    summarize,
)


def brute_pass_at_k(n: int, c: int, k: int) -> Fraction:
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(samples[i] for i in s) for s in subsets), len(subsets))


def brute_maj_at_k(answers: list[str | None], gold: str, k: int) -> Fraction:
    """Vote of every k-subset; ties go to the answer seen first in the full list."""
    first: dict[str, int] = {}
    for i, a in enumerate(answers):
        if a is not None:
            first.setdefault(a, i)
    hits = total = 0
    for subset in itertools.combinations(range(len(answers)), k):
        counts: Counter[str] = Counter(a for i in subset if (a := answers[i]) is not None)
        winner = None
        if counts:
            top = max(counts.values())
            winner = min((a for a, c in counts.items() if c == top), key=first.__getitem__)
        hits += winner == gold
        total += 1
    return Fraction(hits, total)


# ---------------------------------------------------------------- pass@k


def test_pass_at_k_matches_enumeration_for_all_small_cases() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(brute_pass_at_k(n, c, k)), abs=1e-12)


def test_pass_at_k_known_values() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)  # pass@1 = c / n
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - 21 / 45, abs=1e-15)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 3, 3) == 1.0  # only 2 wrong samples: any 3 hold a correct one
    assert pass_at_k(200, 1, 1) == pytest.approx(0.005, rel=1e-12)


@pytest.mark.parametrize("n,c,k", [(3, 1, 4), (3, 4, 1), (3, -1, 1), (3, 1, 0)])
def test_pass_at_k_rejects_bad_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_at_k_array(np.array([n]), np.array([c]), k)


def test_pass_at_k_array_equals_scalar() -> None:
    ns, cs = zip(*[(n, c) for n in [*range(1, 65), 100, 257, 1000] for c in range(n + 1)], strict=True)
    n_arr, c_arr = np.array(ns), np.array(cs)
    for k in [1, 2, 3, 4, 8, 16, 32, 64]:
        keep = n_arr >= k
        got = pass_at_k_array(n_arr[keep], c_arr[keep], k)
        want = np.array([pass_at_k(n, c, k) for n, c in zip(n_arr[keep], c_arr[keep], strict=True)])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_pass_at_k_array_broadcasts_and_keeps_shape() -> None:
    c = np.array([[0, 1], [4, 2]])
    got = pass_at_k_array(4, c, 2)
    assert got.shape == (2, 2)
    np.testing.assert_allclose(got, [[0.0, 0.5], [1.0, 1 - 1 / 6]], atol=1e-15)
    assert pass_at_k_array(np.array([], dtype=int), np.array([], dtype=int), 1).shape == (0,)
    with pytest.raises(ValueError):
        pass_at_k_array(4, np.array([0.5]), 1)


# ---------------------------------------------------------------- majority vote


def test_majority_vote_counts_and_ties() -> None:
    assert majority_vote(["1", "2", "2"]) == "2"
    assert majority_vote(["1", "2", "2", "1"]) == "1"  # tie: "1" appears first
    assert majority_vote(["2", "1", "1", "2"]) == "2"
    assert majority_vote(["3", "1", "2"]) == "3"
    assert majority_vote(["x"]) == "x"


def test_majority_vote_none_never_wins() -> None:
    assert majority_vote([None, None, "5"]) == "5"
    assert majority_vote([None, "5", None, "6", None]) == "5"
    assert majority_vote([None, None]) is None
    assert majority_vote([]) is None


# ---------------------------------------------------------------- maj@k

MAJ_CASES: list[list[str | None]] = [
    ["a", "a", "b", None],
    ["b", "a", "a", "b", "c"],
    ["a", "b", "c", "d", "e", "f"],
    [None, None, "a", None, "b", "a", "b"],
    ["c", "a", "b", "a", "c", "b", "a", None],
    ["a"] * 3 + ["b"] * 3 + [None] * 3,
    [None, "x", "y", "y", "z", "x", "z", None, "x"],
]


@pytest.mark.parametrize("answers", MAJ_CASES)
def test_maj_at_k_matches_enumeration(answers: list[str | None]) -> None:
    n = len(answers)
    for gold in sorted({a for a in answers if a is not None}) + ["absent"]:
        got = maj_at_ks(answers, gold, list(range(1, n + 1)))
        want = [float(brute_maj_at_k(answers, gold, k)) for k in range(1, n + 1)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        assert maj_at_k(answers, gold, n) == float(majority_vote(answers) == gold)


def test_maj_at_k_matches_enumeration_on_random_lists() -> None:
    rng = np.random.default_rng(1)
    alphabet = np.array(["p", "q", "r", "s"], dtype=object)
    for _ in range(25):
        n = int(rng.integers(1, 10))
        answers = [None if rng.random() < 0.2 else str(a) for a in rng.choice(alphabet[: rng.integers(1, 5)], n)]
        gold = str(rng.choice(alphabet[:3]))
        got = maj_at_ks(answers, gold, list(range(1, n + 1)))
        want = [float(brute_maj_at_k(answers, gold, k)) for k in range(1, n + 1)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_maj_at_k_invariants() -> None:
    answers = ["a"] * 20 + ["b"] * 15 + [None] * 10 + ["c"] * 19
    assert maj_at_k(answers, "a", 1) == pytest.approx(20 / 64, abs=1e-15)  # one sample votes itself
    curve = maj_at_ks(answers, "a", range(1, 65))
    assert np.all((curve >= 0) & (curve <= 1 + 1e-12))
    assert curve[-1] == 1.0
    # The three answers' win probabilities and the all-None subset sum to one.
    for k in [1, 2, 5, 10]:
        total = sum(maj_at_k(answers, g, k) for g in "abc")
        p_all_none = np.prod([(10 - i) / (64 - i) for i in range(k)])  # C(10, k) / C(64, k)
        assert total + p_all_none == pytest.approx(1.0, abs=1e-12)


def test_maj_at_k_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        maj_at_k(["a", "b"], "a", 3)
    with pytest.raises(ValueError):
        maj_at_k(["a", "b"], "a", 0)


def test_maj_monte_carlo_agrees_with_exact() -> None:
    ks = tuple(range(1, 12))
    exact = _maj_exact((3, (2,), (3, 1), 2), ks, _pascal(11, 11))
    mc = _maj_monte_carlo((3, (2,), (3, 1), 2), ks, seed=0, draws=20_000)
    np.testing.assert_allclose(mc, exact, atol=5 * 0.5 / np.sqrt(20_000))


def test_maj_at_k_large_n_falls_back_deterministically() -> None:
    state = np.random.get_state(legacy=False)["state"]
    answers = ["a"] * 1500 + ["b"] * 1500
    first = maj_at_k(answers, "a", 1499, seed=3)  # odd k: no ties, P = 1/2 by symmetry
    assert first == pytest.approx(0.5, abs=0.02)
    assert maj_at_k(answers, "a", 1499, seed=3) == first
    assert maj_at_k(answers, "a", 1500, seed=3) > 0.5  # even k: "a" also wins the ties
    after = np.random.get_state(legacy=False)["state"]
    assert np.array_equal(after["key"], state["key"]) and after["pos"] == state["pos"]


# ---------------------------------------------------------------- summarize


def _toy_eval(seed: int, n_problems: int, n: int) -> tuple[np.ndarray, np.ndarray, list[list[str | None]], list[str]]:
    rng = np.random.default_rng(seed)
    p_correct = rng.beta(0.7, 0.7, size=n_problems)
    correct = rng.random((n_problems, n)) < p_correct[:, None]
    wrong = rng.choice(np.array(["1", "2", "3", None], dtype=object), size=(n_problems, n), p=[0.5, 0.25, 0.15, 0.1])
    answers = [
        [("0" if ok else w) for ok, w in zip(row_ok, row_w, strict=True)]
        for row_ok, row_w in zip(correct, wrong, strict=True)
    ]
    tokens = rng.integers(50, 400, size=(n_problems, n))
    return correct, tokens, answers, ["0"] * n_problems


def test_summarize_matches_per_problem_loops() -> None:
    correct, tokens, answers, golds = _toy_eval(0, 30, 8)
    ks = [1, 2, 4, 8]
    out = summarize(correct, tokens, ks, answers, golds)
    json.dumps(out)  # plain JSON types
    assert out["n_problems"] == 30 and out["n_samples"] == 8
    assert out["pass@1"] == pytest.approx(correct.mean(), abs=1e-12)
    for k in ks:
        want_pass = np.mean([pass_at_k(8, int(c), k) for c in correct.sum(axis=1)])
        want_maj = np.mean([maj_at_k(a, g, k) for a, g in zip(answers, golds, strict=True)])
        assert out[f"pass@{k}"] == pytest.approx(want_pass, abs=1e-12)
        assert out[f"maj@{k}"] == pytest.approx(want_maj, abs=1e-12)
        assert out[f"tokens@{k}"] == pytest.approx(k * tokens.mean())
    assert out["maj@1"] == pytest.approx(out["pass@1"], abs=1e-12)  # answers agree with `correct`


def test_summarize_without_answers_and_bad_input() -> None:
    correct, tokens, _, _ = _toy_eval(1, 5, 4)
    out = summarize(correct, tokens, [4, 1, 1])
    assert sorted(out) == [
        "n_problems",
        "n_samples",
        "pass@1",
        "pass@4",
        "tokens@1",
        "tokens@4",
        "tokens_per_sample",
    ]
    with pytest.raises(ValueError):
        summarize(correct, tokens, [5])
    with pytest.raises(ValueError):
        summarize(correct, tokens[:, :3], [1])
    with pytest.raises(ValueError):
        summarize(correct, tokens, [1], answers=[["0"] * 4] * 5)  # golds missing


def test_maj_exact_agrees_with_monte_carlo_on_a_wide_spread() -> None:
    # 43 samples: repeated and one-off answers on both sides of gold, plus unparsed ones.
    base: list[str | None] = [
        "x",
        "y",
        "y",
        "g",
        "z",
        "x",
        "g",
        None,
        "w",
        "g",
        "v",
        "x",
        "u",
        "y",
        "g",
        None,
    ]
    answers = ["a", "b", "c", *base, *base, "t", "s", "g", "r", "q", "x", "g", "p"]
    ks = tuple(range(1, 44, 3))
    exact = maj_at_ks(answers, "g", ks)
    counts = (10, (1, 1, 1, 6, 7), (1, 1, 1, 1, 1, 2, 2, 2, 2), 4)
    assert _priority_counts(answers, "g") == counts
    mc = _maj_monte_carlo(counts, ks, seed=0, draws=20_000)
    np.testing.assert_allclose(exact, mc, atol=5 * 0.5 / np.sqrt(20_000))


def test_maj_at_k_votes_by_the_verifier_s_verdict_not_by_text() -> None:
    """Equivalent accepted answers vote together (a LaTeX `\\frac12` and `0.5`, two code solutions that
    differ in text): the majority is judged by the verdicts, never by string equality with the gold."""
    import numpy as np

    from rlvr.evaluate.evaluation import EvalConfig, summarize_scores
    from rlvr.evaluate.runner import Scored
    from rlvr.tasks.problem import Problem

    parsed = [["\\frac12", "0.5", "3", "3"], ["def f(): return 1", "x", "y", None]]
    correct = np.array([[True, True, False, False], [True, False, False, False]])
    scored = Scored(
        correct=correct,
        tokens=np.full((2, 4), 5),
        truncated=np.zeros((2, 4), bool),
        parsed=parsed,
        reasons=[[""] * 4] * 2,
        texts=[[""] * 4] * 2,
    )
    problems = [Problem("a", "q", "\\frac{1}{2}", [], "t"), Problem("b", "q", "", [], "t")]
    cfg = EvalConfig(model="m", ks=[1, 4], n_samples=4)
    metrics = summarize_scores(problems, scored, None, cfg)["metrics"]
    # a: "right" has 2 votes, "3" has 2, and the right ones came first: maj@4 = 1; b: four distinct
    # ballots of one vote each, the right one first: maj@4 = 1 (ties go to the first answer)
    assert metrics["maj@4"].value == 1.0
