"""The GRPO objective as pure tensor functions: advantages, reward normalisation, KL, entropy, and
(re-exported from `rlvr.grpo.losses`) the policy losses, token selection and loss aggregation.

Everything here is tensor-in/tensor-out and imports only torch (and its sibling `losses`, which
imports only torch), so the trainer, tests and users can call each piece alone. Variants are chosen
once at setup through the literal dicts `ADVANTAGES`, `REWARD_NORMALIZATIONS`, `POLICY_LOSSES`,
`AGGREGATIONS` and `KL_ESTIMATORS` (via the `resolve_*` functions): the training loop calls plain
functions and never branches on strings. `rlvr.grpo.presets.PRESETS` names the configurations that
reproduce each paper; `docs/papers.md` maps papers to presets and lists where rlvr departs from
them; `docs/objectives.md` explains each variant.

Shapes: `B` sequences in a (micro-)batch, `T` completion positions, `V` vocabulary; for advantages
`B` prompts with `G` samples each, rewards `(B*G,)`. `mask` is `(B, T)`, 1/True on completion
tokens that count, 0 on prompt and padding (padded positions should hold finite values).

Papers: DeepSeekMath (Shao et al. 2024, arXiv:2402.03300) is "vanilla GRPO"; DAPO (Yu et al. 2025,
arXiv:2503.14476); Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical
Perspective", arXiv:2503.20783); RLOO (Ahmadian et al. 2024, "Back to Basics", arXiv:2402.14740);
REINFORCE++ (Hu et al. 2025, arXiv:2501.03262); GDPO (Liu et al. 2026, arXiv:2601.05242); the
policy-loss papers are listed in `rlvr.grpo.losses`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

import torch
from torch import Tensor

from rlvr.grpo.losses import (
    AGGREGATIONS,
    POLICY_LOSSES,
    AggregateFn,
    PolicyLoss,
    PolicyLossFn,
    Reduce,
    aggregate,
    cispo_loss,
    entropy_threshold,
    global_counts,
    gspo_loss,
    gspo_token_loss,
    high_entropy_mask,
    merge_stats,
    policy_loss,
    resolve_aggregation,
    resolve_policy_loss,
    select_top_entropy,
    seq_mean_token_mean,
    seq_mean_token_sum_norm,
    token_mean,
)
from rlvr.grpo.losses import AggregationName as AggregationName  # re-exported: the config's Literals
from rlvr.grpo.losses import Count as Count
from rlvr.grpo.losses import PolicyLossName as PolicyLossName

__all__ = [
    "ADVANTAGES",
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "POLICY_LOSSES",
    "REWARD_NORMALIZATIONS",
    "AdvantageFn",
    "AggregateFn",
    "Advantages",
    "PolicyLoss",
    "PolicyLossFn",
    "Reduce",
    "aggregate",
    "batch_std_advantages",
    "cispo_loss",
    "dr_grpo_advantages",
    "entropy_from_logits",
    "entropy_threshold",
    "global_counts",
    "group_advantages",
    "grpo_advantages",
    "gspo_loss",
    "gspo_token_loss",
    "high_entropy_mask",
    "merge_stats",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_penalty",
    "normalize_then_sum",
    "overlong_penalty",
    "policy_loss",
    "reinforce_pp_advantages",
    "reinforce_pp_baseline_advantages",
    "resolve_advantage",
    "resolve_aggregation",
    "resolve_kl",
    "resolve_policy_loss",
    "resolve_reward_normalization",
    "rloo_advantages",
    "select_top_entropy",
    "seq_mean_token_mean",
    "seq_mean_token_sum_norm",
    "sum_then_normalize",
    "token_logprobs",
    "token_mean",
]

AdvantageScale = Literal["group", "batch", "none", "rloo", "reinforce_pp", "reinforce_pp_baseline"]
RewardNormalization = Literal["sum_then_normalize", "normalize_then_sum"]
KLEstimator = Literal["k1", "k2", "k3"]


# ----------------------------------------------------------------------------- advantages


@dataclass(frozen=True)
class Advantages:
    """Per-sequence advantages and which groups carried no signal.

    `values`: `(B*G,)`, one advantage per completion, in the order of the rewards.
    `zero_std`: `(B,)` bool, True for a group whose valid rewards are all equal or that has fewer
    than 2 valid rewards (DAPO's dynamic sampling drops these); with every estimator that has a
    group baseline all its members get advantage 0 (REINFORCE++ without baseline gives them the
    batch-relative value).
    """

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
    """Vanilla GRPO (DeepSeekMath, Shao et al. 2024, arXiv:2402.03300, outcome supervision).

    `A_i = (r_i - mean_g) / (std_g + eps)` over the valid rewards of the group of `r_i`.
    `rewards`: `(B*G,)` float, groups contiguous, NaN = not scorable. Returns `Advantages` `(B*G,)`.

    Departures from the paper, which does not say which std or eps: unbiased std (`torch.std`,
    as TRL) and `eps = 1e-4` (TRL's). NaN rewards are left out of mean and std and get advantage 0;
    a group with < 2 valid rewards or all valid rewards equal gets 0 everywhere (counted in
    `zero_std`).

    >>> [round(a, 4) for a in grpo_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2).values.tolist()]
    [0.707, -0.707, 0.0, 0.0]
    """
    s = _group_stats(rewards, group_size)
    return _finish(s, s.std + eps)


def batch_std_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """Group mean, batch std: `A_i = (r_i - mean_g) / (std_batch + eps)`.

    `std_batch` is the unbiased std of all valid rewards in the batch (every group, degenerate
    ones included), a single scalar. This is TRL's `scale_rewards="batch"` and the "group-level
    mean, batch-level std" normalisation recommended by Lite PPO (Liu et al. 2025, "Tricks or
    Traps? A Deep Dive into RL for LLM Reasoning", arXiv:2508.08221). It is not REINFORCE++'s
    whitening, which also subtracts the batch mean of the centred values and takes their std.
    Change from vanilla GRPO: groups with small spread are no longer scaled up to unit variance,
    so easy and hard prompts (Dr. GRPO's "question-level difficulty bias") are not reweighted.
    `rewards`: `(B*G,)`; NaN and degenerate groups are handled as in `grpo_advantages`.
    """
    s = _group_stats(rewards, group_size)
    n = s.valid.sum()
    mean = torch.where(s.valid, s.rewards, 0.0).sum() / n.clamp(min=1)
    dev = torch.where(s.valid, s.rewards - mean, 0.0)  # (B, G)
    std = (dev.square().sum() / (n - 1).clamp(min=1)).sqrt()  # ()
    return _finish(s, std + eps)


def dr_grpo_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """Dr. GRPO (Liu et al. 2025, arXiv:2503.20783): `A_i = r_i - mean_g`, no std division.

    Change from vanilla GRPO: dropping the std removes the question-level difficulty bias (groups
    with nearly equal rewards are not blown up). `eps` is accepted for a uniform signature and
    unused. `rewards`: `(B*G,)`; NaN and degenerate groups are handled as in `grpo_advantages`.
    """
    s = _group_stats(rewards, group_size)
    return _finish(s, torch.ones_like(s.std))


def rloo_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """RLOO (Ahmadian et al. 2024, "Back to Basics", arXiv:2402.14740; Kool et al. 2019):
    `A_i = r_i - mean_{j != i} r_j`, the leave-one-out baseline over the valid rewards of the group.

    Equal to `n/(n-1) * (r_i - mean_g)` for `n` valid rewards, so it is Dr. GRPO's advantage
    scaled by `n/(n-1)`: the baseline no longer contains the sample itself, which makes the
    estimator unbiased. `eps` is unused. `rewards`: `(B*G,)`; NaN rewards are left out of the
    baseline and get 0, degenerate groups get 0 (as `grpo_advantages`; TRL's RLOOTrainer alike).
    Change from vanilla GRPO: no std division, and the baseline leaves the sample out.

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
    """REINFORCE++ (Hu et al. 2025, arXiv:2501.03262), outcome rewards, `k = 1` form:
    `A_i = (r_i - mean_batch) / (std_batch + eps)`, global batch normalisation, no group baseline.

    `mean_batch`, `std_batch` (unbiased) over every valid reward of the batch. `rewards`: `(B*G,)`;
    NaN rewards get 0; a batch whose valid rewards are all equal gets 0 everywhere. `zero_std`
    still flags the groups without internal spread, but their members get non-zero advantages: a
    prompt everybody solves is pushed up, one nobody solves down (no row is skipped).
    Change from vanilla GRPO: the baseline and scale are the batch's, not the group's, which the
    paper argues is less biased and overfits less to easy prompts. Departures: the paper folds a
    per-token k1 KL into the reward and whitens over tokens (each sequence weighted by its length);
    rlvr whitens over sequences and adds KL, if any, as a loss term (`beta`, `kl_estimator`).

    >>> [round(a, 3) for a in reinforce_pp_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2).values.tolist()]
    [0.5, -1.5, 0.5, 0.5]
    """
    s = _group_stats(rewards, group_size)
    n = s.valid.sum()
    mean = torch.where(s.valid, s.rewards, 0.0).sum() / n.clamp(min=1)
    hi = torch.where(s.valid, s.rewards, -math.inf).amax()
    lo = torch.where(s.valid, s.rewards, math.inf).amin()
    flat = (n < 2) | (hi == lo)  # () exactly equal rewards: 0, not a float residue over eps
    keep = s.valid & ~flat  # (B, G)
    values = torch.where(keep, (s.rewards - mean) / (_batch_std(s.rewards, s.valid) + eps), 0.0)  # (B, G)
    return Advantages(values.reshape(-1), s.zero_std)


def reinforce_pp_baseline_advantages(rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages:
    """REINFORCE++ with baseline (Hu et al. 2025, arXiv:2501.03262, the `k > 1` form; verl's
    `reinforce_plus_plus_baseline`): `A_i = (r_i - mean_g) / (std_batch(r - mean_g) + eps)`.

    The group mean first, then the unbiased std of the group-centred values over the whole batch
    (degenerate groups count as zeros). `rewards`: `(B*G,)`; NaN and degenerate groups as in
    `grpo_advantages`. The batch mean of the centred values is 0 by construction, so whitening
    reduces to the division (degenerate groups stay exactly 0).
    Change from vanilla GRPO: one batch-wide scale instead of each group's std (unlike
    `batch_std_advantages`, the std of the centred values, not of the raw rewards). Departure:
    verl whitens over tokens (length-weighted); rlvr over sequences.

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
    """Advantages `(B*G,)` for `rewards` `(B*G,)` with the named estimator of `ADVANTAGES`.

    `"group"` -> `grpo_advantages`, `"batch"` -> `batch_std_advantages`, `"none"` ->
    `dr_grpo_advantages`, `"rloo"` -> `rloo_advantages`, `"reinforce_pp"` ->
    `reinforce_pp_advantages`, `"reinforce_pp_baseline"` -> `reinforce_pp_baseline_advantages`;
    see those for the formulas. NaN rewards get 0 and are excluded.

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
    """Several rewards, GRPO's way: the estimator `advantage` applied to the weighted sum `total`.

    `total`: `(B*G,)`, `sum_k w_k r_k` (NaN where any reward is missing); `components` `(K, B*G)`
    and `weights` `(K,)` are accepted for a uniform signature and unused. This is what every
    preset does by default (TRL's `multi_objective_aggregation="sum_then_normalize"`).
    """
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
    """GDPO (Liu et al. 2026, "Group reward-Decoupled Normalization Policy Optimization",
    arXiv:2601.05242): normalise each reward in its group, sum with the weights, whiten the batch.

    `S_i = sum_k w_k advantage(r_k)_i`, then `A_i = S_i / (std_batch(S) + eps)` (unbiased std over
    the valid rows). `components`: `(K, B*G)`, reward k's raw values (NaN = not scorable);
    `weights`: `(K,)`; `total`: `(B*G,)`, NaN rows are invalid too. A row counts when every reward
    scored it, as in `total` (TRL counts a row that any reward scored); invalid rows get 0 and are
    left out of every statistic. With `advantage = grpo_advantages` this is GDPO and TRL's
    `multi_objective_aggregation="normalize_then_sum"`. Every estimator's values sum to 0 over
    the batch, so the batch mean of `S` is 0 by construction and is not subtracted again (TRL
    subtracts its float residue); zero-std groups therefore stay exactly 0. `zero_std`: groups
    where no reward has spread.
    Change from vanilla GRPO (which normalises the weighted sum): distinct reward combinations
    keep distinct advantages (the paper's "advantage collapse"), and a reward with little spread
    in a group is not drowned by the others.

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


class RewardNormFn(Protocol):
    def __call__(
        self,
        total: Tensor,
        group_size: int,
        components: Tensor | None = None,
        weights: Tensor | None = None,
        *,
        advantage: AdvantageFn = ...,
        eps: float = 1e-4,
    ) -> Advantages: ...


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
    """Schulman's k1 (http://joschu.net/blog/kl-approx.html): `logp - ref_logp`, `(B, T)`.

    Unbiased for KL(pi || ref) on samples from pi, high variance, can be negative.
    """
    return logp - ref_logp


def kl_k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Schulman's k2: `0.5 * (logp - ref_logp)^2`, `(B, T)`; biased, low variance, >= 0.

    As a loss its gradient `(logp - ref_logp) * grad logp` is the on-policy score-function
    gradient of KL(pi || ref).
    """
    return 0.5 * (logp - ref_logp).square()


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Schulman's k3, DeepSeekMath's Eq. 4: `exp(ref - logp) - (ref - logp) - 1`, `(B, T)`.

    Unbiased for KL(pi || ref) on samples from pi, low variance, >= 0. Computed as
    `expm1(d) - d` for accuracy near 0; not clamped (verl clamps to [-10, 10]; TRL does not).
    """
    d = ref_logp - logp
    return torch.expm1(d) - d


class KLFn(Protocol):
    def __call__(self, logp: Tensor, ref_logp: Tensor) -> Tensor: ...


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
    """Entropy of softmax(logits) per position: `H = logsumexp(z) - sum_v p_v z_v`, `(B, T)`.

    `logits`: `(B, T, V)`, finite. Stable for large logits (no log of a rounded-to-0 probability).
    """
    p = torch.softmax(logits, dim=-1)  # (B, T, V)
    return torch.logsumexp(logits, dim=-1) - (p * logits).sum(-1)


def token_logprobs(logits: Tensor, tokens: Tensor) -> Tensor:
    """`log softmax(logits)[tokens]` per position, `(B, T)`, for `logits` `(B, T, V)`, `tokens` `(B, T)`.

    Gathers the chosen logit and subtracts `logsumexp`, so no second `(B, T, V)` tensor
    (a full `log_softmax`) is kept for backward. Pass float32 logits: bf16 logsumexp is coarse.
    """
    chosen = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return chosen - torch.logsumexp(logits, dim=-1)


# ----------------------------------------------------------------------------- DAPO shaping


def overlong_penalty(lengths: Tensor, max_len: int, buffer: int, penalty: float) -> Tensor:
    """DAPO soft overlong punishment (Yu et al. 2025, Eq. 13), a reward term `(B,)`.

    `R = 0` if `len <= max_len - buffer`; `R = penalty * ((max_len - buffer) - len) / buffer`
    in the buffer, reaching `-penalty` at `max_len`; `-penalty` beyond. `lengths`: `(B,)`
    completion lengths in tokens. The paper uses max_len 20,480, buffer 4,096, penalty 1.

    >>> overlong_penalty(torch.tensor([10, 48, 56, 64, 70]), max_len=64, buffer=16, penalty=1.0).tolist()
    [0.0, 0.0, -0.5, -1.0, -1.0]
    """
    if not 0 < buffer <= max_len:
        raise ValueError(f"overlong buffer must be in (0, max_len={max_len}], got {buffer}")
    length = lengths if lengths.is_floating_point() else lengths.to(torch.get_default_dtype())
    frac = ((max_len - buffer) - length) / buffer  # (B,)
    return frac.clamp(min=-1.0, max=0.0) * penalty
