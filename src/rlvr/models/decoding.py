"""Incremental decoders for the sampler (`start`, `step`, `keep`): prefill the prompts once, then one token a step.

`HFDecoder` drives any Hugging Face causal LM through its own forward and `DynamicCache` (the reference).
`FastDecoder` runs the decoder-only transformer of Llama, Qwen2, Qwen3 and Mistral from the model's weights
(plain LoRA adapters merged when sampling starts) with a preallocated KV cache and fused projections; it is
tested token for token against `HFDecoder` (tests/models/test_fast_paths.py). `make_decoder` picks one. Why
it is hand-written and what it saves: docs/train.md, "Where a step's time goes".
"""

from __future__ import annotations

import inspect
from typing import Protocol

import torch
import torch.nn.functional as F

__all__ = ["Decoder", "HFDecoder", "FastDecoder", "make_decoder", "fast_decoder_supported"]

_FAST_TYPES = {"llama", "qwen2", "qwen3", "mistral"}


class Decoder(Protocol):
    def start(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
        """Prefill left-padded prompts (B, Lp); returns next-token logits (B, V)."""
        ...

    def step(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Feed one token per live row (b,) at positions (b,); returns logits (b, V)."""
        ...

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these live rows (indices into the current live rows), in this order."""
        ...


# ---------------------------------------------------------------------- Hugging Face forward
def cache_kw(model) -> str:
    """transformers >= 5.x names the KV cache argument `cache`; earlier versions `past_key_values`."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft wraps forward(**kwargs)
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def cache_of(out):
    return out.cache if "cache" in out else out.past_key_values


class HFDecoder:
    """The model's own forward with a `DynamicCache`; any architecture."""

    def __init__(self, model) -> None:
        self.model, self.cache_kw = model, cache_kw(model)

    def start(self, ids, mask, pos, max_new_tokens):
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        self.cache, self.mask = cache_of(out), mask
        return out.logits[:, -1]

    def step(self, tok, pos):
        self.mask = torch.cat([self.mask, self.mask.new_ones((self.mask.shape[0], 1))], dim=1)
        out = self.model(
            input_ids=tok[:, None],
            attention_mask=self.mask,
            position_ids=pos[:, None],
            use_cache=True,
            **{self.cache_kw: self.cache},
        )
        self.cache = cache_of(out)
        return out.logits[:, -1]

    def keep(self, rows):
        self.cache.batch_select_indices(rows)
        self.mask = self.mask[rows]


# ---------------------------------------------------------------------- fast path
_LORA_OK = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def fast_decoder_supported(model) -> bool:
    """True when `FastDecoder` reproduces this model's forward: a Llama, Qwen2, Qwen3 or Mistral with
    SiLU MLP and full attention in every layer, plain or with plain LoRA adapters (peft) on its
    attention and MLP projections only."""
    if hasattr(model, "get_base_model"):
        if not _plain_lora(model):
            return False
        model = model.get_base_model()
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in _FAST_TYPES:
        return False
    if getattr(cfg, "hidden_act", "silu") != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return False
    if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])):
        return False
    if getattr(cfg, "sliding_window", None) is not None and getattr(cfg, "use_sliding_window", True):
        return False  # Mistral-style sliding window: not reproduced here
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("dynamic", "longrope"):
        return False  # frequencies that depend on the longest position in the call
    inner = getattr(model, "model", None)
    return all(hasattr(inner, a) for a in ("embed_tokens", "layers", "norm", "rotary_emb"))


def _plain_lora(model) -> bool:
    """A peft model whose adapters are all plain LoRA (no DoRA or other variant, no modules_to_save)
    on linear projections the fast decoder fuses; their weights are merged when sampling starts."""
    configs = getattr(model, "peft_config", {}) or {}
    if not configs or any(str(getattr(c, "peft_type", "")) not in ("LORA", "PeftType.LORA") for c in configs.values()):
        return False
    if any(getattr(c, "modules_to_save", None) for c in configs.values()):
        return False
    for name, module in model.get_base_model().named_modules():
        if hasattr(module, "lora_A"):
            if not name.endswith(_LORA_OK) or not hasattr(module, "get_delta_weight"):
                return False
            if any(getattr(module, "lora_variant", {}).get(a) for a in module.active_adapters):
                return False
    return True


