"""compare_runs on hand-built eval.json folders whose differences and p-values are worked out by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlvr.evaluate.compare import (
    CompareError,
    budget_ratio,
    compare_runs,
    format_comparison,
    paired_tests,
    sign_flip_pvalue,
)
from rlvr.evaluate.metrics import pass_at_k_array
from rlvr.runs import clean


def write_eval(
    root: Path,
    name: str,
    correct: list[int],
    n: int,
    tokens: float | list[float],
    greedy: list[bool] | None = None,
    *,
    ks: tuple[int, ...] = (1, 2, 4),
    ids: list[str] | None = None,
    **top: Any,
) -> Path:
    """An eval folder with eval.json as `rlvr eval` writes it (CIs are placeholders)."""
    ids = ids or [f"p{i}" for i in range(len(correct))]
    toks = tokens if isinstance(tokens, list) else [float(tokens)] * len(correct)
    per_problem = [
        {"id": i, "n_steps": 1, "correct": c, "n": n, "tokens": t, **({"greedy": g} if greedy else {})}
        for i, c, t, g in zip(ids, correct, toks, greedy or [False] * len(correct), strict=True)
    ]
    tps = float(np.mean(toks))
    metrics = {}
    for k in (k for k in ks if k <= n):
        v = float(pass_at_k_array(n, np.array(correct), k).mean())
        metrics[f"pass@{k}"] = {"value": v, "ci": [v, v], "k": k, "n": n, "tokens_per_problem": k * tps}
    if greedy:
        g = float(np.mean(greedy))
        metrics["greedy"] = {"value": g, "ci": [g, g], "k": 1, "n": 1, "tokens_per_problem": tps}
    e = {
        "model": name, "task": "arith", "preset": "easy", "split": "test", "data_hash": "h0",
        "n_problems": len(correct), "n_samples": n, "tokens_per_sample": tps, "metrics": metrics,
        "per_problem": per_problem, **top,
    }  # fmt: skip
    d = root / name
    d.mkdir(parents=True)
    (d / "eval.json").write_text(json.dumps(e))
    return d


F, T = False, True
# 8 problems, 2 samples each. Sampled pass@1 differences and greedy discordance, by hand:
#   B - A: d = [1,1,1,1,1,0,0,0] -> mean 0.625; sign-flip p = 2/2^5 = 0.0625
#          greedy b01 = 6, b10 = 0 -> exact McNemar p = 2 * 0.5^6 = 0.03125, diff 0.75
#   C - A: d = [.5,.5,0,...] -> mean 0.125; p = 2/2^2 = 0.5; greedy b01 = b10 = 1 -> p = 1, diff 0
A = ([0, 0, 0, 0, 0, 0, 1, 2], [F, F, F, F, F, F, F, T])
B = ([2, 2, 2, 2, 2, 0, 1, 2], [T, T, T, T, T, T, F, T])
C = ([1, 1, 0, 0, 0, 0, 1, 2], [T, F, F, F, F, F, F, F])


@pytest.fixture()
def abc(tmp_path: Path) -> list[Path]:
    return [write_eval(tmp_path, name, c, 2, 30.0, g) for name, (c, g) in zip("ABC", (A, B, C), strict=True)]


def test_paired_tests_by_hand_with_holm(abc: list[Path]) -> None:
    c = compare_runs(abc, correction="holm")
    got = [(t.a, t.b, t.metric) for t in c.tests]
    assert got == [("A", "B", "pass@1"), ("A", "B", "greedy"), ("A", "C", "pass@1"), ("A", "C", "greedy")]
    assert [t.diff for t in c.tests] == pytest.approx([0.625, 0.75, 0.125, 0.0])
    assert [t.pvalue for t in c.tests] == pytest.approx([0.0625, 0.03125, 0.5, 1.0])
    # Holm: sorted .03125*4 = .125, .0625*3 = .1875, .5*2 = 1, 1*1 = 1 (running max), back in input order
    assert [t.pvalue_adj for t in c.tests] == pytest.approx([0.1875, 0.125, 1.0, 1.0])
    assert c.tests[1].detail == {"b01": 6, "b10": 0} and c.tests[1].test == "McNemar exact"
    assert all(t.ci[0] <= t.diff <= t.ci[1] for t in c.tests)
    assert all(t.n_problems == 8 and t.budget_matched for t in c.tests)
    assert (c.tests[0].value_a, c.tests[0].value_b) == pytest.approx((3 / 16, 13 / 16))


def test_bonferroni_and_all_pairs(abc: list[Path]) -> None:
    bonf = compare_runs(abc, correction="bonferroni")
    assert [t.pvalue_adj for t in bonf.tests] == pytest.approx([0.25, 0.125, 1.0, 1.0])
    allp = compare_runs(abc, pairs="all")
    assert [(t.a, t.b) for t in allp.tests][-2:] == [("B", "C"), ("B", "C")]
    # C - B: |d| = [.5,.5,1,1,1], S = -4 -> p = 2/32; greedy b10 = 6 -> p = 1/32. Holm over 6 p-values:
    # sorted .03125x6, .03125x5, .0625x4, .0625x3, .5x2, 1 -> .1875, .1875, .25, .25, 1, 1
    assert [t.pvalue for t in allp.tests][-2:] == pytest.approx([0.0625, 0.03125])
    assert [t.pvalue_adj for t in allp.tests] == pytest.approx([0.25, 0.1875, 1.0, 1.0, 0.25, 0.1875])


def test_budget_matching_short_vs_long(tmp_path: Path) -> None:
    # A: 30 tokens/sample, n=8, one correct of 8 everywhere; B: 90 tokens/sample, n=4, 2 of 4.
    a = write_eval(tmp_path, "short", [1] * 6, 8, 30.0, ks=(1, 2, 4, 8))
    b = write_eval(tmp_path, "long", [2] * 6, 4, 90.0, ks=(1, 2, 4))
    c = compare_runs([a, b], budget_tolerance=0.1)
    rows = {(m.metric_a, m.metric_b): m for m in c.budget_matches}
    # A's k -> closest B k' (k=8: 240 tokens -> B k'=3, 270); B's k -> A k' (90 -> 3, 180 -> 6, 360 -> 8)
    assert list(rows) == [
        ("pass@1", "pass@1"), ("pass@2", "pass@1"), ("pass@3", "pass@1"), ("pass@4", "pass@1"),
        ("pass@6", "pass@2"), ("pass@8", "pass@3"), ("pass@8", "pass@4"),
    ]  # fmt: skip
    assert [m.matched for m in rows.values()] == [F, F, T, F, T, F, F]
    m = rows[("pass@3", "pass@1")]
    assert (m.tokens_a, m.tokens_b, m.ratio) == pytest.approx((90.0, 90.0, 1.0))
    # pass@3 with 1 of 8 correct = 1 - C(7,3)/C(8,3) = 1 - 35/56 = 0.375; B pass@1 = 0.5
    assert (m.value_a, m.value_b, m.diff) == pytest.approx((0.375, 0.5, 0.125))
    assert rows[("pass@8", "pass@3")].ratio == pytest.approx(270 / 240)
    assert compare_runs([a, b], budget_tolerance=0.15).budget_matches[5].matched
    headline = c.tests[0]
    assert headline.metric == "pass@1" and not headline.budget_matched and headline.budget_ratio == pytest.approx(3.0)
    text = format_comparison(c)
    assert "not budget-matched: pass@1 of long uses 3.00x the tokens of short" in text
    assert "budget-matched: pass@3 of short (90 tokens/problem) vs pass@1 of long (90 tokens/problem)" in text


def test_the_118_vs_121_example(tmp_path: Path) -> None:
    a = write_eval(tmp_path, "A", [1, 2, 0], 4, 29.5, ks=(1, 2, 4))
    b = write_eval(tmp_path, "B", [1, 1, 0], 1, 121.0, ks=(1,))
    c = compare_runs([a, b])
    m = next(m for m in c.budget_matches if m.metric_a == "pass@4")
    assert (m.metric_b, m.matched) == ("pass@1", True) and m.ratio == pytest.approx(121 / 118)
    assert "pass@4 of A (118 tokens/problem) vs pass@1 of B (121 tokens/problem)" in format_comparison(c)


def test_refusals_and_warnings(tmp_path: Path) -> None:
    a = write_eval(tmp_path, "a", [1, 0], 2, 10.0)
    with pytest.raises(CompareError, match="split 'holdout'"):
        compare_runs([a, write_eval(tmp_path, "h", [1, 0], 2, 10.0, split="holdout")])
    with pytest.raises(CompareError, match="task 'gsm8k'"):
        compare_runs([a, write_eval(tmp_path, "g", [1, 0], 2, 10.0, task="gsm8k")])
    with pytest.raises(CompareError, match="share no problems"):
        compare_runs([a, write_eval(tmp_path, "o", [1, 0], 2, 10.0, ids=["x", "y"])])
    with pytest.raises(CompareError, match="at least two"):
        compare_runs([a])
    with pytest.raises(CompareError, match="no eval.json"):
        compare_runs([a, tmp_path / "missing"])
    with pytest.raises(CompareError, match="correction"):
        compare_runs([a, a], correction="sidak")  # type: ignore[arg-type]
    d = write_eval(tmp_path, "d", [2, 0, 1], 2, 10.0, ids=["p0", "p1", "p9"], data_hash="other")
    with pytest.warns(UserWarning) as record:
        c = compare_runs([a, d])
    assert [str(w.message)[:18] for w in record] == ["data_hash differs:", "a vs d: paired on "]
    assert c.tests[0].n_problems == 2 and any("2 shared problems" in w for w in c.warnings)
    assert c.tests[0].diff == pytest.approx(0.25)  # p0: 1/2 -> 2/2, p1: 0 -> 0


def test_json_out_and_same_names(tmp_path: Path) -> None:
    a = write_eval(tmp_path / "base", "eval", A[0], 2, 30.0, A[1])
    b = write_eval(tmp_path / "grpo", "eval", B[0], 2, 30.0, B[1])
    c = compare_runs([a, b], out=tmp_path / "cmp")
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [r["name"] for r in data["runs"]] == ["base/eval", "grpo/eval"]
    assert data.pop("schema_version") == 1 and data == clean(c.to_json())  # NaN written as null
    assert data["correction"] == "holm" and len(data["tests"]) == 2
    assert set(data["tests"][0]) >= {"diff", "ci", "pvalue", "pvalue_adj", "budget_matched", "tokens_a"}
    assert "B = grpo/eval vs A = base/eval: paired on 8 shared problems" in format_comparison(c)


def test_sign_flip_pvalue_exact_and_sampled() -> None:
    assert sign_flip_pvalue([0, 0]) == 1.0
    assert sign_flip_pvalue([1, 1, 1, 1, 1, -1]) == pytest.approx(14 / 64)  # |S| >= 4: 1 + 6 patterns, x2
    big = np.r_[np.ones(30), -np.ones(2)]  # m = 32 > 16: Monte Carlo, seeded
    p = sign_flip_pvalue(big, seed=1)
    assert p == sign_flip_pvalue(big, seed=1) and 0 < p < 0.001
    assert budget_ratio(0.0, 0.0) == 1.0 and budget_ratio(0.0, 5.0) == float("inf")


def test_paired_tests_by_hand() -> None:
    """The one statistics path (compare, search's final test, the audit's paired change), on arrays."""
    pa, pb = np.array(A[0]) / 2, np.array(B[0]) / 2
    p1, g = paired_tests((pa, pb), (A[1], B[1]), names=("A", "B"), seed=0)
    assert (p1.metric, p1.a, p1.b, p1.n_problems, p1.test) == ("pass@1", "A", "B", 8, "sign-flip permutation")
    assert (p1.value_a, p1.value_b, p1.diff, p1.pvalue) == pytest.approx((3 / 16, 13 / 16, 0.625, 0.0625))
    assert (g.value_a, g.value_b, g.diff, g.pvalue) == pytest.approx((1 / 8, 7 / 8, 0.75, 0.03125))  # 2 * 0.5^6
    assert g.detail == {"b01": 6, "b10": 0} and g.test == "McNemar exact"
    assert all(t.ci[0] <= t.diff <= t.ci[1] for t in (p1, g))
    assert math.isnan(p1.pvalue_adj) and math.isnan(p1.tokens_a) and not p1.budget_matched  # the caller's part
    assert [t.metric for t in paired_tests((pa, pb))] == ["pass@1"]  # no greedy arrays, no greedy test
    with pytest.raises(ValueError):
        paired_tests((pa, pb[:-1]))


def test_compare_runs_statistics_are_paired_tests(abc: list[Path]) -> None:
    c = compare_runs(abc, seed=3, ci_resamples=300)
    for other, t in ((B, c.tests[:2]), (C, c.tests[2:])):
        ref = paired_tests((np.array(A[0]) / 2, np.array(other[0]) / 2), (A[1], other[1]), names=(t[0].a, t[0].b),
                           seed=3, n_resamples=300)  # fmt: skip
        keep = ("pvalue_adj", "tokens_a", "tokens_b", "budget_ratio", "budget_matched")
        assert [replace(x, **{k: getattr(y, k) for k in keep}) for x, y in zip(ref, t, strict=True)] == t
