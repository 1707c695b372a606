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
    assert len(summary["audit"]["checks"]) == 7
    html = (out / "report.html").read_text()
    assert "Readiness audit" in html and "data:image/png;base64," in html
    assert "report:" in proc.stdout + proc.stderr
    for stage in ("base", "grpo", "evals/base-test", "evals/grpo-holdout"):
        manifest = json.loads((out / stage / "manifest.json").read_text())
        assert manifest["finished"] and manifest["versions"]["torch"]