def merged_weight(module) -> torch.Tensor:
    """A peft LoRA layer's effective weight: base weight plus `scaling * B @ A` of each active, unmerged
    plain-LoRA adapter (`get_delta_weight`), i.e. the weight its forward applies."""
    w = module.base_layer.weight
    if getattr(module, "merged", False) or getattr(module, "disable_adapters", False):
        return w
    for a in module.active_adapters:
        present = a in getattr(module, "lora_A", {}) or a in getattr(module, "lora_embedding_A", {})
        if not present:
            continue
        if a in (getattr(module, "lora_variant", None) or {}):
            raise NotImplementedError(f"LoRA variant (e.g. DoRA) of adapter {a!r} cannot be merged for vLLM")
        w = w + module.get_delta_weight(a).to(w.dtype)
    return w


def _weight(linear) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A linear layer's effective weight and bias: a LoRA layer's `merged_weight`, else the layer's own."""
    base = getattr(linear, "base_layer", None)
    if base is None or not hasattr(linear, "lora_A"):
        return linear.weight, linear.bias
    return merged_weight(linear), base.bias


class _Layer:
    """One decoder layer's weights, q/k/v and gate/up fused, matmul weights in `dtype` (a copy of
    the live model's weights taken when sampling starts)."""

    def __init__(self, layer, dtype: torch.dtype | None) -> None:
        a, m = layer.self_attn, layer.mlp
        (wq, bq), (wk, bk), (wv, bv) = _weight(a.q_proj), _weight(a.k_proj), _weight(a.v_proj)
        self.w_qkv = _w(torch.cat([wq, wk, wv]), dtype)
        biases = [b if b is not None else w.new_zeros(w.shape[0]) for w, b in ((wq, bq), (wk, bk), (wv, bv))]
        self.b_qkv = _b(torch.cat(biases), dtype) if any(b is not None for b in (bq, bk, bv)) else None
        (wo, bo), (wg, bg), (wu, bu), (wd, bd) = (_weight(x) for x in (a.o_proj, m.gate_proj, m.up_proj, m.down_proj))
        self.w_o, self.b_o = _w(wo, dtype), _b(bo, dtype)
        self.w_gu = _w(torch.cat([wg, wu]), dtype)
        self.b_gu = None if bg is None or bu is None else _b(torch.cat([bg, bu]), dtype)
        self.w_down, self.b_down = _w(wd, dtype), _b(bd, dtype)
        self.ln1 = (layer.input_layernorm.weight.detach(), layer.input_layernorm.variance_epsilon)
        self.ln2 = (layer.post_attention_layernorm.weight.detach(), layer.post_attention_layernorm.variance_epsilon)
        self.q_norm, self.k_norm = getattr(a, "q_norm", None), getattr(a, "k_norm", None)  # Qwen3


