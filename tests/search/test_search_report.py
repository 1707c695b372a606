"""search_report.html from hand-built `Search.results()` data: every section, escaping of candidate
sources, embedded plots and no external resource, the optional and empty parts, and the page in
headless Chromium (Debian's `chromium` at `$RLVR_CHROMIUM` through Playwright; skipped with a reason
when either is missing)."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import pytest

from rlvr.search.records import SearchResults
from rlvr.search.report import render_html, write_report

SECTIONS = [
    "Reward search: demo-search",
    "How to read this.",
    "Round-by-round trajectory",
    "Leaderboard",
    "Ensembles and controls",
    "Seed study",
    "Final test comparison",
    "Reward-hacking audit of the winners",
    "Candidate sources",
]
EVIL = 'def reward(completions, **kw):\n    return [0.0 for c in completions]  # "<script>alert(1)</script>" & co\n'


def _scores(f1: float, acc: float, answered: float = 0.9) -> dict[str, Any]:
    return {"accuracy": acc, "accuracy_ci": [acc - 0.05, acc + 0.05], "f1": f1, "f1_ci": (f1 - 0.04, f1 + 0.04),
            "answered": answered, "n_problems": 200, "n_samples": 4}  # fmt: skip


def _audit(flags: list[str] | None = None) -> dict[str, Any]:
    return {"reward": "candidate", "kind": "other", "n": 512, "flags": flags or [], "mean": 0.41, "std": 0.2,
            "mean_correct": 0.62, "mean_incorrect": 0.3, "corr_correct": 0.48, "corr_length": math.nan}  # fmt: skip


def _cand(name: str, rnd: int, rank: int | None, status: str, **kw: Any) -> dict[str, Any]:
    base = {"rank": rank, "name": name, "round": rnd, "description": f"what {name} rewards", "parents": [],
            "source": f"def reward(completions, **kw):\n    return [1.0 for _ in completions]  # {name}\n",
            "accepted": True, "stage": None, "reason": None, "status": status, "error": None, "steps": 40,
            "scores": None, "train": None, "reward_audit": None}  # fmt: skip
    return {**base, **kw}


def _results(calibration: bool) -> dict[str, Any]:
    cands = [
        _cand(
            "steps_bonus", 2, 1, "done", scores=_scores(0.61, 0.58), reward_audit=_audit(), parents=["steps_check"]
        ),  # fmt: skip
        _cand(
            "length_pay",
            1,
            2,
            "done",
            scores=_scores(0.57, 0.55),
            reward_audit=_audit(["tracks length (r=+0.40) more than correctness (r=+0.10)"]),
        ),  # fmt: skip
        _cand("steps_check", 1, 3, "done", steps=13, scores=_scores(0.49, 0.47), reward_audit=_audit()),
        _cand("crashy", 2, None, "failed", error="RuntimeError: reward timed out after 10.0 s"),
        _cand("sneaky", 1, None, "rejected", accepted=False, stage="static", reason="imports os", source=EVIL),
    ]
    ens = [
        {
            "kind": k,
            "members": m,
            "status": "done",
            "error": None,
            "scores": _scores(f1, f1 - 0.02),
            "reward_audit": _audit(["constant"] if k == "random" else []),
        }  # fmt: skip
        for k, m, f1 in (
            ("top", ["steps_bonus", "length_pay"], 0.63),
            ("diverse", ["length_pay", "steps_bonus"], 0.6),
            ("random", ["steps_check", "length_pay"], 0.5),
        )  # fmt: skip
    ]
    test = {"accuracy": 0.5, "accuracy_ci": [0.46, 0.54], "f1": 0.52, "f1_ci": [0.48, 0.56], "answered": 0.95,
            "greedy": 0.55, "n_problems": 500, "n_samples": 4, "split": "test"}  # fmt: skip
    out: dict[str, Any] = {
        "config": {
            "out": "runs/demo-search",
            "rounds": 2,
            "candidates": 3,
            "screen_steps": 40,
            "final_steps": 80,
            "dev_n": 200,
            "dev_samples": 4,
            "test_n": 500,
            "test_samples": 4,
            "seed": 0,
            "task": "arith",
            "preset": "easy",
            "ensemble_size": 2,
            "proposer": {"kind": "offline", "model": None},
            "halving": {"enabled": True},
            "base_rewards": [{"name": "outcome"}, {"name": "format_gsm8k"}],
            "correction": "holm",
        },  # fmt: skip
        "base_model": "runs/demo-search/base/model",
        "wall_s": 3725.0,
        "control": {"status": "done", "scores": _scores(0.45, 0.44), "error": None},
        "rounds": [
            {"round": 1, "proposed": 3, "accepted": 2, "f1": [0.57, 0.49], "best_f1": 0.57},
            {"round": 2, "proposed": 2, "accepted": 2, "f1": [0.61], "best_f1": 0.61},
        ],  # fmt: skip
        "candidates": cands,
        "ensembles": ens,
        "seeds": {
            "ensemble": "top",
            "f1_mean": 0.62,
            "f1_sd": 0.015,
            "runs": [
                {"seed": s, "status": "done", "scores": _scores(0.62 + d, 0.6)}
                for s, d in ((0, 0.01), (1, -0.01), (2, 0.0))
            ],
        },  # fmt: skip
        "final": {
            "split": "test",
            "n_problems": 500,
            "n_samples": 4,
            "correction": "holm",
            "scores": {
                "control": test,
                "best single (steps_bonus)": {**test, "accuracy": 0.56, "accuracy_ci": [0.52, 0.6]},
                "top ensemble": {**test, "accuracy": 0.58, "accuracy_ci": [0.54, 0.62]},
            },
            "tests": [
                {
                    "a": "control",
                    "b": n,
                    "b01": 40,
                    "b10": 21,
                    "pvalue": p,
                    "greedy_diff": 0.04,
                    "pass1_diff": 0.06,
                    "pass1_diff_ci": [0.02, 0.1],
                    "p_adjusted": min(1.0, 2 * p),
                    "significant": 2 * p < 0.05,
                }
                for n, p in (("best single (steps_bonus)", 0.02), ("top ensemble", 0.0004))
            ],
        },  # fmt: skip
    }
    if calibration:
        keys = ("name", "short_f1", "full_f1", "full_f1_seed2")
        rows = [("a", 0.4, 0.5, 0.52), ("b", 0.45, 0.48, None), ("c", 0.5, 0.55, 0.5)]
        out["calibration"] = {
            "short_steps": 13, "full_steps": 40, "n": 3, "tau_short_full": 0.33, "p_short_full": 0.6, "tau_seeds": 1.0,
            "p_seeds": 0.33, "rows": [dict(zip(keys, r, strict=True)) for r in rows],
        }  # fmt: skip
    return out


def _minimal() -> dict[str, Any]:
    """No ensembles, no seed study, no McNemar tests; one failed and one rejected candidate."""
    r = _results(calibration=False)
    r["candidates"] = [c for c in r["candidates"] if c["status"] != "done"]
    r["ensembles"], r["seeds"] = [], None
    r["final"] = {**r["final"], "scores": {"control": r["final"]["scores"]["control"]}, "tests": []}
    return r


def _no_external(html: str) -> None:
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html.lower() and '<link rel="stylesheet"' not in html
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", html)


def test_full_report(tmp_path: Path) -> None:
    results = _results(calibration=True)
    before = copy.deepcopy(results)
    path = write_report(SearchResults.model_validate(results), tmp_path / "out" / "search_report.html")
    assert path == tmp_path / "out" / "search_report.html" and path.is_file()
    assert results == before  # the input is not changed
    html = path.read_text(encoding="utf-8")
    positions = [html.index(s) for s in SECTIONS]
    assert positions == sorted(positions), "sections out of order"
    assert "Calibration of short screens" in html and html.index("Calibration of short screens") < html.index(
        "Candidate sources"
    )
    assert html.count('src="data:image/png;base64,') == 3  # trajectory, final test, calibration
    _no_external(html)
    # the candidate's source is escaped, never raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    # header facts
    for s in ("runs/demo-search/base/model", "1 h 02 min", "offline", "2 x 3", "200 problems x 4 samples"):
        assert s in html, s
    # leaderboard: status with stage + reason, error, flags
    assert "at static: imports os" in html and "RuntimeError: reward timed out after 10.0 s" in html
    assert "tracks length (r=+0.40) more than correctness" in html
    assert '0.610 <span class="ci">[0.570, 0.650]</span>' in html
    # ensembles and seeds
    assert "base rewards only" in html and "0.620 &plusmn; 0.015" in html
    # final: evaluated once, McNemar with the correction's name
    assert "was evaluated once" in html and "adjusted p (holm)" in html and "&lt; 0.001" in html
    # audit: flagged badge for the random ensemble, NaN shown as n/a
    assert 'class="badge bad">flagged: 1' in html and "random ensemble" in html
    assert "best single (steps_bonus)" in html and ">nan<" not in html.lower() and ">n/a<" in html
    # calibration numbers
    assert "Kendall's tau" in html and "0.330 (p 0.600)" in html


def test_without_calibration(tmp_path: Path) -> None:
    html = write_report(
        SearchResults.model_validate(_results(calibration=False)), tmp_path / "search_report.html"
    ).read_text(encoding="utf-8")
    for s in SECTIONS:
        assert s in html, s
    assert "Calibration" not in html and "6. Candidate sources" in html
    assert html.count('src="data:image/png;base64,') == 2
    _no_external(html)


def test_minimal_report(tmp_path: Path) -> None:
    html = write_report(SearchResults.model_validate(_minimal()), tmp_path / "search_report.html").read_text(
        encoding="utf-8"
    )
    for s in SECTIONS:
        assert s in html, s
    assert "No ensembles were built" in html and "No seed study was run." in html
    assert "No tests: the control" in html and "No winner to audit" in html
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert html.count('src="data:image/png;base64,') == 2  # trajectory (control only) and final (control only)
    _no_external(html)


@pytest.mark.parametrize(
    "results",
    [
        {},
        {
            "config": {},
            "control": {"status": "failed", "error": "boom"},
            "rounds": [],
            "candidates": [],
            "ensembles": [],
            "seeds": None,
            "final": {
                "split": "test",
                "n_problems": 0,
                "n_samples": 0,
                "correction": "holm",
                "scores": {},
                "tests": [],
            },
        },  # fmt: skip
    ],
)
def test_empty_results_render(results: dict[str, Any]) -> None:
    html = render_html(SearchResults.model_validate(results), Path("somewhere/search_report.html"))
    assert "Reward search: somewhere" in html and "No candidates were proposed." in html
    assert "data:image/png" not in html
    _no_external(html)


def test_report_renders_in_headless_chromium(tmp_path: Path, chromium_page) -> None:
    path = write_report(SearchResults.model_validate(_results(calibration=True)), tmp_path / "search_report.html")
    with chromium_page(path) as bp:
        page = bp.page
        images = page.eval_on_selector_all(
            "img", "els => els.map(e => ({src: e.src.slice(0, 22), ok: e.complete && e.naturalWidth > 0}))"
        )
        assert len(images) == 3
        assert all(img["src"] == "data:image/png;base64," and img["ok"] for img in images), images
        assert page.eval_on_selector_all("script", "els => els.length") == 0
        assert page.eval_on_selector_all("details pre", "els => els.length") == 5
        assert "<script>alert(1)</script>" in page.text_content("body")  # shown as text, not run
        assert all(u.startswith(("file:", "data:")) for u in bp.requests), bp.requests
        assert bp.errors == []
