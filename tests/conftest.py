"""Shared fixtures: a tiny model and tokenizer built in-process and saved to disk, so tests load
them by path exactly as a real model is loaded. Never the network."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rlvr.models.tiny import TinyConfig, build_for_task
from rlvr.tasks import format_prompt, format_target, load_task

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """An untrained 2-layer Llama (hidden 32) with the arith tokenizer, saved in HF format."""
    probs = load_task("arith", "train", n=300)
    texts = [format_prompt(p.question) + format_target(p) for p in probs]
    out = tmp_path_factory.mktemp("tiny") / "model"
    cfg = TinyConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=160)
    return build_for_task(out, texts, cfg, seed=0)
