"""Evaluation plots: valid, small, deterministic PNGs from eval.json alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.evaluate.plots import metric_series, write_compare_plots, write_eval_plots
from rlvr.runs import read_eval

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def metric(value: float, k: int, tokens: float) -> dict[str, Any]:
    return {
        "value": value,
        "ci": [max(value - 0.1, 0.0), min(value + 0.1, 1.0)],
        "k": k,
        "n": 8,
        "tokens_per_problem": tokens,
    }


def write_eval(root: Path, name: str, scale: float, tokens: float, greedy: bool = True) -> Path:
    metrics = {}
    for k in (1, 2, 4, 8):
        metrics[f"pass@{k}"] = metric(min(1.0, scale * k**0.5), k, k * tokens)
        if k > 1:
            metrics[f"maj@{k}"] = metric(scale * 1.1, k, k * tokens)
    if greedy:
        metrics["greedy"] = metric(scale * 1.2, 1, tokens)
    d = root / name
    d.mkdir(parents=True)
    e = {"task": "arith", "split": "test", "n_problems": 10, "n_samples": 8, "metrics": metrics, "per_problem": []}
    (d / "eval.json").write_text(json.dumps(e))
    return d


def test_eval_plots_are_small_deterministic_pngs(tmp_path: Path) -> None:
    d = write_eval(tmp_path, "run", 0.2, 30.0)
    paths = write_eval_plots(d)
    assert [p.name for p in paths] == ["pass_at_k.png", "accuracy_vs_tokens.png"]
    first = [p.read_bytes() for p in paths]
    for data in first:
        assert data.startswith(PNG_MAGIC) and 5_000 < len(data) < 150_000
        assert b"Matplotlib version" not in data  # no software tag: bytes depend on the data only
    assert [p.read_bytes() for p in write_eval_plots(d)] == first


def test_compare_plots_several_runs(tmp_path: Path) -> None:
    runs = [write_eval(tmp_path, "short", 0.2, 30.0), write_eval(tmp_path, "long", 0.3, 90.0, greedy=False)]
    paths = write_compare_plots(runs, tmp_path / "cmp", labels=["short answers", "long answers"])
    assert all(p.parent == tmp_path / "cmp" and p.read_bytes().startswith(PNG_MAGIC) for p in paths)


def test_only_pass_at_1(tmp_path: Path) -> None:
    d = tmp_path / "one"
    d.mkdir()
    e = {"task": "arith", "split": "test", "metrics": {"pass@1": metric(0.5, 1, 20.0)}, "per_problem": []}
    (d / "eval.json").write_text(json.dumps(e))
    assert all(p.is_file() for p in write_eval_plots(d))
    assert metric_series(read_eval(d).metrics, "maj") == [(1, 0.5, 0.4, 0.6, 20.0)]


def test_a_zero_token_run_does_not_stretch_the_log_axis(tmp_path: Path, monkeypatch) -> None:
    """An evaluation whose completions are all empty (0 tokens per problem) has no place on a log axis:
    its points are dropped and the other runs keep a readable axis (the scale is set after plotting)."""
    import rlvr.evaluate.plots as plots

    limits = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, *a: limits.append(fig.axes[0].get_xlim()) or save(fig, *a))
    runs = [write_eval(tmp_path, "normal", 0.2, 30.0), write_eval(tmp_path, "empty", 0.0, 0.0)]
    write_compare_plots(runs, tmp_path / "cmp", labels=["normal", "empty"])
    assert len(limits) == 2
    for low, high in limits:  # pass@k against k, then accuracy against tokens (30 to 240)
        assert 0.1 < low < high < 1_000
