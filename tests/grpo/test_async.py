"""Asynchronous rollouts (`rollout.async`, `rlvr.grpo.async_rollout`) on the tiny model: staleness 0 is the
synchronous trainer bit for bit; with staleness 1 batch t is drawn from version max(0, t - 1), every
sample says so, and the stale batches carry the behaviour log-probs the correction weighs; a checkpoint
keeps the batches in flight, so a resumed run (in-process or after SIGTERM) equals the uninterrupted one."""

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

from rlvr.config import load_config
from rlvr.grpo.async_rollout import Intervals, overlap_seconds
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer

LENGTHY = "def reward(completions, **kw):\n    return [len(c) / 40 for c in completions]\n"
TIMING = ("time/", "async/overlap_s", "async/trainer_wait_s", "async/worker_idle_s", "async/publish_s")


def _cfg(model: Path, out: Path, **kw) -> TrainConfig:
    lengthy = out.parent / "lengthy.py"  # a reward that differs within every group: each step learns
    lengthy.write_text(LENGTHY)
    base = {
        "model": str(model),
        "out": str(out),
        "n_train": 64,
        "steps": 6,
        "prompts_per_step": 2,
        "group_size": 4,
        "sampling": {"max_new_tokens": 10},
        "micro_batch_size": 3,
        "lr": 1e-2,
        "eval_every": 3,
        "eval_n": 4,
        "eval_samples": 2,
        "save_every": 3,
        "threads": 1,
        "rewards": [{"name": "outcome"}, {"file": str(lengthy)}],
    }
    base.update(kw)
    return load_config(TrainConfig, None, base)


def _async(k: int) -> dict:
    return {"rollout": {"async": True, "max_staleness": k}}


def _metrics(run: Path, drop: tuple[str, ...] = TIMING) -> list[dict]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(drop)} for r in rows]


def _samples(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "samples" / "train.jsonl").read_text().splitlines()]


def _same_weights(a: GRPOTrainer, b: GRPOTrainer) -> None:
    for (na, pa), (nb, pb) in zip(a.model.named_parameters(), b.model.named_parameters(), strict=True):
        assert na == nb and torch.equal(pa, pb), na


def test_staleness_0_is_the_synchronous_trainer_bit_for_bit(tiny_model_dir: Path, tmp_path: Path) -> None:
    sync = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "sync"))
    sync.train()
    asy = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "async", **_async(0)))
    asy.train()
    a, b = _metrics(tmp_path / "sync"), _metrics(tmp_path / "async", (*TIMING, "async/"))
    assert a == b  # losses, rewards, gradient norms, evaluations: equal floats, not close ones
    assert {r["async/staleness/max"] for r in _metrics(tmp_path / "async")} == {0.0}
    assert _samples(tmp_path / "sync") == _samples(tmp_path / "async")
    _same_weights(sync, asy)
    wa = load_file(tmp_path / "sync" / "model" / "model.safetensors")
    wb = load_file(tmp_path / "async" / "model" / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_staleness_1_draws_each_batch_one_version_behind(tiny_model_dir: Path, tmp_path: Path) -> None:
    run = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "a", eval_every=0, **_async(1)))
    seen: list[tuple[int, int, bool]] = []
    update = run._update

    def spy(ro):  # what each update got: its version, the batch's, and the behaviour log-probs
        seen.append((run.step, ro.policy_version, ro.rollout_logp is not None))
        return update(ro)

    run._update = spy
    run.train()
    assert seen == [(0, 0, False)] + [(t, t - 1, True) for t in range(1, 6)]
    rows = _samples(tmp_path / "a")
    assert {(r["step"], r["policy_version"]) for r in rows} == {(1, 0)} | {(t, t - 2) for t in range(2, 7)}
    assert all(r["step"] - 1 - r["policy_version"] <= 1 for r in rows)  # at most one version behind
    m = _metrics(tmp_path / "a", ())
    assert [r["async/staleness/max"] for r in m] == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert [r["async/policy_version"] for r in m] == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    for r in m[1:]:  # a stale batch is corrected: the trainer's log-probs against the behaviour's
        assert r["rollout/logprob_diff/mean"] > 0 and 0.0 <= r["rollout/is_clip_frac"] <= 1.0
        assert r["async/overlap_s"] >= 0 and r["async/worker_idle_s"] >= 0
    assert "rollout/logprob_diff/mean" not in m[0]  # staleness 0: the synchronous loss, no correction


