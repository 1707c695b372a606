"""Sharded data parallelism with FSDP2 (`distributed.strategy: fsdp`): parameters, gradients and AdamW
state split over the ranks (`torch.distributed.fsdp.fully_shard` per decoder layer and at the root),
checkpoints in `torch.distributed.checkpoint`'s sharded format, and the full weights gathered once a
step (one parameter at a time) into an unsharded rollout copy for sampling, evaluation, vLLM syncs
and the final `model/`.

Why a rollout copy and not `unshard()`: the decoders (fast, HF `generate`, vLLM) read whole weights,
and the ranks sample different numbers of tokens, so a forward of the sharded model (a collective per
layer) would deadlock; one all-gather per step into a plain module keeps sampling rank-local.

Every forward and backward of a sharded module is a collective, so every rank must run the same
number of them: `pad_count` says how many micro-batches the busiest rank runs, and the others run
`dummy_backward` (a zero loss through the whole model) to match. docs/scaling.md has the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

__all__ = [
    "decoder_layers",
    "shard_model",
    "gather_into",
    "pad_count",
    "dummy_backward",
    "grad_norm",
    "save_sharded",
    "load_sharded",
    "local_bytes",
    "DCP_DIR",
]

DCP_DIR = "dcp"  # a checkpoint's sharded model + optimizer state, under checkpoints/step-N/


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's repeated blocks: the modules whose class an HF model names in `_no_split_modules`
    (`LlamaDecoderLayer`, ...), found through a peft wrapper too.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=3,
    ...     num_attention_heads=2, num_key_value_heads=2, vocab_size=50))
    >>> [type(x).__name__ for x in decoder_layers(m)]
    ['LlamaDecoderLayer', 'LlamaDecoderLayer', 'LlamaDecoderLayer']
    """
    names: set[str] = set()
    for m in model.modules():
        names |= set(getattr(m, "_no_split_modules", None) or [])
    layers = [m for m in model.modules() if type(m).__name__ in names]
    if not layers:
        raise ValueError(f"{type(model).__name__}: no decoder layers found (_no_split_modules) to shard")
    return layers


def shard_model(model: torch.nn.Module, *, bf16: bool) -> torch.nn.Module:
    """`fully_shard` each decoder layer, then the root (embeddings, final norm, head), in place.
    Mixed precision: with `bf16` the layers compute in bfloat16 from float32 shards (FSDP casts the
    gathered weights), otherwise in the weights' own dtype; gradients are reduced in float32. The
    gradient reduction is a plain sum (no division by the world size): each rank's loss is already its
    share of the global loss, as under ddp."""
    from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if bf16 else None, reduce_dtype=torch.float32)
    for layer in decoder_layers(model):
        fully_shard(layer, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    for m in model.modules():
        if isinstance(m, FSDPModule):
            m.set_force_sum_reduction_for_comms(True)  # a SUM collective (gloo has no AVG/PREMUL_SUM)
            m.set_gradient_divide_factor(1.0)
    return model


def gather_into(dst: torch.nn.Module, src: torch.nn.Module) -> None:
    """Copy the sharded `src`'s trained parameters, gathered whole, into the unsharded `dst` of the
    same structure (its rollout copy), in place. A collective: every rank calls it. One parameter is
    gathered at a time, so the transient memory is one whole parameter, not a whole state dict
    (`get_model_state_dict(full_state_dict=True)` would hold every gathered tensor at once). Frozen
    parameters (LoRA's base) never change and are not gathered."""
    own = dst.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, p in src.named_parameters():
            if not p.requires_grad:
                continue
            if name not in own:
                raise KeyError(f"rollout copy: no tensor {name!r}")
            full = p.full_tensor() if hasattr(p, "full_tensor") else p
            own[name].copy_(full)


def pad_count(n: int, world: int) -> int:
    """The number of micro-batches every rank runs: the most any rank has (a collective)."""
    if world == 1:
        return n
    t = torch.tensor([n])
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return int(t.item())


def dummy_backward(logits: torch.Tensor) -> None:
    """A backward through the whole sharded model that adds nothing to any gradient, so that a rank
    with fewer micro-batches joins the others' reduce-scatters."""
    (logits.sum() * 0.0).backward()


def grad_norm(params: list[torch.nn.Parameter], clip: float) -> float:
    """`clip_grad_norm_` over sharded (DTensor) gradients: the norm of the whole gradient, the same on
    every rank, and every shard scaled by the same factor."""
    total = torch.nn.utils.clip_grad_norm_(params, clip)
    full = getattr(total, "full_tensor", None)
    return float(full() if full is not None else total)


def save_sharded(model: torch.nn.Module, opt: torch.optim.Optimizer, folder: Path) -> None:
    """Model and optimizer state in DCP's sharded format: each rank writes its shards (a collective;
    one process without a process group writes them all)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_sd, optim_sd = get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(folder))


def load_sharded(model: torch.nn.Module, opt: torch.optim.Optimizer, folder: Path) -> None:
    """Load `save_sharded`'s folder into `model` and `opt`, in place, on any number of ranks (DCP
    reshards: 2 ranks' shards load into 1 process's whole tensors and the other way round)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_sd, optim_sd = get_state_dict(model, opt)
    state: dict[str, Any] = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=str(folder))
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if hasattr(t, "to_local") else t


def local_bytes(model: torch.nn.Module, opt: torch.optim.Optimizer | None = None) -> dict[str, int]:
    """Bytes this rank holds, read from the tensors themselves (a DTensor counts its local shard):
    parameters, gradients and optimizer state.

    >>> m = torch.nn.Linear(4, 2)
    >>> m(torch.ones(1, 4)).sum().backward()
    >>> opt = torch.optim.AdamW(m.parameters()); opt.step()
    >>> local_bytes(m, opt)
    {'params': 40, 'grads': 40, 'optimizer': 88}
    """
    out = {"params": 0, "grads": 0, "optimizer": 0}
    for p in model.parameters():
        lp = _local(p)
        out["params"] += lp.numel() * lp.element_size()
        if p.grad is not None:
            g = _local(p.grad)
            out["grads"] += g.numel() * g.element_size()
    if opt is not None:
        for st in opt.state.values():
            for v in st.values():
                if isinstance(v, torch.Tensor):
                    lv = _local(v)
                    out["optimizer"] += lv.numel() * lv.element_size()
    return out
