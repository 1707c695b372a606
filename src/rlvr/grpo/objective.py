"""The GRPO objective as pure tensor functions: advantages, clipped loss, aggregation, KL, entropy.

Everything here is tensor-in/tensor-out and imports only torch, so the trainer, tests and users can
call each piece alone. Variants are chosen once at setup through the literal dicts `ADVANTAGES`,
`AGGREGATIONS` and `KL_ESTIMATORS` (via `resolve_advantage`, `resolve_aggregation`, `resolve_kl`):
the training loop calls plain functions and never branches on strings. `rlvr.grpo.presets.PRESETS`
names the configurations that reproduce each paper; `docs/papers.md` maps papers to presets and
lists where rlvr departs from them.

Shapes: `B` sequences in a (micro-)batch, `T` completion positions, `V` vocabulary; for advantages
`B` prompts with `G` samples each, rewards `(B*G,)`. `mask` is `(B, T)`, 1/True on completion
tokens that count, 0 on prompt and padding (padded positions should hold finite values).

Papers: DeepSeekMath (Shao et al. 2024, arXiv:2402.03300) is "vanilla GRPO"; DAPO (Yu et al. 2025,
arXiv:2503.14476); Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical
Perspective", arXiv:2503.20783).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

import torch
from torch import Tensor

__all__ = [
    "ADVANTAGES",
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "Advantages",
    "aggregate",
    "batch_std_advantages",
    "dr_grpo_advantages",
    "entropy_from_logits",
    "global_counts",
    "group_advantages",
    "grpo_advantages",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_penalty",
    "overlong_penalty",
    "policy_loss",
    "resolve_advantage",
    "resolve_aggregation",
    "resolve_kl",
    "seq_mean_token_mean",
    "seq_mean_token_sum_norm",
    "token_logprobs",
    "token_mean",
]

AdvantageScale = Literal["group", "batch", "none"]
AggregationName = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
KLEstimator = Literal["k1", "k2", "k3"]
Count = int | float | Tensor  # a normaliser: a Python number or a 0-d tensor


# ----------------------------------------------------------------------------- advantages


@dataclass(frozen=True)
class Advantages:
    """Per-sequence advantages and which groups carried no signal.

    `values`: `(B*G,)`, one advantage per completion, in the order of the rewards.
    `zero_std`: `(B,)` bool, True for a group whose valid rewards are all equal or that has fewer
    than 2 valid rewards; all its members get advantage 0 (DAPO's dynamic sampling drops these).
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


class AdvantageFn(Protocol):
    def __call__(self, rewards: Tensor, group_size: int, eps: float = 1e-4) -> Advantages: ...


ADVANTAGES: dict[str, AdvantageFn] = {
    "group": grpo_advantages,
    "batch": batch_std_advantages,
    "none": dr_grpo_advantages,
}


def resolve_advantage(name: str) -> AdvantageFn:
    """The advantage function for a scale name (`"group"`, `"batch"`, `"none"`); call it at setup."""
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage scale {name!r}; choose one of {sorted(ADVANTAGES)}")
    return ADVANTAGES[name]


def group_advantages(rewards: Tensor, group_size: int, scale: AdvantageScale, eps: float = 1e-4) -> Advantages:
    """Group-relative advantages `(B*G,)` for `rewards` `(B*G,)` with the named std scaling.

    `"group"` -> `grpo_advantages`, `"batch"` -> `batch_std_advantages`, `"none"` ->
    `dr_grpo_advantages`; see those for the formulas. NaN rewards get 0 and are excluded.

    >>> adv = group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0, 2.0, float("nan")]), 2, "none")
    >>> adv.values.tolist(), adv.zero_std_groups, adv.n_groups
    ([0.5, -0.5, 0.0, 0.0, 0.0, 0.0], 2, 3)
    """
    return resolve_advantage(scale)(rewards, group_size, eps)


# ----------------------------------------------------------------------------- aggregation


def _masked(values: Tensor, mask: Tensor) -> Tensor:
    # where, not multiply: a NaN/inf at a padded position must not leak into the sum.
    return torch.where(mask.bool(), values, 0.0)


def _n_seqs(mask: Tensor) -> Tensor:
    return (mask.bool().sum(-1) > 0).sum()


def global_counts(mask: Tensor) -> tuple[Tensor, Tensor]:
    """`(n_tokens, n_seqs)` of a full batch's `(B, T)` mask, to pass to every micro-batch's loss.

    A sequence counts when it has at least one mask token (a fully masked one, e.g. a truncated
    completion under `mask_truncated`, adds nothing to any sequence mean).

    >>> global_counts(torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]]))
    (tensor(3), tensor(2))
    """
    return mask.bool().sum(), _n_seqs(mask)


def token_mean(
    values: Tensor,
    mask: Tensor,
    *,
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
) -> Tensor:
    """DAPO token-level loss (Yu et al. 2025, arXiv:2503.14476, Eq. 12): `sum_{i,t} v_it / N`.

    `values`, `mask`: `(B, T)`; returns a scalar. `N` = `n_tokens_global` when given (the mask
    sum of the whole batch across gradient-accumulation micro-batches, and across data-parallel
    ranks if gradients are summed), else the local mask sum. Summing micro-batch losses computed
    with the global `N` gives the full-batch loss exactly.
    Change from vanilla GRPO: every token weighs the same, so long sequences are not down-weighted
    per token (GRPO's length bias). `max_len` and `n_seqs_global` are ignored.
    """
    n = mask.bool().sum().clamp(min=1) if n_tokens_global is None else n_tokens_global
    return _masked(values, mask).sum() / n


def seq_mean_token_mean(
    values: Tensor,
    mask: Tensor,
    *,
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
) -> Tensor:
    """Vanilla GRPO (DeepSeekMath Eq. 3): `(1/S) sum_i (1/|o_i|) sum_t v_it`.

    `values`, `mask`: `(B, T)`; returns a scalar. `|o_i|` is the mask sum of row i; `S` is
    `n_seqs_global` when given (non-empty sequences of the whole batch, see `global_counts`),
    else the local number of non-empty rows. Rows with no mask token contribute 0.
    """
    m = mask.bool()
    per_seq = _masked(values, m).sum(-1) / m.sum(-1).clamp(min=1)  # (B,)
    n = _n_seqs(m).clamp(min=1) if n_seqs_global is None else n_seqs_global
    return per_seq.sum() / n


def seq_mean_token_sum_norm(
    values: Tensor,
    mask: Tensor,
    *,
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
) -> Tensor:
    """Dr. GRPO (Liu et al. 2025, arXiv:2503.20783): `(1/S) sum_i (1/L) sum_t v_it`, `L = max_len`.

    `values`, `mask`: `(B, T)`; returns a scalar. `L` is a constant (the generation budget,
    required), so a sequence's weight does not depend on its own length. `S` as in
    `seq_mean_token_mean`. Change from vanilla GRPO: `1/|o_i|` becomes the constant `1/L`, which
    removes the response-length bias (long wrong answers no longer get a smaller per-token
    penalty).
    """
    if max_len is None or max_len <= 0:
        raise ValueError("seq_mean_token_sum_norm needs max_len > 0 (the generation budget)")
    m = mask.bool()
    per_seq = _masked(values, m).sum(-1) / max_len  # (B,)
    n = _n_seqs(m).clamp(min=1) if n_seqs_global is None else n_seqs_global
    return per_seq.sum() / n


class AggregateFn(Protocol):
    def __call__(
        self,
        values: Tensor,
        mask: Tensor,
        *,
        max_len: int | None = None,
        n_tokens_global: Count | None = None,
        n_seqs_global: Count | None = None,
    ) -> Tensor: ...


AGGREGATIONS: dict[str, AggregateFn] = {
    "token_mean": token_mean,
    "seq_mean_token_mean": seq_mean_token_mean,
    "seq_mean_token_sum_norm": seq_mean_token_sum_norm,
}


def resolve_aggregation(name: str) -> AggregateFn:
    """The aggregation function for a name in `AGGREGATIONS`; call it once at setup."""
    if name not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {name!r}; choose one of {sorted(AGGREGATIONS)}")
    return AGGREGATIONS[name]


def aggregate(
    values: Tensor,
    mask: Tensor,
    aggregation: AggregationName,
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
) -> Tensor:
    """Reduce per-token `values` `(B, T)` under `mask` `(B, T)` to a scalar, as the named variant.

    The policy loss and the KL term go through the same function, so both are reduced alike.

    >>> v, m = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([[1, 1, 0], [1, 1, 1]])
    >>> [round(aggregate(v, m, a, max_len=3).item(), 4) for a in AGGREGATIONS]
    [3.6, 3.25, 3.0]
    """
    fn = resolve_aggregation(aggregation)
    return fn(values, mask, max_len=max_len, n_tokens_global=n_tokens_global, n_seqs_global=n_seqs_global)


# ----------------------------------------------------------------------------- policy loss


def policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    aggregation: AggregationName | AggregateFn = "token_mean",
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
    is_weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Clipped surrogate loss with decoupled clip range, aggregated; returns `(loss, stats)`.
    `is_weights` `(B, T)`, when given, multiply each token's loss (the rollout-mismatch correction of
    `rlvr.grpo.correction`; no gradient flows through them).

    `logp`, `old_logp`, `mask`: `(B, T)`; `advantages`: `(B,)`. Per token:
    `rho = exp(logp - old_logp)`, `l = -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A)`,
    then `aggregation` (a name or a function from `resolve_aggregation`) reduces `l` to a scalar.
    Vanilla GRPO (DeepSeekMath) has `eps_low = eps_high`; DAPO's clip-higher raises `eps_high`
    (0.28) so low-probability tokens can grow. No KL here: add `beta * aggregate(kl_penalty(...))`.

    `stats` (detached, over the local mask tokens): `clip_frac_low`, the fraction where
    `rho < 1 - eps_low` and `A < 0`; `clip_frac_high`, where `rho > 1 + eps_high` and `A > 0`;
    `clip_frac`, either. These are exactly the tokens where the clipped branch wins and the
    gradient is zero (TRL's `clip_ratio/low_mean`, `high_mean`; verl's `pg_clipfrac`).
    `ratio_mean`, `ratio_min`, `ratio_max` of `rho` (min/max are +inf/-inf on an empty mask).
    """
    agg = resolve_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
    ratio = torch.exp(logp - old_logp)  # (B, T)
    adv = advantages.unsqueeze(-1)  # (B, 1)
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)  # (B, T)
    per_token = -torch.minimum(ratio * adv, clipped * adv)  # (B, T)
    if is_weights is not None:
        per_token = per_token * is_weights.detach()
    loss = agg(per_token, mask, max_len=max_len, n_tokens_global=n_tokens_global, n_seqs_global=n_seqs_global)
    with torch.no_grad():
        m = mask.bool()
        n = m.sum().clamp(min=1)
        r = ratio.detach()
        low = m & (r < 1.0 - eps_low) & (adv < 0)  # (B, T)
        high = m & (r > 1.0 + eps_high) & (adv > 0)  # (B, T)
        stats = {
            "clip_frac_low": low.sum() / n,
            "clip_frac_high": high.sum() / n,
            "clip_frac": (low | high).sum() / n,
            "ratio_mean": torch.where(m, r, 0.0).sum() / n,
            "ratio_min": torch.where(m, r, math.inf).amin(),
            "ratio_max": torch.where(m, r, -math.inf).amax(),
        }
    return loss, stats


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
