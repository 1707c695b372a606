"""The GRPO objective as pure tensor functions: advantages, reward normalisation, KL, entropy and
log-probs, plus (re-exported from `rlvr.grpo.losses`) the policy losses, token selection and aggregation.

Imports only torch. Each variant is chosen once at setup from `ADVANTAGES`, `REWARD_NORMALIZATIONS`
and `KL_ESTIMATORS` (and the loss tables) through the `resolve_*` functions, so the training loop never
branches on a string. Shapes: `B` prompts with `G` samples each, rewards `(B*G,)`; per-token tensors
`(B, T)`, `V` vocabulary. docs/objectives.md explains each variant, docs/papers.md maps papers to presets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

import torch
from torch import Tensor

from rlvr.grpo import losses
from rlvr.grpo.losses import *  # noqa: F403 - the loss half of the objective, re-exported
from rlvr.grpo.losses import AggregationName as AggregationName  # re-exported: the config's Literals
from rlvr.grpo.losses import Count as Count
from rlvr.grpo.losses import PolicyLossName as PolicyLossName

__all__ = [
    *losses.__all__,
    "ADVANTAGES",
    "KL_ESTIMATORS",
    "REWARD_NORMALIZATIONS",
    "AdvantageFn",
    "Advantages",
    "batch_std_advantages",
    "dr_grpo_advantages",
    "entropy_from_logits",
    "group_advantages",
    "grpo_advantages",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_penalty",
    "normalize_then_sum",
    "overlong_penalty",
    "reinforce_pp_advantages",
    "reinforce_pp_baseline_advantages",
    "resolve_advantage",
    "resolve_kl",
    "resolve_reward_normalization",
    "rloo_advantages",
    "sum_then_normalize",
    "token_logprobs",
]

AdvantageScale = Literal["group", "batch", "none", "rloo", "reinforce_pp", "reinforce_pp_baseline"]
RewardNormalization = Literal["sum_then_normalize", "normalize_then_sum"]
KLEstimator = Literal["k1", "k2", "k3"]


# ----------------------------------------------------------------------------- advantages


@dataclass(frozen=True)
class Advantages:
    """`values` `(B*G,)`: one advantage per completion, in the order of the rewards. `zero_std` `(B,)`
    bool: groups with fewer than 2 valid rewards or all of them equal (DAPO's dynamic sampling drops
    these; every estimator with a group baseline gives their members 0)."""

    values: Tensor
    zero_std: Tensor

    @property
    def zero_std_groups(self) -> int:
        """Number of groups without signal (syncs with the device: call it when logging)."""
        return int(self.zero_std.sum().item())

    @property
    def n_groups(self) -> int:
        """Number of groups (prompts) `B`."""
        return self.zero_std.numel()


class _GroupStats(NamedTuple):
    rewards: Tensor  # (B, G), NaN where not scorable
    valid: Tensor  # (B, G) bool
    centered: Tensor  # (B, G), r - mean_g on valid entries, 0 elsewhere
    std: Tensor  # (B, 1), unbiased std of the group's valid rewards
    zero_std: Tensor  # (B,) bool


def _group_stats(rewards: Tensor, group_size: int) -> _GroupStats:
    if rewards.dim() != 1 or group_size < 1 or rewards.numel() % group_size != 0:
        raise ValueError(
            f"rewards must be 1-D with a length divisible by group_size={group_size}, got shape {tuple(rewards.shape)}"
        )
    r = rewards.view(-1, group_size)  # (B, G)
    if not r.is_floating_point():
        r = r.float()
    valid = ~torch.isnan(r)  # (B, G)
    n = valid.sum(-1, keepdim=True)  # (B, 1)
    mean = torch.where(valid, r, 0.0).sum(-1, keepdim=True) / n.clamp(min=1)  # (B, 1)
    centered = torch.where(valid, r - mean, 0.0)  # (B, G)
    std = (centered.square().sum(-1, keepdim=True) / (n - 1).clamp(min=1)).sqrt()  # (B, 1)
    # "All valid rewards equal" is tested exactly (max == min), not as std < tol: a float mean of
    # equal values can leave a ~1e-17 residue that would otherwise be divided by eps.
    hi = torch.where(valid, r, -math.inf).amax(-1)  # (B,)
    lo = torch.where(valid, r, math.inf).amin(-1)  # (B,)
    zero_std = (n.squeeze(-1) < 2) | (hi == lo)  # (B,)
    return _GroupStats(r, valid, centered, std, zero_std)


def _finish(s: _GroupStats, denom: Tensor) -> Advantages:
    keep = s.valid & ~s.zero_std.unsqueeze(-1)  # (B, G)
    values = torch.where(keep, s.centered / denom, 0.0)  # (B, G)
    return Advantages(values.reshape(-1), s.zero_std)


def grpo_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """Vanilla GRPO (DeepSeekMath, Shao et al. 2024, arXiv:2402.03300, outcome supervision):
    `A_i = (r_i - mean_g) / (std_g + eps)` over the valid rewards of `r_i`'s group.

    `rewards`: `(B*G,)`, groups contiguous, NaN = not scorable (left out of mean and std, advantage
    0). The paper names no std or eps: unbiased std and `eps = 1e-4`, as TRL.

    >>> [round(a, 4) for a in grpo_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2).values.tolist()]
    [0.707, -0.707, 0.0, 0.0]
    """
    s = _group_stats(rewards, group_size)
    return _finish(s, s.std + eps)


def batch_std_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """Lite PPO (Liu et al. 2025, arXiv:2508.08221; TRL's `scale_rewards="batch"`): `A_i = (r_i -
    mean_g) / (std_batch + eps)`, `std_batch` the unbiased std of every valid reward of the batch.

    Change from vanilla GRPO: one batch-wide scale, so groups with small spread are not scaled up
    (easy and hard prompts are not reweighted). `rewards` `(B*G,)` as in `grpo_advantages`.
    """
    s = _group_stats(rewards, group_size)
    return _finish(s, _batch_std(s.rewards, s.valid) + eps)


def dr_grpo_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """Dr. GRPO (Liu et al. 2025, arXiv:2503.20783): `A_i = r_i - mean_g`, no std division (which
    removes the question-level difficulty bias). `eps` unused. `rewards` as in `grpo_advantages`."""
    s = _group_stats(rewards, group_size)
    return _finish(s, torch.ones_like(s.std))


def rloo_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """RLOO (Ahmadian et al. 2024, arXiv:2402.14740): `A_i = r_i - mean_{j != i} r_j` over the group's
    valid rewards, `= n/(n-1) (r_i - mean_g)`. Change from vanilla GRPO: no std division, and the
    baseline leaves the sample out (unbiased). `eps` unused; `rewards` as in `grpo_advantages`.

    >>> rloo_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0]), 3).values.tolist()
    [1.0, -0.5, -0.5, 0.0, 0.0, 0.0]
    """
    s = _group_stats(rewards, group_size)
    n = s.valid.sum(-1, keepdim=True)  # (B, 1)
    total = torch.where(s.valid, s.rewards, 0.0).sum(-1, keepdim=True)  # (B, 1)
    loo = s.rewards - (total - s.rewards) / (n - 1).clamp(min=1)  # (B, G)
    keep = s.valid & ~s.zero_std.unsqueeze(-1)  # (B, G)
    return Advantages(torch.where(keep, loo, 0.0).reshape(-1), s.zero_std)


def _batch_std(values: Tensor, valid: Tensor) -> Tensor:
    """Unbiased std `()` of `values` over the `valid` entries (any shape, same for both)."""
    n = valid.sum()
    mean = torch.where(valid, values, 0.0).sum() / n.clamp(min=1)
    dev = torch.where(valid, values - mean, 0.0)
    return (dev.square().sum() / (n - 1).clamp(min=1)).sqrt()


def reinforce_pp_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """REINFORCE++ (Hu et al. 2025, arXiv:2501.03262), `k = 1`: `A_i = (r_i - mean_batch) / (std_batch +
    eps)` over every valid reward of the batch (0 everywhere when they are all equal).

    Change from vanilla GRPO: the batch's baseline and scale, not the group's, so members of a
    `zero_std` group still get the batch-relative advantage. Departures: the paper puts a k1 KL in
    the reward and whitens over tokens; rlvr whitens over sequences and adds KL as a loss term.

    >>> [round(a, 3) for a in reinforce_pp_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2).values.tolist()]
    [0.5, -1.5, 0.5, 0.5]
    """
    s = _group_stats(rewards, group_size)
    batch = _group_stats(rewards, rewards.numel())  # the whole batch as one group
    return Advantages(_finish(batch, batch.std + eps).values, s.zero_std)


def reinforce_pp_baseline_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """REINFORCE++ with baseline (Hu et al. 2025, arXiv:2501.03262, `k > 1`; verl's
    `reinforce_plus_plus_baseline`): `A_i = (r_i - mean_g) / (std_batch(r - mean_g) + eps)`.

    Change from vanilla GRPO: one batch-wide scale, the std of the centred values (degenerate groups
    count as zeros; their batch mean is 0, so whitening is the division). Departure: verl whitens
    over tokens, rlvr over sequences. `rewards` as in `grpo_advantages`.

    >>> [round(a, 3) for a in reinforce_pp_baseline_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2).values.tolist()]
    [1.224, -1.224, 0.0, 0.0]
    """
    s = _group_stats(rewards, group_size)
    keep = s.valid & ~s.zero_std.unsqueeze(-1)  # (B, G)
    centered = torch.where(keep, s.centered, 0.0)  # (B, G)
    return _finish(s, _batch_std(centered, s.valid) + eps)


class AdvantageFn(Protocol):
    def __call__(self, rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages: ...


ADVANTAGES: dict[str, AdvantageFn] = {
    "group": grpo_advantages,
    "batch": batch_std_advantages,
    "none": dr_grpo_advantages,
    "rloo": rloo_advantages,
    "reinforce_pp": reinforce_pp_advantages,
    "reinforce_pp_baseline": reinforce_pp_baseline_advantages,
}


def resolve_advantage(name: str) -> AdvantageFn:
    """The advantage function for a name in `ADVANTAGES` (the config's `advantage_scale`); call it at setup."""
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage scale {name!r}; choose one of {sorted(ADVANTAGES)}")
    return ADVANTAGES[name]


def group_advantages(rewards: Tensor, group_size: int, scale: AdvantageScale, eps: float = 1e-4) -> Advantages:
    """Advantages `(B*G,)` for `rewards` `(B*G,)` with the estimator `ADVANTAGES[scale]`.

    >>> adv = group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0, 2.0, float("nan")]), 2, "none")
    >>> adv.values.tolist(), adv.zero_std_groups, adv.n_groups
    ([0.5, -0.5, 0.0, 0.0, 0.0, 0.0], 2, 3)
    """
    return resolve_advantage(scale)(rewards, group_size, eps)


# ----------------------------------------------------------------------------- several rewards


def sum_then_normalize(
    total: Tensor,
    group_size: int,
    components: Tensor | None = None,
    weights: Tensor | None = None,
    *,
    advantage: AdvantageFn = grpo_advantages,
    eps: float = 1e-4,
) -> Advantages:
    """Several rewards, GRPO's way (every preset's default): `advantage` of `total` `(B*G,)`, the
    weighted sum `sum_k w_k r_k` (NaN where any is missing). `components`, `weights` unused."""
    return advantage(total, group_size, eps)


def normalize_then_sum(
    total: Tensor,
    group_size: int,
    components: Tensor | None = None,
    weights: Tensor | None = None,
    *,
    advantage: AdvantageFn = grpo_advantages,
    eps: float = 1e-4,
) -> Advantages:
    """GDPO (Liu et al. 2026, arXiv:2601.05242): `S_i = sum_k w_k advantage(r_k)_i`, then
    `A_i = S_i / (std_batch(S) + eps)`; `components` `(K, B*G)` (NaN = not scorable), `weights` `(K,)`.

    Change from vanilla GRPO (which normalises the weighted sum): distinct reward combinations keep
    distinct advantages, and a reward with little spread is not drowned by the others. A row counts
    when every reward scored it (TRL: any reward); the batch mean of `S` is 0 by construction, so it
    is not subtracted again (TRL subtracts its float residue) and zero-std groups stay exactly 0.

    >>> c, w = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]]), torch.tensor([1.0, 1.0])  # K=2, G=4
    >>> [round(a, 3) for a in normalize_then_sum(c.sum(0), 4, c, w).values.tolist()]
    [1.332, 0.206, -0.769, -0.769]
    >>> [round(a, 3) for a in sum_then_normalize(c.sum(0), 4, c, w).values.tolist()]  # GRPO's
    [1.305, 0.261, -0.783, -0.783]
    """
    if components is None or weights is None:
        raise ValueError("normalize_then_sum needs the per-reward values (components) and their weights")
    c = components if components.is_floating_point() else components.float()  # (K, N)
    w = torch.as_tensor(weights, dtype=c.dtype, device=c.device)  # (K,)
    if c.dim() != 2 or c.shape[1] != total.numel() or w.shape != (c.shape[0],):
        raise ValueError(
            f"components must be (K, {total.numel()}) with K weights, got {tuple(c.shape)} and {tuple(w.shape)}"
        )
    valid = ~torch.isnan(c).any(0) & ~torch.isnan(total)  # (N,)
    parts = [advantage(torch.where(valid, ck, math.nan), group_size, eps) for ck in c]
    summed = (w.unsqueeze(-1) * torch.stack([p.values for p in parts])).sum(0)  # (N,)
    values = torch.where(valid, summed / (_batch_std(summed, valid) + eps), 0.0)  # (N,)
    return Advantages(values, torch.stack([p.zero_std for p in parts]).all(0))


RewardNormFn = Callable[..., Advantages]  # the signature of `sum_then_normalize`
REWARD_NORMALIZATIONS: dict[str, RewardNormFn] = {
    "sum_then_normalize": sum_then_normalize,
    "normalize_then_sum": normalize_then_sum,
}


def resolve_reward_normalization(name: str) -> RewardNormFn:
    """The multi-reward normalisation for a name in `REWARD_NORMALIZATIONS`; call it once at setup."""
    if name not in REWARD_NORMALIZATIONS:
        raise ValueError(f"unknown reward normalization {name!r}; choose one of {sorted(REWARD_NORMALIZATIONS)}")
    return REWARD_NORMALIZATIONS[name]


# ----------------------------------------------------------------------------- KL


def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Schulman's k1 (http://joschu.net/blog/kl-approx.html): `logp - ref_logp`, `(B, T)`; unbiased,
    high variance, can be negative."""
    return logp - ref_logp


def kl_k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Schulman's k2: `0.5 * (logp - ref_logp)^2`, `(B, T)`; biased, low variance, >= 0 (as a loss, its
    gradient is the on-policy score-function gradient of KL(pi || ref))."""
    return 0.5 * (logp - ref_logp).square()


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Schulman's k3, DeepSeekMath's Eq. 4: `exp(ref - logp) - (ref - logp) - 1`, `(B, T)`; unbiased,
    low variance, >= 0. `expm1(d) - d` for accuracy near 0; not clamped (verl clamps to [-10, 10])."""
    d = ref_logp - logp
    return torch.expm1(d) - d


KLFn = Callable[[Tensor, Tensor], Tensor]
KL_ESTIMATORS: dict[str, KLFn] = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


def resolve_kl(name: str) -> KLFn:
    """The KL estimator for a name in `KL_ESTIMATORS`; call it once at setup."""
    if name not in KL_ESTIMATORS:
        raise ValueError(f"unknown KL estimator {name!r}; choose one of {sorted(KL_ESTIMATORS)}")
    return KL_ESTIMATORS[name]


def kl_penalty(logp: Tensor, ref_logp: Tensor, estimator: KLEstimator) -> Tensor:
    """Per-token estimate of KL(pi || ref), `(B, T)`, with Schulman's k1, k2 or k3.

    >>> lp, ref = torch.log(torch.tensor([[0.5]])), torch.log(torch.tensor([[0.25]]))
    >>> [round(kl_penalty(lp, ref, k).item(), 4) for k in ("k1", "k2", "k3")]
    [0.6931, 0.2402, 0.1931]
    """
    return resolve_kl(estimator)(logp, ref_logp)


# ----------------------------------------------------------------------------- logits


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of softmax(logits) per position: `H = logsumexp(z) - sum_v p_v z_v`, `(B, T, V)` ->
    `(B, T)`; stable for large logits (no log of a rounded-to-0 probability)."""
    p = torch.softmax(logits, dim=-1)  # (B, T, V)
    return torch.logsumexp(logits, dim=-1) - (p * logits).sum(-1)


def token_logprobs(logits: Tensor, tokens: Tensor) -> Tensor:
    """`log softmax(logits)[tokens]` per position, `(B, T)`, for `logits` `(B, T, V)`, `tokens` `(B, T)`.

    Gathers and subtracts `logsumexp`, so no second `(B, T, V)` tensor is kept for backward. Pass
    float32 logits: bf16 logsumexp is coarse.
    """
    chosen = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return chosen - torch.logsumexp(logits, dim=-1)


# ----------------------------------------------------------------------------- DAPO shaping


def overlong_penalty(lengths: Tensor, max_len: int, buffer: int, penalty: float) -> Tensor:
    """DAPO soft overlong punishment (Yu et al. 2025, Eq. 13), a reward term `(B,)` of `lengths` `(B,)`:
    0 up to `max_len - buffer`, then `penalty * ((max_len - buffer) - len) / buffer`, `-penalty` from
    `max_len` on. The paper uses max_len 20,480, buffer 4,096, penalty 1.

    >>> overlong_penalty(torch.tensor([10, 48, 56, 64, 70]), max_len=64, buffer=16, penalty=1.0).tolist()
    [0.0, 0.0, -0.5, -1.0, -1.0]
    """
    if not 0 < buffer <= max_len:
        raise ValueError(f"overlong buffer must be in (0, max_len={max_len}], got {buffer}")
    length = lengths if lengths.is_floating_point() else lengths.to(torch.get_default_dtype())
    frac = ((max_len - buffer) - length) / buffer  # (B,)
    return frac.clamp(min=-1.0, max=0.0) * penalty
