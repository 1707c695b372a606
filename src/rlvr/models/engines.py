"""Rollout engines behind one call: rlvr's samplers (`hf`: the model's own forward, `fast`: the
KV-cached fast decoder) and vLLM (`rlvr.models.vllm_engine`). Training, evaluation and screening
sample through `Sampler.sample`, so the choice is one setting (`rollout.engine`, `RolloutConfig`).
vLLM's completions carry `logprobs` (its log-probs of the sampled tokens), which the trainer compares
with its own to correct the mismatch (`rlvr.grpo.correction`).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from typing import Any

import torch

from rlvr.config import RolloutConfig, SamplingConfig
from rlvr.models.decoding import fast_decoder_supported
from rlvr.models.sampling import Completions, encode_prompts, sample

__all__ = ["Sampler", "make_sampler", "resolve_engine"]


def resolve_engine(rollout: RolloutConfig, model: Any, device: str) -> str:
    """The engine `auto` stands for: vLLM on CUDA when installed, else `fast` where the architecture
    allows, else `hf`. An explicit `fast` the model does not support is a ValueError."""
    engine = rollout.engine
    if engine == "auto":
        if device.startswith("cuda") and importlib.util.find_spec("vllm") is not None:
            return "vllm"
        return "fast" if fast_decoder_supported(model) else "hf"
    if engine == "fast" and not fast_decoder_supported(model):
        raise ValueError(f"rollout.engine 'fast' does not support {type(model).__name__}; use 'hf' or 'auto'")
    return engine


class Sampler:
    """Samples completions with one engine; `engine` is `hf`, `fast` or `vllm`."""

    def __init__(self, engine: str, vllm: Any = None) -> None:
        self.engine, self.vllm = engine, vllm

    def sample(
        self,
        model,
        tok,
        prompts: Sequence[str] | Sequence[Sequence[int]],
        n: int,
        sampling: SamplingConfig,
        *,
        end_ids: Sequence[int],
        greedy: bool = False,
        generator: torch.Generator | None = None,
        seed: int = 0,
        row_offset: int = 0,
        total_rows: int | None = None,
        rows: Sequence[int] | None = None,
        entropy: bool = False,
        bf16: bool = False,
        chunk_size: int = 128,
    ) -> Completions:
        """`n` completions per prompt with `sampling`, passed whole to the engine (`greedy`: argmax). The
        local engines draw as `rlvr.models.sampling.sample` does; vLLM seeds its requests from the same
        stream (`generator`, else `seed`), so every rank's stream stays in step."""
        if self.vllm is None:
            return sample(
                model,
                tok,
                prompts,
                n,
                sampling,
                greedy=greedy,
                stop_ids=end_ids,
                generator=generator,
                seed=seed,
                row_offset=row_offset,
                total_rows=total_rows,
                rows=rows,
                entropy=entropy,
                bf16=bf16,
                chunk_size=chunk_size,
                fast=self.engine == "fast",
            )
        base = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else seed
        out = self.vllm.generate(
            encode_prompts(tok, prompts),
            n,
            sampling,
            greedy=greedy,
            stop_ids=list(end_ids),
            seed=base + (rows[0] if rows else row_offset),
            tokenizer=tok,
        )
        if entropy:  # vLLM reports no entropy of the sampling distribution
            out.entropy = [math.nan] * len(out.tokens)
        return out

    def sync(self, model, step: int | None = None) -> None:
        """Make the next `sample` use `model`'s current weights (vLLM: push them; else nothing to do)."""
        if self.vllm is not None:
            self.vllm.load_weights(model, step=step)

    @property
    def synced_step(self) -> int | None:
        return None if self.vllm is None else self.vllm.synced_step

    def close(self) -> None:
        if self.vllm is not None:
            self.vllm.close()


def make_sampler(rollout: RolloutConfig, model: Any, model_path, *, device: str, dtype: str, seed: int) -> Sampler:
    """The configured engine for `model` (loaded from `model_path`, which vLLM loads again itself)."""
    engine = resolve_engine(rollout, model, device)
    if engine != "vllm":
        return Sampler(engine)
    from rlvr.models.vllm_engine import VLLMEngine

    vllm = VLLMEngine(
        model_path,
        dtype=dtype,
        gpu_memory_utilization=rollout.gpu_memory_utilization,
        enforce_eager=rollout.enforce_eager,
        max_model_len=rollout.max_model_len,
        seed=seed,
        **rollout.vllm_kwargs,
    )
    return Sampler("vllm", vllm)
