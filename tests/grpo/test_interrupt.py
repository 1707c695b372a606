"""Interruption is a checkpoint, not a loss: SIGTERM at a random step of `rlvr train` saves, says how
to resume, exits 143, and the resumed run ends with the uninterrupted run's weights; a second signal
exits at once; a `--resume` that cannot go on changes no byte."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


def _rlvr(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlvr", *args]


def _config(tmp_path: Path, model: Path, steps: int) -> Path:
    (tmp_path / "lengthy.py").write_text(
        "def reward(completions, **kw):\n    return [len(c) / 40 for c in completions]\n"
    )
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        model: {model}
        n_train: 64
        steps: {steps}
        prompts_per_step: 2
        group_size: 4
        sampling: {{max_new_tokens: 10}}
        lr: 1.0e-3
        eval_every: 0
        save_every: 0
        threads: 1
        rewards: [{{file: {tmp_path / "lengthy.py"}}}]
    """)
    )
    return cfg


def _rows(run: Path) -> int:
    try:
        return len((run / "metrics.jsonl").read_text().splitlines())
    except FileNotFoundError:
        return 0


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(run / "model" / "model.safetensors")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def test_sigterm_at_a_random_step_then_resume_equals_the_uninterrupted_run(tmp_path, tiny_model_dir):
    steps = 14
    cfg = _config(tmp_path, tiny_model_dir, steps)
    straight = subprocess.run(_rlvr("train", "--config", str(cfg), "--out", str(tmp_path / "a")),
                              capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
    assert straight.returncode == 0, straight.stderr

    run = tmp_path / "b"
    at = random.Random(os.getpid()).randint(2, steps - 4)
    p = subprocess.Popen(_rlvr("train", "--config", str(cfg), "--out", str(run)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)  # fmt: skip
    deadline = time.time() + 120
    while _rows(run) < at and p.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    manifest = json.loads((run / "manifest.json").read_text())
    stopped = manifest["interrupted"]["step"]
    assert not manifest.get("finished") and manifest["interrupted"]["signal"] == "SIGTERM"
    assert at <= stopped < steps and _rows(run) == stopped
    assert (run / "checkpoints" / f"step-{stopped:06d}" / "trainer_state.pt").is_file()
    said = [ln for ln in err.splitlines() if ln.startswith("stopped:")]
    assert said == [f"stopped: interrupted by SIGTERM at step {stopped} of {steps} (checkpoint saved); "
                    f"resume with: rlvr train --resume {run}"], err  # fmt: skip

    resumed = subprocess.run(_rlvr("train", "--resume", str(run)), capture_output=True, text=True, env=ENV, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["finished"] is True and manifest["interrupted"] is None
    a, b = _weights(tmp_path / "a"), _weights(run)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], load_file(tiny_model_dir / "model.safetensors")[k]) for k in a)  # it learned

    # a --resume of the finished run is refused and changes no byte
    before = _snapshot(run)
    again = subprocess.run(_rlvr("train", "--resume", str(run)), capture_output=True, text=True, env=ENV, timeout=120)
    assert again.returncode == 2 and "the run finished; nothing to resume" in again.stderr
    assert _snapshot(run) == before


def test_a_resume_without_a_checkpoint_changes_no_byte(tmp_path, tiny_model_dir):
    cfg = _config(tmp_path, tiny_model_dir, 3)
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.yaml").write_text(cfg.read_text().replace("n_train", f"out: {run}\nn_train"))
    (run / "manifest.json").write_text(json.dumps({"command": "train", "finished": False}))
    before = _snapshot(run)
    out = subprocess.run(_rlvr("train", "--resume", str(run)), capture_output=True, text=True, env=ENV, timeout=120)
    assert out.returncode == 2 and "no checkpoint to resume from" in out.stderr, out.stderr
    assert _snapshot(run) == before


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_the_first_signal_asks_the_second_exits_at_once(sig, code):
    script = textwrap.dedent("""
        import time
        from rlvr.interrupt import StopRequest
        with StopRequest() as stop:
            print("ready", flush=True)
            while stop.signum is None:
                time.sleep(0.01)
            print("asked", stop.signum, flush=True)
            time.sleep(60)  # the unit that will not finish
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    p.send_signal(sig)
    assert p.stdout.readline().split() == ["asked", str(int(sig))]
    t0 = time.time()
    p.send_signal(sig)
    p.wait(timeout=10)
    assert p.returncode == code and time.time() - t0 < 5
    assert "exiting now; the last checkpoint stays" in (p.stderr.read() if p.stderr else "")


def _stop_at(cmd: list[str], ready, sig=signal.SIGTERM) -> tuple[int, str]:
    """Run `cmd`, send `sig` once `ready()` holds, and return (exit code, stderr)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.time() + 120
    while not ready() and p.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    return p.returncode, err


@pytest.mark.slow  # half a minute: an sft and an eval subprocess
def test_sft_stops_with_its_model_so_far_and_eval_abandons_cleanly(tmp_path, tiny_model_dir):
    run = tmp_path / "sft"
    tiny = "{hidden_size: 16, num_layers: 1, num_heads: 2, intermediate_size: 32}"
    (tmp_path / "sft.yaml").write_text(f"steps: 400\nlog_every: 1\nthreads: 1\ntiny: {tiny}\n")
    code, err = _stop_at(_rlvr("sft", "--config", str(tmp_path / "sft.yaml"), "--out", str(run)),
                         lambda: _rows(run) >= 3, signal.SIGINT)  # fmt: skip
    assert code == 130, err
    manifest = json.loads((run / "manifest.json").read_text())
    step = manifest["interrupted"]["step"]
    assert 3 <= step < 400 and manifest["steps_done"] == step and not manifest.get("finished")
    assert (run / "model" / "config.json").is_file()
    assert [ln for ln in err.splitlines() if ln.startswith("stopped:")] == [
        f"stopped: interrupted by SIGINT at step {step} of 400 (the model so far is in {run / 'model'}); "
        f"rerun with: rlvr sft --config {run / 'config.yaml'} --overwrite"
    ]

    ev = tmp_path / "ev"
    code, err = _stop_at(_rlvr("eval", "--model", str(tiny_model_dir), "--problems", "400", "--samples", "16",
                               "--max-new-tokens", "40", "--out", str(ev)),
                         lambda: (ev / "manifest.json").exists())  # fmt: skip
    assert code == 143, err
    manifest = json.loads((ev / "manifest.json").read_text())
    assert manifest["interrupted"] == {"signal": "SIGTERM"} and not manifest.get("finished")
    assert not (ev / "eval.json").exists()
    assert f"rerun with: rlvr eval --config {ev / 'config.yaml'} --overwrite" in err


def test_jobs_stop_between_units_and_the_rest_wait_for_resume():
    from rlvr.interrupt import Interrupted
    from rlvr.search.executor import run_jobs

    class Job:
        def __init__(self, key):
            self.key = key

    done = []

    def fn(job):
        if job.key == "j1":
            os.kill(os.getpid(), signal.SIGTERM)  # arrives while the unit runs; the unit still finishes
        return job.key

    with pytest.raises(Interrupted) as e:
        run_jobs([Job(f"j{i}") for i in range(4)], lambda j, r: done.append(r), workers=0, fn=fn)
    assert done == ["j0", "j1"] and e.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone again
