"""The audit's reasoning-boundary check on constructed evaluations (eval.json written through the
`rlvr.runs` records): curves that cross warn, curves that do not pass, no pair is "not enough data"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from rlvr.audit import build_context, run_audit
from rlvr.audit.checks import CHECKS
from rlvr.audit.checks.boundary import boundary_curves, crossing
from rlvr.evaluate.metrics import pass_at_k
from rlvr.runs import write_json
from rlvr.runs.eval import EvalResult, Metric, ProblemResult
from rlvr.runs.records import Manifest

N = 16  # samples per problem


def _run(root: Path) -> Path:
    run = root / "grpo"
    run.mkdir(parents=True)
    cfg = {"model": str(root / "base"), "task": "arith", "rewards": [{"name": "outcome"}]}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    write_json(run / "manifest.json", Manifest(command="train").model_dump(mode="json", exclude_unset=True))
    (run / "metrics.jsonl").write_text("")
    (root / "base" / "model").mkdir(parents=True)
    return run


def _eval(root: Path, name: str, model: Path, correct: list[int], n: int = N) -> Path:
    """An evaluation of `model` on `len(correct)` problems, `correct[i]` of `n` samples right on problem i."""
    path = root / "evals" / name
    path.mkdir(parents=True)
    per = [ProblemResult(id=f"p{i}", n=n, correct=c, tokens=10.0) for i, c in enumerate(correct)]
    p1 = float(np.mean(correct)) / n
    result = EvalResult(
        model=str(model / "model"),
        task="arith",
        split="test",
        data_hash="h",
        n_problems=len(correct),
        n_samples=n,
        metrics={"pass@1": Metric(value=p1, k=1, n=n, tokens_per_problem=10.0)},
        per_problem=per,
    )
    write_json(path / "eval.json", result.model_dump(mode="json", by_alias=True))
    (path / "config.yaml").write_text(yaml.safe_dump({"model": str(model), "task": "arith", "split": "test"}))
    write_json(path / "manifest.json", {"command": "eval"})
    return path


def _check(tmp_path: Path, base: list[int], trained: list[int], n: int = N):
    run = _run(tmp_path)
    evals = [_eval(tmp_path, "base", tmp_path / "base", base, n), _eval(tmp_path, "grpo", run, trained, n)]
    return CHECKS["boundary"](build_context(run, evals, second_verifier=False)), run, evals


def test_sharper_but_narrower_crosses_and_warns(tmp_path: Path) -> None:
    """The trained model solves its problems more often (pass@1 up) but never solves 12 of the 40
    the base solves now and then: the base overtakes at some k and ends above at k = 16."""
    base = [3] * 40  # every problem: 3 of 16
    trained = [12] * 28 + [0] * 12
    r, _, _ = _check(tmp_path, base, trained)
    p = r.evidence.pairs[0]
    assert r.status == "warn" and "solves fewer problems at large k" in r.summary
    assert p.k_max == N and p.trained_pass[0] > p.base_pass[0] and p.trained_pass[-1] < p.base_pass[-1]
    assert p.crossing_k is not None and 1 < p.crossing_k <= N and f"overtakes at k = {p.crossing_k}" in r.summary
    assert p.trained_pass[p.crossing_k - 2] >= p.base_pass[p.crossing_k - 2] > 0  # above just before
    assert p.gain_at_max == pytest.approx(0.7 - 1.0) and p.ci_at_max[1] < 0 and p.pvalue_at_max < 0.01
    assert (p.solved_base_only, p.solved_trained_only) == (12, 0)
    assert p.base_pass[1] == pytest.approx(pass_at_k(N, 3, 2))  # the unbiased estimator, per problem


def test_a_trained_model_above_at_every_k_passes(tmp_path: Path) -> None:
    base = [2] * 20 + [0] * 20
    trained = [10] * 30 + [0] * 10  # solves the base's problems and 10 more
    r, _, _ = _check(tmp_path, base, trained)
    p = r.evidence.pairs[0]
    assert r.status == "pass" and "no narrowing at large k" in r.summary and p.crossing_k is None
    assert all(t >= b for t, b in zip(p.trained_pass, p.base_pass, strict=True))
    assert [row[0] for row in r.tables[0].rows] == [1, 2, 4, 8, 16]


def test_not_enough_data(tmp_path: Path) -> None:
    run = _run(tmp_path)
    only_trained = [_eval(tmp_path, "grpo", run, [1, 2])]
    r = CHECKS["boundary"](build_context(run, only_trained, second_verifier=False))
    assert r.status == "warn" and r.summary.startswith("not enough data") and r.evidence.pairs == []
    r, _, _ = _check(tmp_path / "one", [1, 0], [1, 1], n=1)  # one sample a problem: pass@1 only
    assert r.status == "warn" and "not enough data" in r.summary and "--samples 64" in r.summary


def test_the_curves_are_in_the_report(tmp_path: Path) -> None:
    r, run, evals = _check(tmp_path, [3] * 10, [12] * 7 + [0] * 3)
    res = run_audit(run, evals, second_verifier=False, plots=True)
    html = (run / "audit" / "report.html").read_text()
    assert res.check("boundary").status == "warn" and "Reasoning boundary" in html
    section = html[html.index('id="boundary"') :]
    assert 'alt="Reasoning boundary plot" src="data:image/png;base64,' in section[: section.index("</section>")]


def test_curves_and_crossing_helpers() -> None:
    cur = boundary_curves(np.array([8, 8]), np.array([8, 0]), 8)
    assert cur.shape == (8, 2) and cur[:, 0].tolist() == [1.0] * 8 and cur[:, 1].tolist() == [0.0] * 8
    assert crossing([0.1, 0.5], [0.1, 0.4], [1, 2]) == 2  # equal at k = 1 counts as at or above
    assert crossing([0.5, 0.6], [0.6, 0.7], [1, 2]) is None
