"""The audit end to end on a real tiny run made in-process (2 GRPO steps, 4-problem evaluations), and
its report.html opened in headless Chromium: every plot loads and the console stays clean.

The browser test uses Debian's `chromium` (`$RLVR_CHROMIUM`, default /usr/bin/chromium) through
Playwright, never `playwright install`; it is skipped with a reason when either is missing. It keeps
a screenshot as `$RLVR_ARTIFACTS/audit.png` (default runs/artifacts/).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlvr.audit import run_audit
from rlvr.config import load_config
from rlvr.evaluate.evaluation import EvalConfig, run_eval
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer


@pytest.fixture(scope="module")
def audited(tiny_model_dir: Path, tmp_path_factory) -> Path:
    """A GRPO run of 2 steps from the tiny model, base and trained evaluations on test and holdout,
    and the audit of it; returns the audit folder."""
    root = tmp_path_factory.mktemp("audit_e2e")
    cfg = load_config(
        TrainConfig,
        None,
        {"model": str(tiny_model_dir), "out": str(root / "grpo"), "n_train": 64, "steps": 2, "prompts_per_step": 2,
         "group_size": 4, "sampling": {"max_new_tokens": 10}, "micro_batch_size": 8, "eval_every": 0, "save_every": 0,
         "threads": 1,
         "rewards": [{"name": "outcome"}, {"name": "format_gsm8k", "weight": 0.1}]},
    )  # fmt: skip
    run = GRPOTrainer(cfg).train()
    evals = []
    for who, model in (("base", tiny_model_dir), ("grpo", run)):
        for split in ("test", "holdout"):
            out = root / "evals" / f"{who}-{split}"
            ecfg = load_config(
                EvalConfig,
                None,
                {"model": str(model), "split": split, "n_problems": 4, "n_samples": 4, "ks": [1, 2, 4],
                 "sampling": {"max_new_tokens": 10}, "ci_resamples": 100, "threads": 1, "out": str(out)},
            )  # fmt: skip
            evals.append(run_eval(ecfg))
    result = run_audit(run, evals, second_verifier=False)
    assert result.out_dir == run / "audit"
    return result.out_dir


def test_end_to_end_report_files(audited: Path) -> None:
    report = json.loads((audited / "audit.json").read_text())
    card = (audited.parent / "model" / "README.md").read_text()  # the model card, with the readiness summary
    assert "rewards: outcome x1, format_gsm8k x0.1" in card and "data: train: arith n=64" in card
    assert f"## Readiness audit: {report['status']}" in card and "matched_compute:" in card
    checks = {c["name"]: c for c in report["checks"]}
    assert len(checks) == 9 and all(c["status"] in ("pass", "warn", "fail") for c in checks.values())
    assert {e["role"] for e in report["evaluations"]} == {"base", "trained"}
    # base and trained evaluations of the same 4 test problems, compared at their token budgets
    pair = checks["matched_compute"]["evidence"]["pairs"][0]
    assert pair["split"] == "test" and {"pass@2", "pass@4", "maj@4"} <= set(pair["multi_sample"])
    assert checks["contamination"]["status"] == "pass"  # arith test and holdout are disjoint by construction
    assert checks["holdout"]["status"] == "pass" and checks["holdout"]["evidence"]["guard"]["ok"]
    assert checks["drift"]["status"] == "warn" and "too short" in checks["drift"]["summary"]  # 2 steps
    shares = checks["reward_separation"]["evidence"]["shares"]
    assert shares["kinds"]["format"]["rewards"] == ["format_gsm8k"]
    assert checks["human"]["status"] == "warn"
    assert [p["k_max"] for p in checks["boundary"]["evidence"]["pairs"]] == [4, 4]  # test and holdout, 4 samples
    assert report["checks"][0]["name"] == "matched_compute"
    html = (audited / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') >= 4 and "<script" not in html
    assert "## 4. Contamination" in (audited / "report.md").read_text()


def test_report_renders_in_headless_chromium(audited: Path, chromium_page) -> None:
    artifacts = Path(os.environ.get("RLVR_ARTIFACTS", "runs/artifacts"))
    with chromium_page(audited / "report.html") as bp:
        page = bp.page
        images = page.eval_on_selector_all(
            "img", "els => els.map(e => ({src: e.src.slice(0, 22), ok: e.complete && e.naturalWidth > 0}))"
        )
        assert len(images) >= 4
        assert all(img["src"] == "data:image/png;base64," and img["ok"] for img in images), images
        badges = page.eval_on_selector_all("section.check .badge", "els => els.map(e => e.textContent)")
        assert len(badges) == 9
        artifacts.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(artifacts / "audit.png"), full_page=True)
        assert bp.errors == []
