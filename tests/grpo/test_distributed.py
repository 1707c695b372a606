"""Data-parallel training with 2 CPU ranks on gloo (`torchrun --nproc-per-node 2 -m rlvr train`):
the weights after 2 steps equal one process's at the same global batch, for every aggregation and
with dynamic sampling; rank 0 alone writes the run folder; a resumed 2-rank run reproduces the
uninterrupted one. Sharded training (`distributed.strategy: fsdp`, the tests at the end): the weights
equal one process's (GRPO with a KL term, Dr. GRPO, LoRA); a checkpoint in DCP's sharded format written
by 2 ranks resumes on 2 and on 1 (no torchrun) and reproduces the uninterrupted run; SIGTERM checkpoints
and resumes as under ddp."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from rlvr.config import load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _config(tmp: Path, model: Path, out: str, **kw) -> Path:
    cfg = {
        "model": str(model), "n_train": 32, "steps": 2, "prompts_per_step": 4, "group_size": 4,
        "sampling": {"max_new_tokens": 10}, "lr": 1e-3, "threads": 1, "eval_every": 0, "save_every": 0,
        "micro_batch_size": 8, "out": str(tmp / out), **kw,
    }  # fmt: skip
    path = tmp / f"{out}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _torchrun(*args: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "rlvr",
        "train",
    ]
    r = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 0, r.stderr[-3000:]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(run / "model" / "model.safetensors")


def _metrics(run: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


def _assert_same(a: Path, b: Path) -> None:
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        torch.testing.assert_close(wb[k], wa[k], atol=1e-5, rtol=0, msg=k)
    ma, mb = _metrics(a), _metrics(b)
    assert [r["step"] for r in mb] == [r["step"] for r in ma]
    for ra, rb in zip(ma, mb, strict=True):
        for k in ("reward/outcome/mean", "train/accuracy", "train/completion_len/mean", "train/zero_std_frac"):
            assert rb[k] == pytest.approx(ra[k], nan_ok=True), k
        assert rb["train/loss"] == pytest.approx(ra["train/loss"], abs=1e-5)


@pytest.mark.parametrize(
    "objective",
    [
        {"aggregation": "token_mean", "beta": 0.0},
        {"aggregation": "seq_mean_token_mean", "beta": 0.04},
        pytest.param(
            {"aggregation": "seq_mean_token_sum_norm", "beta": 0.0, "advantage_scale": "batch"}, marks=pytest.mark.slow
        ),
        pytest.param({"aggregation": "token_mean", "beta": 0.0, "dynamic_sampling": True}, marks=pytest.mark.slow),
    ],
    ids=["token_mean", "seq_mean_token_mean-kl", "seq_mean_token_sum_norm-batch", "dynamic_sampling"],
)
def test_two_ranks_equal_one_process_at_the_same_global_batch(tmp_path, tiny_model_dir, objective) -> None:
    one = _config(tmp_path, tiny_model_dir, "one", objective_overrides=objective)
    GRPOTrainer(load_config(TrainConfig, one)).train()
    two = _config(tmp_path, tiny_model_dir, "two", objective_overrides=objective)
    _torchrun("--config", str(two))
    _assert_same(tmp_path / "one", tmp_path / "two")
    manifest = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert manifest["world_size"] == 2 and manifest["finished"]
    rows = (tmp_path / "two" / "samples" / "train.jsonl").read_text().splitlines()
    assert len(rows) == 2 * 4 * 4  # written once (rank 0), every completion of both ranks


def test_two_ranks_log_every_statistic_one_process_logs(tmp_path, tiny_model_dir) -> None:
    """GSPO with two updates per rollout: every `train/` statistic (token shares, GSPO's sequence share
    `seq_clip_frac`, ratio extremes, loss, entropy) merged over 2 ranks equals one process's."""
    reward = tmp_path / "length.py"  # the untrained model's outcome is always 0: a reward that varies in every group
    reward.write_text("def length(completions, **kw):\n    return [len(c) / 100 for c in completions]\n")
    objective = {"beta": 0.0, "eps_low": 0.05, "eps_high": 0.05}  # wide enough that only some sequences clip
    rewards = [{"name": "outcome", "weight": 0.0}, {"file": str(reward), "function": "length"}]
    kw = {"objective": "gspo", "num_iterations": 2, "objective_overrides": objective, "rewards": rewards}
    GRPOTrainer(load_config(TrainConfig, _config(tmp_path, tiny_model_dir, "one", **kw))).train()
    _torchrun("--config", str(_config(tmp_path, tiny_model_dir, "two", **kw)))
    _assert_same(tmp_path / "one", tmp_path / "two")
    for ra, rb in zip(_metrics(tmp_path / "one"), _metrics(tmp_path / "two"), strict=True):
        keys = {k for k in ra if k.startswith("train/") and isinstance(ra[k], float)}
        assert "train/seq_clip_frac" in keys and keys <= set(rb), sorted(keys - set(rb))
        for k in sorted(keys):
            assert rb[k] == pytest.approx(ra[k], rel=1e-4, abs=1e-5), k


