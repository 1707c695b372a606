"""Rollout/trainer mismatch correction: importance weights for completions sampled by another engine.

vLLM's log-probs of the sampled tokens (`rollout_logp`) differ from the trainer's (`old_logp`) under the
same weights, so the update is off-policy by `exp(old_logp - rollout_logp)`. Truncated importance
sampling (TIS; Yao et al. 2025) weights each token's loss by that ratio capped at `cap`; the masking
variants (MIS) drop tokens or sequences whose ratio leaves `[1/cap, cap]`. Pure functions of `(B, T)`
tensors, chosen once with `resolve_correction`; the weights carry no gradient. docs/papers.md has the table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import Tensor

__all__ = ["CORRECTIONS", "CorrectionName", "correction_stats", "resolve_correction"]

CorrectionName = Literal["token", "sequence", "token_mask", "sequence_mask"]
CorrectionFn = Callable[..., Tensor]  # (old_logp, rollout_logp, mask, cap) -> weights (B, T)


def _log_ratio(old_logp: Tensor, rollout_logp: Tensor, mask: Tensor) -> Tensor:
    return torch.where(mask.bool(), old_logp - rollout_logp, 0.0).detach()  # (B, T)


def token_tis(old_logp: Tensor, rollout_logp: Tensor, mask: Tensor, cap: float) -> Tensor:
    """`min(exp(old - roll), cap)` per token. (B, T) x3 -> (B, T)

    >>> token_tis(torch.tensor([[0.0, 0.0]]), torch.tensor([[-1.0, 0.5]]), torch.ones(1, 2), 2.0)
    tensor([[2.0000, 0.6065]])
    """
    return torch.exp(_log_ratio(old_logp, rollout_logp, mask)).clamp(max=cap)


def sequence_tis(old_logp: Tensor, rollout_logp: Tensor, mask: Tensor, cap: float) -> Tensor:
    """`min(exp(sum_t (old - roll)), cap)`, one weight per sequence. (B, T) x3 -> (B, T)

    >>> sequence_tis(torch.tensor([[0.0, 0.0]]), torch.tensor([[-0.1, 0.3]]), torch.ones(1, 2), 2.0)
    tensor([[0.8187, 0.8187]])
    """
    seq = _log_ratio(old_logp, rollout_logp, mask).sum(-1, keepdim=True)  # (B, 1)
    return torch.exp(seq).clamp(max=cap).expand_as(mask).to(old_logp.dtype)


def token_mask(old_logp: Tensor, rollout_logp: Tensor, mask: Tensor, cap: float) -> Tensor:
    """1 where the token's ratio is in `[1/cap, cap]`, else 0. (B, T) x3 -> (B, T)

    >>> token_mask(torch.tensor([[0.0, 0.0]]), torch.tensor([[-1.0, 0.1]]), torch.ones(1, 2), 2.0)
    tensor([[0., 1.]])
    """
    lr = _log_ratio(old_logp, rollout_logp, mask)
    bound = torch.log(torch.tensor(cap, dtype=lr.dtype))
    return (lr.abs() <= bound).to(old_logp.dtype)


def sequence_mask(old_logp: Tensor, rollout_logp: Tensor, mask: Tensor, cap: float) -> Tensor:
    """1 for every token of a sequence whose geometric-mean ratio is in `[1/cap, cap]`, else 0. (B, T) x3 -> (B, T)

    >>> sequence_mask(torch.tensor([[0.0, 0.0], [0.0, 0.0]]), torch.tensor([[-1.0, 0.9], [-2.0, -2.0]]),
    ...               torch.ones(2, 2), 2.0)
    tensor([[1., 1.],
            [0., 0.]])
    """
    lr = _log_ratio(old_logp, rollout_logp, mask)
    mean = lr.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)  # (B, 1)
    bound = torch.log(torch.tensor(cap, dtype=lr.dtype))
    return (mean.abs() <= bound).expand_as(mask).to(old_logp.dtype)


CORRECTIONS: dict[str, CorrectionFn] = {
    "token": token_tis,
    "sequence": sequence_tis,
    "token_mask": token_mask,
    "sequence_mask": sequence_mask,
}


def resolve_correction(name: str) -> CorrectionFn:
    if name not in CORRECTIONS:
        raise ValueError(f"unknown rollout correction {name!r}; known: {', '.join(CORRECTIONS)}")
    return CORRECTIONS[name]


def correction_stats(
    old_logp: Tensor, rollout_logp: Tensor, mask: Tensor, weights: Tensor, uncapped: Tensor | None = None
) -> dict[str, Tensor]:
    """Mismatch statistics over the mask tokens: `logprob_diff_mean|max` of `|old - roll|`, the raw
    ratio's `is_ratio_mean|min|max`, `is_weight_mean` of the applied weights and `is_clip_frac`, the
    share of tokens whose weight the cap changed (truncated or masked): where `weights` differ from
    `uncapped`, the same correction with no cap (`cap=inf`; 0 when not given).

    >>> old, roll = torch.tensor([[0.0, 0.0, 0.0]]), torch.tensor([[-1.0, 0.0, 0.5]])
    >>> w, u = token_tis(old, roll, torch.ones(1, 3), 2.0), token_tis(old, roll, torch.ones(1, 3), float("inf"))
    >>> round(float(correction_stats(old, roll, torch.ones(1, 3), w, u)["is_clip_frac"]), 4)
    0.3333
    """
    m = mask.bool()
    n = m.sum().clamp(min=1)
    diff = (old_logp - rollout_logp).detach()
    ratio = torch.exp(diff)
    clipped = torch.zeros_like(m) if uncapped is None else weights != uncapped
    return {
        "is_clip_frac": (clipped & m).sum() / n,
        "logprob_diff_mean": torch.where(m, diff.abs(), 0.0).sum() / n,
        "logprob_diff_max": torch.where(m, diff.abs(), 0.0).amax(),
        "is_ratio_mean": torch.where(m, ratio, 0.0).sum() / n,
        "is_ratio_min": torch.where(m, ratio, torch.inf).amin(),
        "is_ratio_max": torch.where(m, ratio, -torch.inf).amax(),
        "is_weight_mean": torch.where(m, weights, 0.0).sum() / n,
    }