def test_async_resume_equals_the_uninterrupted_run(tiny_model_dir: Path, tmp_path: Path) -> None:
    straight = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "a", **_async(1)))
    straight.train()

    first = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "b", **_async(1)))
    for _ in range(3):
        first.run.log(first.train_step())
    first.save_checkpoint()  # keeps the batch drawn from version 2 for update 3
    first.run.log(first.train_step())  # a step after the checkpoint that the resume must discard
    assert first.rollouts is not None
    first.rollouts.close()
    first.run.close()
    del first
    resumed = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "b", **_async(1)), resume=True)
    assert resumed.step == 3
    resumed.train()
    assert _metrics(tmp_path / "a") == _metrics(tmp_path / "b")
    assert _samples(tmp_path / "a") == _samples(tmp_path / "b")
    _same_weights(straight, resumed)


def test_async_with_an_unsupported_engine_is_one_line_exit_2(tmp_path: Path, monkeypatch, capsys) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text("rollout:\n  engine: vllm\n  async: true\n")
    monkeypatch.setattr(sys, "argv", ["rlvr", "train", "--config", str(cfg), "--out", str(tmp_path / "r")])
    from rlvr.cli import main

    with pytest.raises(SystemExit) as e:
        main()
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "\n" not in err and "rollout.async" in err and str(cfg) in err, err
    assert not (tmp_path / "r").exists()


def test_overlap_counts_busy_seconds_inside_a_window() -> None:
    assert overlap_seconds([(0.0, 1.0), (2.0, 3.0)], 0.5, 2.5) == 1.0
    iv = Intervals()
    iv.start()
    time.sleep(0.01)
    iv.stop()
    now = time.perf_counter()
    assert 0.005 < iv.busy(now - 10, now) < 1.0 and iv.busy(now, now + 1) == 0.0


ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


def _rlvr(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlvr", *args]


@pytest.mark.slow  # three training subprocesses
def test_sigterm_with_async_then_resume_equals_the_uninterrupted_run(tmp_path: Path, tiny_model_dir: Path) -> None:
    steps = 12
    (tmp_path / "lengthy.py").write_text(LENGTHY)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        model: {tiny_model_dir}
        n_train: 64
        steps: {steps}
        prompts_per_step: 2
        group_size: 4
        sampling: {{max_new_tokens: 10}}
        lr: 1.0e-2
        eval_every: 0
        save_every: 0
        threads: 1
        rollout: {{async: true, max_staleness: 1}}
        rewards: [{{file: {tmp_path / "lengthy.py"}}}]
    """)
    )
    straight = subprocess.run(_rlvr("train", "--config", str(cfg), "--out", str(tmp_path / "a")),
                              capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
    assert straight.returncode == 0, straight.stderr
    run = tmp_path / "b"
    at = random.Random(os.getpid()).randint(2, steps - 4)
    p = subprocess.Popen(_rlvr("train", "--config", str(cfg), "--out", str(run)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)  # fmt: skip
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        rows = (run / "metrics.jsonl").read_text().splitlines() if (run / "metrics.jsonl").exists() else []
        if len(rows) >= at:
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    stopped = json.loads((run / "manifest.json").read_text())["interrupted"]["step"]
    assert at <= stopped < steps
    saved = torch.load(run / "checkpoints" / f"step-{stopped:06d}" / "trainer_state.pt", weights_only=False)
    # the batches in flight are kept: the one the next update takes, and the one after it when the worker
    # had already drawn it from the checkpoint's own weights (max_staleness 1 allows both)
    pending = [b.index for b in saved["async_rollouts"]["pending"]]
    assert pending in ([stopped], [stopped, stopped + 1]), pending
    assert [ln for ln in err.splitlines() if ln.startswith("stopped:")], err
    again = subprocess.run(_rlvr("train", "--resume", str(run)), capture_output=True, text=True, env=ENV, timeout=300)
    assert again.returncode == 0, again.stderr
    wa, wb = load_file(tmp_path / "a" / "model" / "model.safetensors"), load_file(run / "model" / "model.safetensors")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert _metrics(tmp_path / "a") == _metrics(run)