def test_resume_with_two_ranks_reproduces_the_uninterrupted_run(tmp_path, tiny_model_dir) -> None:
    full = _config(tmp_path, tiny_model_dir, "full", steps=4, save_every=2)
    _torchrun("--config", str(full))
    cut = tmp_path / "cut"  # the run as it stood when killed after the step-2 checkpoint
    shutil.copytree(tmp_path / "full", cut)
    shutil.rmtree(cut / "checkpoints" / "step-000004")
    shutil.rmtree(cut / "model")
    manifest = json.loads((cut / "manifest.json").read_text())
    (cut / "manifest.json").write_text(json.dumps({**manifest, "finished": False}))  # killed before the end
    _torchrun("--resume", str(cut))
    _assert_same(tmp_path / "full", cut)


@pytest.mark.slow  # about a minute: three torchrun launches
def test_sigterm_stops_both_ranks_at_the_same_step_and_resume_finishes(tmp_path, tiny_model_dir) -> None:
    """A scheduler's SIGTERM to torchrun reaches every rank; they agree on the step to stop at, rank 0
    saves that checkpoint, and a 2-rank `--resume` ends with the uninterrupted run's weights."""
    import signal
    import time

    full = _config(tmp_path, tiny_model_dir, "full", steps=30)
    _torchrun("--config", str(full))
    cut = _config(tmp_path, tiny_model_dir, "cut", steps=30)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "rlvr",
           "train", "--config", str(cut)]  # fmt: skip
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    metrics, deadline = tmp_path / "cut" / "metrics.jsonl", time.time() + 300
    while p.poll() is None and time.time() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=300)
    manifest = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    stopped = manifest["interrupted"]["step"]
    assert 3 <= stopped < 30, err[-2000:]
    assert (tmp_path / "cut" / "checkpoints" / f"step-{stopped:06d}" / "trainer_state.pt").is_file()
    assert len(metrics.read_text().splitlines()) == stopped
    _torchrun("--resume", str(tmp_path / "cut"))
    a, b = _weights(tmp_path / "full"), _weights(tmp_path / "cut")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_two_ranks_equal_one_process_with_an_environment(tmp_path, calculator_model) -> None:
    """Multi-turn conversations: each rank runs its block, every rank keeps sampling until no rank has
    a conversation left; weights, rewards and `env/` statistics equal one process's."""
    env = {"factory": "rlvr.envs.calculator:Calculator", "limits": {"max_turns": 3, "max_total_tokens": 96}}
    kw = {"env": env, "sampling": {"max_new_tokens": 32}, "objective_overrides": {"beta": 0.0}, "preset": "small"}
    reward = tmp_path / "calls.py"  # the untrained model's outcome is always 0: reward the turns taken
    reward.write_text("def calls(completions, **kw):\n    return [len(c) / 4 for c in completions]\n")
    kw["rewards"] = [{"name": "outcome", "weight": 0.0}, {"file": str(reward), "function": "calls"}]
    model = calculator_model(32)
    GRPOTrainer(load_config(TrainConfig, _config(tmp_path, model, "one", **kw))).train()
    _torchrun("--config", str(_config(tmp_path, model, "two", **kw)))
    _assert_same(tmp_path / "one", tmp_path / "two")
    ma, mb = _metrics(tmp_path / "one"), _metrics(tmp_path / "two")
    for ra, rb in zip(ma, mb, strict=True):
        for k in (k for k in ra if k.startswith("env/")):
            assert rb[k] == pytest.approx(ra[k], nan_ok=True), k
    rows = [json.loads(x) for x in (tmp_path / "two" / "samples" / "train.jsonl").read_text().splitlines()]
    turns = [sum(m["role"] == "assistant" for m in r["messages"]) for r in rows]
    assert len(rows) == 2 * 4 * 4 and max(turns) >= 2  # conversations went on after their first turn


# ------------------------------------------------------------------ fsdp
FSDP = {"distributed": {"strategy": "fsdp"}}


def _cut(run: Path, cut: Path, keep: int) -> None:
    """`cut` is `run` as it stood when killed after its step-`keep` checkpoint."""
    shutil.copytree(run, cut)
    for ck in (cut / "checkpoints").glob("step-*"):
        if int(ck.name[5:]) > keep:
            shutil.rmtree(ck)
    shutil.rmtree(cut / "model")
    manifest = json.loads((cut / "manifest.json").read_text())
    (cut / "manifest.json").write_text(json.dumps({**manifest, "finished": False}))
    rows = (cut / "metrics.jsonl").read_text().splitlines()[:keep]
    (cut / "metrics.jsonl").write_text("".join(r + "\n" for r in rows))


