"""Subprocess smoke runs of every CLI command with tiny settings, as a user would type them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


def rlvr(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "from rlvr.cli import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV, cwd=cwd)


def test_help_lists_only_real_commands() -> None:
    out = rlvr("--help")
    assert out.returncode == 0
    for cmd in ("demo", "sft", "train", "eval", "verify", "data", "review"):
        assert cmd in out.stdout


def test_data_preview() -> None:
    out = rlvr("data", "preview", "arith", "--problems", "2")
    assert out.returncode == 0 and out.stdout.count("#### ") == 2
    bad = rlvr("data", "preview", "arith", "--split", "holdout")
    assert bad.returncode == 2 and "holdout" in bad.stderr


def test_renamed_flags_keep_their_old_spelling_and_name_the_new_one() -> None:
    """One name per meaning: --problems, --samples, --items; the old spellings still work, with a note."""
    old = rlvr("data", "preview", "arith", "--n", "3")
    assert old.returncode == 0 and old.stdout.count("#### ") == 3
    assert "note: --n is now --problems" in old.stderr
    both = rlvr("data", "preview", "arith", "--n", "3", "--problems", "2")
    assert both.returncode == 2 and "--n and --problems are the same flag" in both.stderr
    for args, new in ((["eval", "--n", "2"], "--samples"), (["eval", "--n-problems", "2"], "--problems"),
                      (["judge", ".", "--n", "2"], "--items"), (["review", "export", ".", "--n", "2"], "--items"),
                      (["search", "calibrate", ".", "--n", "3"], "--items")):  # fmt: skip
        command = args[:2] if args[0] in ("review", "search") else args[:1]
        helptext = rlvr(*command, "--help").stdout
        assert new in helptext and " --n " not in helptext, args  # the old spelling is hidden from --help
    ev = rlvr("eval", "--n", "2", "--samples", "3")
    assert ev.returncode == 2 and "--n and --samples are the same flag" in ev.stderr


def test_verify_file(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text(
        json.dumps({"completion": "#### 18", "answer": "x\n#### 18"})
        + "\n"
        + json.dumps({"completion": "18 or 19", "gold": "18"})
        + "\n"
    )
    out = rlvr("verify", str(f))
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert [r["correct"] for r in rows] == [True, False] and rows[1]["reason"] == "hedged answer"
    f.write_text('{"completion": "x"}\n')
    bad = rlvr("verify", str(f))
    assert bad.returncode == 2 and f"{f}:1: field 'gold'" in bad.stderr.replace("\n", "")


@pytest.mark.slow  # about a dozen subprocesses: 139 s on a 2-core host without AVX-512
def test_sft_train_resume_eval_pipeline(tmp_path: Path) -> None:
    sft_cfg = tmp_path / "sft.yaml"
    sft_cfg.write_text(
        "n_train: 60\nsteps: 4\nbatch_size: 4\nlog_every: 2\nthreads: 1\n"
        "tiny: {hidden_size: 32, num_layers: 1, num_heads: 2, intermediate_size: 64}\n"
    )
    out = rlvr("sft", "--config", str(sft_cfg), "--out", str(tmp_path / "base"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "base" / "model" / "config.json").is_file()

    train_cfg = tmp_path / "train.yaml"
    train_cfg.write_text(
        "n_train: 40\nsteps: 2\nprompts_per_step: 2\ngroup_size: 2\nsampling: {max_new_tokens: 8}\neval_every: 0\n"
        "save_every: 1\nthreads: 1\n"
    )
    run = tmp_path / "grpo"
    out = rlvr("train", "--config", str(train_cfg), "--model", str(tmp_path / "base"), "--out", str(run))
    assert out.returncode == 0, out.stderr
    assert "train 2/2" in out.stdout + out.stderr
    # resume a finished run: refused, and nothing in the folder changes
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    out = rlvr("train", "--resume", str(run))
    assert out.returncode == 2 and "the run finished; nothing to resume" in out.stderr, out.stderr
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    cfg_text = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(cfg_text.replace("steps: 2", "steps: 14").replace("lr: 3.0e-05", "lr: 0.1"))
    out = rlvr("train", "--resume", str(run))
    assert out.returncode == 2 and "edited since the run started (lr, steps)" in out.stderr.replace("\n", "")
    (run / "config.yaml").write_text(cfg_text)

    out = rlvr(
        "eval", "--model", str(run), "--problems", "3", "--samples", "2", "--ks", "1,2", "--out", str(tmp_path / "ev")
    )
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert set(result["metrics"]) == {"pass@1", "pass@2", "maj@2", "greedy"}

    # nothing already computed is lost: a failed or refused command leaves each finished folder as it was
    before = {p: p.read_bytes() for d in (run, tmp_path / "ev", tmp_path / "base") for p in d.rglob("*") if p.is_file()}
    refused = [
        (["train", "--model", "/missing", "--out", str(run)], "holds a finished run"),
        (["train", "--model", "/missing", "--out", str(tmp_path / "new")], "/missing: not a model folder"),
        (["train", "--config", str(train_cfg), "--model", str(tmp_path / "base"), "--out", str(run)],
         "holds a finished run"),
        (["eval", "--model", str(run), "--out", str(tmp_path / "ev")], "holds a finished run"),
        (["eval", "--model", "/missing", "--out", str(tmp_path / "new")], "/missing: not a model folder"),
        (["sft", "--config", str(sft_cfg), "--out", str(tmp_path / "base")], "holds a finished run"),
        (["sft", "--steps", "0", "--out", str(tmp_path / "new")], "field 'steps'"),
    ]  # fmt: skip
    for args, message in refused:
        out = rlvr(*args)
        assert out.returncode == 2 and message in out.stderr.replace("\n", ""), (args, out.stderr[-500:])
    after = {p: p.read_bytes() for d in (run, tmp_path / "ev", tmp_path / "base") for p in d.rglob("*") if p.is_file()}
    assert after == before and not (tmp_path / "new").exists()
    out = rlvr("eval", "--model", str(run), "--problems", "2", "--samples", "1", "--ks", "1",
               "--out", str(tmp_path / "ev"), "--overwrite")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "ev" / "eval.json").read_text())["n_problems"] == 2


def test_rewards_check(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text("def reward(completions, **kwargs):\n    return [float('####' in c) for c in completions]\n")
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef reward(completions, **kwargs):\n    return [0.0] * len(completions)\n")
    ok = rlvr("rewards", "check", str(good))
    if ok.returncode == 3:
        pytest.skip("no OS sandbox on this machine")
    assert ok.returncode == 0 and "accepted" in ok.stdout
    out = rlvr("rewards", "check", str(bad))
    assert out.returncode == 1 and "import of 'os' is not allowed" in out.stdout
    named = tmp_path / "named.py"  # the entry point a config names with `function:`
    named.write_text("def score(completions, **kwargs):\n    return [float('####' in c) for c in completions]\n")
    out = rlvr("rewards", "check", str(named), "--function", "score")
    assert out.returncode == 0 and "accepted" in out.stdout, out.stdout + out.stderr
    assert rlvr("rewards", "check", str(named)).returncode == 1  # no `reward` in it