def _w(t: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """Detached, in `dtype` when given: under bf16 autocast the matmul would cast it at every call."""
    return t.detach() if dtype is None else t.detach().to(dtype)


def _b(t: torch.Tensor | None, dtype: torch.dtype | None) -> torch.Tensor | None:
    return None if t is None else _w(t, dtype)


def _rms(x: torch.Tensor, norm: tuple[torch.Tensor, float]) -> torch.Tensor:
    """Hugging Face's RMSNorm: float32 statistics, weight applied in the input dtype."""
    w, eps = norm
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def _attend_one(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    """Attention of one query per row: q (B, Hq, 1, D), k/v (B, Hk, T, D), mask (B, 1, 1, T) bool.
    Two small batched matmuls beat the flash kernel's setup at one query (measured 1.1x in fp32).
    Grouped KV heads without copying: the Hq/Hk query heads of a group ride in the query dimension."""
    b, hq, _, d = q.shape
    hk = k.shape[1]
    with torch.autocast(q.device.type, enabled=False):  # scores and weights in the cache's precision
        qg = q.reshape(b, hk, hq // hk, d).to(k.dtype)
        scores = torch.matmul(qg, k.transpose(-1, -2)) * scale  # (B, Hk, Hq/Hk, T)
        scores = scores.masked_fill(~mask, float("-inf"))
        att = torch.matmul(torch.softmax(scores, dim=-1), v)  # (B, Hk, Hq/Hk, D)
    return att.reshape(b, hq, 1, d)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rot * sin


class FastDecoder:
    """Decoding with a preallocated KV cache from the weights of a supported model (see module doc)."""

    def __init__(self, model, matmul_dtype: torch.dtype | None = None) -> None:
        if hasattr(model, "get_base_model"):  # peft: LoRA weights are merged into the copies taken here
            model = model.get_base_model()
        cfg = model.config
        self.inner = model.model
        self.n_heads = cfg.num_attention_heads
        self.n_kv = getattr(cfg, "num_key_value_heads", None) or self.n_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.n_heads
        self.scale = self.head_dim**-0.5
        self.layers = [_Layer(layer, matmul_dtype) for layer in self.inner.layers]
        self.embed = self.inner.embed_tokens.weight.detach()
        self.final_norm = (self.inner.norm.weight.detach(), self.inner.norm.variance_epsilon)
        head = model.get_output_embeddings()
        self.w_head, self.b_head = _w(head.weight, matmul_dtype), _b(head.bias, matmul_dtype)

    # -------------------------------------------------------------- the transformer
    def _forward(self, x: torch.Tensor, pos: torch.Tensor, attend) -> torch.Tensor:
        """Final-norm hidden states (B, L, d) of inputs `x` (B, L, d) at positions `pos` (B, L);
        `attend(i, q, k, v)` stores layer i's keys and values and returns its attention output."""
        b, n = x.shape[:2]
        cos, sin = self.inner.rotary_emb(x, pos)  # (B, L, D)
        cos, sin = cos[:, None], sin[:, None]
        hq, hk, d = self.n_heads, self.n_kv, self.head_dim
        for i, ly in enumerate(self.layers):
            qkv = F.linear(_rms(x, ly.ln1), ly.w_qkv, ly.b_qkv)  # (B, L, (hq + 2 hk) d)
            q, k, v = qkv.split([hq * d, hk * d, hk * d], dim=-1)
            q, k, v = q.view(b, n, hq, d), k.view(b, n, hk, d), v.view(b, n, hk, d)
            if ly.q_norm is not None and ly.k_norm is not None:
                q, k = ly.q_norm(q), ly.k_norm(k)
            q = _rotate(q.transpose(1, 2), cos, sin)  # (B, hq, L, D)
            k = _rotate(k.transpose(1, 2), cos, sin)  # (B, hk, L, D)
            att = attend(i, q, k, v.transpose(1, 2))  # (B, hq, L, D)
            x = x + F.linear(att.transpose(1, 2).reshape(b, n, hq * d), ly.w_o, ly.b_o)
            gate, up = F.linear(_rms(x, ly.ln2), ly.w_gu, ly.b_gu).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, ly.w_down, ly.b_down)
        return _rms(x, self.final_norm)

    def _logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(h, self.w_head, self.b_head)

    # -------------------------------------------------------------- attention
    def _attend_prompt(self, i, q, k, v):
        """Prefill of the distinct prompts: causal attention over the left-padded prompt."""
        self.k[i][:, :, : k.shape[2]], self.v[i][:, :, : v.shape[2]] = k, v
        if self.n_kv != self.n_heads:  # grouped KV heads: one copy per query head (sdpa's enable_gqa needs torch 2.5)
            rep = self.n_heads // self.n_kv
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self._prefill_mask, scale=self.scale)

    def _attend_step(self, i, q, k, v):
        """One new token per row, written to cache column t, attending to columns 0..t."""
        t = self.t
        self.k[i][:, :, t] = k[:, :, 0]
        self.v[i][:, :, t] = v[:, :, 0]
        return _attend_one(
            q, self.k[i][:, :, : t + 1], self.v[i][:, :, : t + 1], self.valid[:, None, None, : t + 1], self.scale
        )

    # -------------------------------------------------------------- Decoder interface
    def start(self, ids, mask, pos, max_new_tokens):
        b, lp = ids.shape
        # GRPO samples G completions of each prompt: prefill each distinct prompt once
        uniq, inv = torch.unique(torch.cat([ids, mask], dim=1), dim=0, return_inverse=True)
        u = uniq.shape[0]
        u_ids, u_valid, u_pos = uniq[:, :lp], uniq[:, lp:].bool(), pos[_first_of(inv, u)]
        eye = torch.eye(lp, dtype=torch.bool, device=ids.device)
        causal = torch.ones((lp, lp), dtype=torch.bool, device=ids.device).tril()
        # a padding query attends to itself only, so no row of the softmax is empty (no NaN in the cache)
        self._prefill_mask = ((causal & u_valid[:, None, :]) | eye)[:, None]  # (U, 1, Lp, Lp)
        x = F.embedding(u_ids, self.embed)  # (U, Lp, d)
        shape = (u, self.n_kv, lp + max_new_tokens, self.head_dim)  # in the residual stream's dtype, as HF's cache
        self.k = [x.new_zeros(shape) for _ in self.layers]
        self.v = [x.new_zeros(shape) for _ in self.layers]
        h = self._forward(x, u_pos, self._attend_prompt)
        logits = self._logits(h[:, -1])[inv]  # (B, V)
        if not torch.equal(inv, torch.arange(b, device=inv.device)):  # one cache row per sequence, in batch order
            self.k, self.v = [c[inv] for c in self.k], [c[inv] for c in self.v]
        self.valid = torch.zeros((b, lp + max_new_tokens), dtype=torch.bool, device=ids.device)
        self.valid[:, :lp] = mask.bool()
        self.t = lp
        self.rows = torch.arange(b, device=ids.device)  # live rows -> cache rows
        self.ordered = True  # rows == arange(cache rows): no scatter or gather per step
        self.pos = pos[:, -1].clone()
        return logits

    def step(self, tok, pos):
        nb = self.k[0].shape[0]
        if self.ordered:
            full_tok, full_pos = tok, pos
        else:  # finished rows ride along with a dummy token until the next compaction
            full_tok = torch.zeros(nb, dtype=tok.dtype, device=tok.device).index_copy_(0, self.rows, tok)
            full_pos = self.pos.index_copy(0, self.rows, pos)
        self.pos = full_pos
        self.valid[:, self.t] = True
        h = self._forward(F.embedding(full_tok[:, None], self.embed), full_pos[:, None], self._attend_step)
        self.t += 1
        logits = self._logits(h[:, 0])
        return logits if self.ordered else logits[self.rows]

    def keep(self, rows):
        """`rows`: distinct indices into the live rows, in the order they are to be kept."""
        self.rows = self.rows[rows]
        nb = self.k[0].shape[0]
        self.ordered = self.rows.numel() == nb and torch.equal(self.rows, torch.arange(nb, device=rows.device))
        if self.rows.numel() * 4 <= nb * 3:  # a quarter dead: compact the cache
            r = self.rows
            self.k, self.v = [c[r] for c in self.k], [c[r] for c in self.v]
            self.valid, self.pos = self.valid[r], self.pos[r]
            self.rows = torch.arange(r.numel(), device=r.device)
            self.ordered = True


def _first_of(inv: torch.Tensor, n: int) -> torch.Tensor:
    """For each of n groups, the index of its first member in `inv` (N,) -> (n,)."""
    first = torch.full((n,), inv.numel(), dtype=torch.long, device=inv.device)
    return first.scatter_reduce(0, inv, torch.arange(inv.numel(), device=inv.device), reduce="amin")


def make_decoder(model, fast: bool | None = None, bf16: bool = False) -> Decoder:
    """`FastDecoder` when the model is supported (or `fast=True`, which raises if it is not), else
    `HFDecoder`. `bf16`: the caller samples under bfloat16 autocast (the fast decoder then keeps its
    matmul weights in bfloat16 instead of casting them at every call)."""
    if fast is None:
        fast = fast_decoder_supported(model)
    if fast:
        if not fast_decoder_supported(model):
            raise ValueError(f"the fast decoder does not support {type(model).__name__}; use fast=False")
        return FastDecoder(model, torch.bfloat16 if bf16 else None)
    return HFDecoder(model)