@pytest.mark.slow  # each case: one process and a 2-rank torchrun, ~30 s on 2 cores
@pytest.mark.parametrize(
    "kw",
    [
        {"objective": "grpo", "objective_overrides": {"beta": 0.04}},
        {"objective": "dr_grpo", "micro_batch_size": 2},
        {
            "objective": "grpo",
            "objective_overrides": {"beta": 0.04},
            "lora": {"r": 4, "target_modules": ["q_proj", "v_proj"]},
        },
    ],
    ids=["grpo-kl", "dr_grpo", "lora-kl"],
)
def test_fsdp_two_ranks_equal_one_process(tmp_path, tiny_model_dir, kw) -> None:
    """The untrained model's outcome is always 0: a length reward that is constant for some prompts, so
    that without a KL term the ranks run different numbers of micro-batches (the others pad)."""
    reward = tmp_path / "length.py"
    reward.write_text(
        "def length(completions, prompts, **kw):\n"
        "    return [len(c) / 100 if len(p) % 3 else 0.0 for c, p in zip(completions, prompts)]\n"
    )
    kw = {**kw, "rewards": [{"name": "outcome", "weight": 0.0}, {"file": str(reward), "function": "length"}]}
    GRPOTrainer(load_config(TrainConfig, _config(tmp_path, tiny_model_dir, "one", steps=3, **kw))).train()
    _torchrun("--config", str(_config(tmp_path, tiny_model_dir, "two", steps=3, **kw, **FSDP)))
    _assert_same(tmp_path / "one", tmp_path / "two")
    ck = tmp_path / "two" / "checkpoints" / "step-000003"
    assert sorted(p.name for p in (ck / "dcp").iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert not list(ck.glob("*.safetensors"))  # the weights live in the shards only
    assert json.loads((tmp_path / "two" / "manifest.json").read_text())["world_size"] == 2


@pytest.mark.slow  # three torchrun launches and a one-process resume, ~1.5 min on 2 cores
def test_fsdp_checkpoint_from_two_ranks_resumes_on_two_and_on_one(tmp_path, tiny_model_dir) -> None:
    kw = {"objective_overrides": {"beta": 0.04}, **FSDP}
    _torchrun("--config", str(_config(tmp_path, tiny_model_dir, "full", steps=4, save_every=2, **kw)))
    _cut(tmp_path / "full", tmp_path / "two", keep=2)
    _torchrun("--resume", str(tmp_path / "two"))
    _assert_same(tmp_path / "full", tmp_path / "two")
    _cut(tmp_path / "full", tmp_path / "one", keep=2)
    r = subprocess.run(
        [sys.executable, "-m", "rlvr", "train", "--resume", str(tmp_path / "one")],
        capture_output=True, text=True, timeout=600, env=ENV,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    _assert_same(tmp_path / "full", tmp_path / "one")
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["world_size"] == 1 and manifest["finished"]
    # the one-process run wrote its own sharded checkpoint: one shard file
    assert sorted(p.name for p in (tmp_path / "one" / "checkpoints" / "step-000004" / "dcp").iterdir()) == [
        ".metadata",
        "__0_0.distcp",
    ]


@pytest.mark.slow  # about a minute: three torchrun launches
def test_fsdp_sigterm_checkpoints_and_resume_finishes(tmp_path, tiny_model_dir) -> None:
    _torchrun("--config", str(_config(tmp_path, tiny_model_dir, "full", steps=12, **FSDP)))
    cut = _config(tmp_path, tiny_model_dir, "cut", steps=12, **FSDP)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "rlvr",
           "train", "--config", str(cut)]  # fmt: skip
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    metrics, deadline = tmp_path / "cut" / "metrics.jsonl", time.time() + 300
    while p.poll() is None and time.time() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=300)
    manifest = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    stopped = manifest["interrupted"]["step"]
    assert 3 <= stopped < 12, err[-2000:]
    ck = tmp_path / "cut" / "checkpoints" / f"step-{stopped:06d}"
    assert (ck / "trainer_state.pt").is_file() and (ck / "dcp" / ".metadata").is_file()
    assert len(metrics.read_text().splitlines()) == stopped
    _torchrun("--resume", str(tmp_path / "cut"))
    a, b = _weights(tmp_path / "full"), _weights(tmp_path / "cut")
    for k in a:
        torch.testing.assert_close(b[k], a[k], atol=1e-6, rtol=0, msg=k)
