"""Batched, KV-cached temperature sampling for causal LMs: the one decoding loop of GRPO rollouts,
evaluation and search. Position ids come from the attention mask, so left-padded prompts get the
positions of the update forward; finished sequences leave the batch; calls run in chunks.

A run is reproducible from its `seed` alone, and the draws do not depend on the chunk size or on
which sequences have finished: the token of sequence `i` at step `t` is drawn by inverse-CDF
sampling from a uniform that depends only on `(seed, t, i)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.config import SamplingConfig
from rlvr.models.decoding import make_decoder

__all__ = [
    "Completions",
    "autocast",
    "sample",
    "encode_prompts",
    "over_long",
    "prompt_token_limit",
    "stop_string_checker",
    "vllm_params",
]


@dataclass
class Completions:
    """Sampled completions, in prompt-major order (prompt 0's n samples first).

    `tokens[i]` are completion token ids without padding, ending with EOS unless `truncated[i]`.
    """

    prompt_index: list[int]
    tokens: list[list[int]]
    texts: list[str]
    truncated: list[bool]
    entropy: list[float] | None = None  # per completion: mean entropy of the sampling distribution per token

    @property
    def lengths(self) -> list[int]:
        return [len(t) for t in self.tokens]


def encode_prompts(tokenizer, prompts: Sequence[str] | Sequence[Sequence[int]]) -> list[list[int]]:
    """Token ids of each prompt, without special tokens added; a prompt given as token ids is kept as
    it is (token-in/token-out: a multi-turn conversation is never decoded and re-encoded)."""
    return [list(p) if not isinstance(p, str) else tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]


def prompt_token_limit(model, sampling: SamplingConfig) -> int | None:
    """The longest prompt a command may feed: `sampling.max_prompt_tokens`, else the model's context
    (`max_position_embeddings`) less `max_new_tokens`; None when neither is known."""
    if sampling.max_prompt_tokens is not None:
        return sampling.max_prompt_tokens
    ctx = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return None if not isinstance(ctx, int) else max(1, ctx - sampling.max_new_tokens)


def over_long(tokenizer, prompts: Sequence[str], limit: int | None) -> list[int]:
    """Indices of the prompts longer than `limit` tokens (a prompt is never truncated silently: the
    caller refuses or skips these items and says so)."""
    if limit is None:
        return []
    return [i for i, ids in enumerate(encode_prompts(tokenizer, prompts)) if len(ids) > limit]


def _left_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s) :] = 1
    return ids, mask  # (B, Lp), (B, Lp)


def _draw(logits: torch.Tensor, s: SamplingConfig, u: torch.Tensor, greedy: bool = False) -> torch.Tensor:
    """One token per row (greedy: the most likely) from softmax(logits / T) restricted to the `top_k`
    most likely tokens (0: all) and then to the top-p nucleus, by inverse CDF with uniforms `u`.
    (B, V), (B,) -> (B,). `vllm_params` maps the same settings for vLLM."""
    if greedy:
        return logits.argmax(-1)
    logits = logits.float()
    if 0 < s.top_k < logits.shape[-1]:
        kth = logits.topk(s.top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, -math.inf)
    probs = torch.softmax(logits / s.temperature, dim=-1)  # (B, V)
    if s.top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        outside = sorted_p.cumsum(-1) - sorted_p > s.top_p  # keep the smallest set reaching top_p
        sorted_p = sorted_p.masked_fill(outside, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    cdf = probs.cumsum(-1)  # (B, V)
    target = (u.to(cdf.device) * cdf[:, -1]).unsqueeze(-1)  # (B, 1)
    idx = torch.searchsorted(cdf, target, right=True).squeeze(-1)  # (B,)
    return idx.clamp(max=probs.shape[-1] - 1)


def vllm_params(s: SamplingConfig, *, greedy: bool = False) -> dict[str, Any]:
    """The `vllm.SamplingParams` fields that `_draw` and the decoding loop read from `s`: the one place
    a sampling setting maps to vLLM (vLLM 0.32 takes top_k 0 as off, temperature 0 as greedy)."""
    return {
        "max_tokens": s.max_new_tokens,
        "temperature": 0.0 if greedy else s.temperature,
        "top_p": s.top_p,
        "top_k": s.top_k,
        "stop": list(s.stop),
    }


def _uniforms(base: int, step: int, rows: torch.Tensor, total: int) -> torch.Tensor:
    """U(0, 1) for the given global rows at a decoding step, independent of batching. (b,)"""
    g = torch.Generator().manual_seed((base * 1_000_003 + step) % (2**63))
    return torch.rand(total, generator=g)[rows]


def autocast(model, enabled: bool):
    """bfloat16 autocast on the model's device: matmuls in bf16 (2.4x the fp32 rate on this AVX512-BF16
    CPU, measured), parameters, optimizer state and log-prob arithmetic stay in float32."""
    device = next(model.parameters()).device.type
    return torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=enabled)


def stop_string_checker(tokenizer, stop: Sequence[str]) -> Callable[[list[int]], bool] | None:
    """A test of whether a completion's tokens end in a stop string (None when there are none). Only
    the last few tokens are decoded: a token spans at least one character, so a stop string of c
    characters lies within the last c + 1 tokens."""
    if not stop:
        return None
    width = max(len(s) for s in stop) + 1

    def hit(tokens: list[int]) -> bool:
        tail = tokenizer.decode(tokens[-width:], skip_special_tokens=True)
        return any(s in tail for s in stop)

    return hit


@torch.no_grad()
def _sample_chunk(
    decoder, prompt_ids, rows, s: SamplingConfig, *, greedy, stop_ids, stop_hit, pad_id, base, total, device, entropy
):
    ids, mask = _left_pad(prompt_ids, pad_id)
    ids, mask = ids.to(device), mask.to(device)
    b = ids.shape[0]
    pos = (mask.cumsum(-1) - 1).clamp(min=0)  # (B, Lp)
    max_new_tokens = s.max_new_tokens
    logits = decoder.start(ids, mask, pos, max_new_tokens)  # (B, V)
    alive = torch.arange(b)  # rows of the original batch still generating (on the CPU)
    next_pos = pos[:, -1] + 1  # (B,)
    out = torch.full((b, max_new_tokens), -1, dtype=torch.long)  # drawn tokens, -1 after the end
    truncated = torch.ones(b, dtype=torch.bool)
    ent_sum = torch.zeros(b)
    stop_t = torch.tensor(sorted(stop_ids), dtype=torch.long)
    for step in range(max_new_tokens):
        u = rows if greedy else _uniforms(base, step, rows[alive], total)
        tok = _draw(logits, s, u, greedy)  # (b_alive,)
        tok_cpu = tok.cpu()
        out[alive, step] = tok_cpu
        if entropy:
            ent_sum[alive] += _entropy(logits, 1.0 if greedy else s.temperature).cpu()
        done = torch.isin(tok_cpu, stop_t)
        if stop_hit is not None:
            done |= torch.tensor([stop_hit(out[r, : step + 1].tolist()) for r in alive.tolist()], dtype=torch.bool)
        if done.any():
            truncated[alive[done]] = False
            keep = (~done).nonzero().squeeze(-1)
            if keep.numel() == 0:
                break
            alive = alive[keep]
            keep_dev = keep.to(device)
            tok, next_pos = tok[keep_dev], next_pos[keep_dev]
            if step < max_new_tokens - 1:
                decoder.keep(keep_dev)
        if step == max_new_tokens - 1:
            break
        logits = decoder.step(tok, next_pos)
        next_pos = next_pos + 1
    result = [[t for t in row if t >= 0] for row in out.tolist()]
    ent = [e / max(1, len(r)) for e, r in zip(ent_sum.tolist(), result, strict=True)] if entropy else None
    return result, truncated.tolist(), ent


def _entropy(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Entropy of softmax(logits / T) per row. (B, V) -> (B,)"""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def sample(
    model,
    tokenizer,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    n: int = 1,
    sampling: SamplingConfig | None = None,
    *,
    greedy: bool = False,
    stop_ids: Sequence[int] | None = None,
    seed: int = 0,
    chunk_size: int = 128,
    generator: torch.Generator | None = None,
    bf16: bool = False,
    fast: bool | None = None,
    entropy: bool = False,
    row_offset: int = 0,
    total_rows: int | None = None,
    rows: Sequence[int] | None = None,
) -> Completions:
    """Sample `n` completions for each prompt with the settings of `sampling` (default
    `SamplingConfig()`), passed whole to the decoding loop; `greedy=True` decodes greedily.

    A completion ends at the first token in `stop_ids` (default: the tokenizer's eos; pass
    `PromptFormatter.end_ids` to stop at a chat template's end-of-turn token too) or at the token
    that completes one of the `sampling.stop` strings; `truncated` marks the ones that hit
    `sampling.max_new_tokens`.

    Pass a `generator` to continue one random stream across calls (the trainer does, so a resumed
    run draws the same samples); otherwise a fresh one is seeded with `seed`. `bf16=True` runs the
    forwards under bfloat16 autocast (weights stay as they are; see `autocast`). `fast` picks the
    decoder (`rlvr.models.decoding`): None uses the fast one when the architecture is supported.
    `entropy=True` also returns each completion's mean per-token entropy of the distribution its
    tokens were drawn from (softmax(logits / T), before top-k and top-p; T = 1 when greedy).

    `row_offset` and `total_rows` place these prompts' rows inside a larger call: a data-parallel
    rank that samples its block of a global batch draws exactly the tokens the one-process call
    over the whole batch draws for those rows (the uniforms depend on the global row index only).
    `rows` gives each row's global index instead (a multi-turn round samples only the conversations
    still going, each under its own index).
    """
    s = sampling or SamplingConfig()
    gen = generator if generator is not None else torch.Generator().manual_seed(seed)
    base = int(torch.randint(0, 2**62, (1,), generator=gen))
    encoded = encode_prompts(tokenizer, prompts)
    order = [i for i in range(len(prompts)) for _ in range(n)]
    if rows is not None and len(rows) != len(order):
        raise ValueError(f"rows: {len(rows)} global row indices for {len(order)} rows")
    global_rows = torch.tensor(rows, dtype=torch.long) if rows is not None else torch.arange(len(order)) + row_offset
    stop_set = set(stop_ids) if stop_ids is not None else {tokenizer.eos_token_id}
    stop_hit, pad_id = stop_string_checker(tokenizer, s.stop), tokenizer.pad_token_id
    was_training = model.training
    model.eval()
    tokens: list[list[int]] = []
    truncated: list[bool] = []
    entropies: list[float] = []
    device = next(model.parameters()).device
    try:
        decoder = make_decoder(model, fast, bf16)
        for start in range(0, len(order), chunk_size):
            chunk = order[start : start + chunk_size]
            with autocast(model, bf16):
                toks, trunc, ents = _sample_chunk(
                    decoder,
                    [encoded[i] for i in chunk],
                    global_rows[start : start + len(chunk)],
                    s,
                    greedy=greedy,
                    stop_ids=stop_set,
                    stop_hit=stop_hit,
                    pad_id=pad_id,
                    base=base,
                    total=total_rows or len(order),
                    device=device,
                    entropy=entropy,
                )
            tokens += toks
            truncated += trunc
            entropies += ents or []
    finally:
        model.train(was_training)
    texts = tokenizer.batch_decode(tokens, skip_special_tokens=True)
    return Completions(
        prompt_index=order, tokens=tokens, texts=texts, truncated=truncated, entropy=entropies if entropy else None
    )
