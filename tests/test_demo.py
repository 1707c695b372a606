"""`rlvr demo --quick` end to end, as CI's slow step runs it: every stage, the summary and the report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_demo_quick_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    cmd = [sys.executable, "-c", "from rlvr.cli import main; main()", "demo", "--quick", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["splits"]) == {"test", "holdout"}
    for split in ("test", "holdout"):
        tests = {t["metric"]: t for t in summary["splits"][split]["tests"]}
        assert {"pass@1", "greedy"} <= set(tests)
        low, high = tests["pass@1"]["ci"]
        assert low <= tests["pass@1"]["diff"] <= high
    methods = summary["baselines"]["metrics"]
    assert set(methods) == {"base", "rft", "sft-oracle", "grpo"}  # every pair of them tested on test
    pairs = {(t["a"], t["b"]) for t in summary["baselines"]["tests"] if t["metric"] == "pass@1"}
    assert len(pairs) == 6 and ("rft", "grpo") in pairs and ("sft-oracle", "grpo") in pairs
    costs = summary["costs"]  # RFT draws exactly GRPO's samples; the oracle draws none, for GRPO's time
    assert costs["rft"]["samples_drawn"] == costs["grpo"]["samples_drawn"] == 8 * 8 * 8
    assert costs["sft-oracle"]["samples_drawn"] == 0
    assert costs["sft-oracle"]["train_s"] == pytest.approx(costs["grpo"]["train_s"])
    assert len(summary["audit"]["checks"]) == 9 and {"boundary", "strict"} <= set(summary["audit"]["checks"])
    audit = json.loads((out / "audit.json").read_text())
    boundary = next(c for c in audit["checks"] if c["name"] == "boundary")
    assert max(p["k_max"] for p in boundary["evidence"]["pairs"]) == 16  # the large-k evaluation was paired
    html = (out / "report.html").read_text()
    assert "Readiness audit" in html and "data:image/png;base64," in html
    assert "report:" in proc.stdout + proc.stderr
    # stdout is a pipe here: each stage prints lines (rich would draw its bars only at the end)
    assert "1/7 SFT base: started" in proc.stdout and "2/7 GRPO: 8/8 done" in proc.stdout
    assert "GRPO minus it" in proc.stdout and "sft-oracle" in proc.stdout
    for stage in (
        "base",
        "grpo",
        "rft",
        "sft-oracle",
        "evals/base-test",
        "evals/grpo-holdout",
        "evals/rft-test",
        "evals/grpo-test-k16",
    ):
        manifest = json.loads((out / stage / "manifest.json").read_text())
        assert manifest["finished"] and manifest["versions"]["torch"]


def test_line_progress_prints_each_stage_once_per_mark_and_done_once() -> None:
    import io

    from rlvr.demo import LineProgress

    buf = io.StringIO()
    with LineProgress(every=0.25, out=buf) as progress:
        task = progress.add_task("2/6 GRPO", total=8)
        for step in range(1, 9):
            progress.update(task, completed=step, info=f"acc={step / 10:.1f}")
        progress.update(task, completed=8)  # a stage that reports its end twice prints it once
    lines = buf.getvalue().splitlines()
    assert [line.split("] ", 1)[1].split(" (")[0] for line in lines] == [
        "2/6 GRPO: started", "2/6 GRPO: 2/8", "2/6 GRPO: 4/8", "2/6 GRPO: 6/8", "2/6 GRPO: 8/8 done"
    ]  # fmt: skip
    assert lines[-1].endswith("acc=0.8") and all(line.startswith("[") and " s] " in line for line in lines)


def test_the_demo_prints_lines_when_stdout_is_not_a_terminal() -> None:
    from rlvr.demo import LineProgress, _progress

    assert isinstance(_progress(), LineProgress)  # pytest captures stdout: not a terminal
