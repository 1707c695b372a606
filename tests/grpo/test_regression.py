"""Process replay for the trainer: a tiny seeded GRPO run must reproduce a pinned trajectory.

A refactor that changes the loss, the sampler, the data order or the reward plumbing changes these
numbers. If a change is intended, regenerate with `RLVR_UPDATE_PINNED=1 pytest tests/test_regression.py`
and say why in the commit.
"""

import json
import math
import os
from pathlib import Path

from rlvr.config import load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer

PINNED = Path(__file__).parents[1] / "data" / "pinned_grpo.json"
KEYS = ("reward/total/mean", "train/loss", "train/entropy", "train/grad_norm", "train/completion_len/mean")


def _length(completions, **kw):
    return [len(c) / 10 for c in completions]


def test_pinned_trajectory(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from rlvr.rewards import REGISTRY

    monkeypatch.setitem(REGISTRY, "length", lambda p: _length)
    cfg = load_config(
        TrainConfig,
        None,
        {
            "model": str(tiny_model_dir), "out": str(tmp_path / "run"), "n_train": 64, "steps": 4,
            "prompts_per_step": 2, "group_size": 4, "sampling": {"max_new_tokens": 12}, "lr": 1e-2, "eval_every": 0,
            "save_every": 0, "threads": 1, "objective": "grpo", "rewards": [{"name": "length"}, {"name": "outcome"}],
        },
    )  # fmt: skip
    trainer = GRPOTrainer(cfg)
    rows = [trainer.train_step() for _ in range(cfg.steps)]
    got = [{k: r[k] for k in KEYS} for r in rows]
    if os.environ.get("RLVR_UPDATE_PINNED") or not PINNED.exists():
        PINNED.write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(PINNED.read_text())
    for step, (g, w) in enumerate(zip(got, want, strict=True), 1):
        for k in KEYS:
            assert math.isclose(g[k], w[k], rel_tol=1e-4, abs_tol=1e-6), f"step {step} {k}: {g[k]} != pinned {w[k]}"
