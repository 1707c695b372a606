"""From per-token log-probs to one scalar loss: policy-gradient surrogates, token selection, aggregation.

The loss half of the objective (`rlvr.grpo.objective` re-exports it), pure tensor functions that import
only torch. Each policy loss is declared once in `POLICY_LOSSES` and each aggregation in `AGGREGATIONS`,
both chosen once at setup (`resolve_policy_loss`, `resolve_aggregation`). Shapes: `B` sequences, `T`
completion positions; `logp`, `old_logp`, `mask`, `is_weights`, `entropy` `(B, T)`, `advantages` `(B,)`;
`mask` is 1 on completion tokens that count, 0 on prompt and padding (which should hold finite values).
docs/objectives.md explains each variant with its config keys.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import torch
from torch import Tensor

__all__ = [
    "AGGREGATIONS",
    "POLICY_LOSSES",
    "AggregateFn",
    "PolicyLoss",
    "PolicyLossFn",
    "Reduce",
    "aggregate",
    "cispo_loss",
    "entropy_threshold",
    "global_counts",
    "gspo_loss",
    "gspo_token_loss",
    "high_entropy_mask",
    "merge_stats",
    "policy_loss",
    "resolve_aggregation",
    "resolve_policy_loss",
    "select_top_entropy",
    "seq_mean_token_mean",
    "seq_mean_token_sum_norm",
    "token_mean",
]

AggregationName = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
PolicyLossName = Literal["clip", "gspo", "gspo_token", "cispo"]
Count = int | float | Tensor  # a normaliser: a Python number or a 0-d tensor


# ----------------------------------------------------------------------------- aggregation


def _masked(values: Tensor, mask: Tensor) -> Tensor:
    # where, not multiply: a NaN/inf at a padded position must not leak into the sum.
    return torch.where(mask.bool(), values, 0.0)


def _n_seqs(mask: Tensor) -> Tensor:
    return (mask.bool().sum(-1) > 0).sum()


def global_counts(mask: Tensor) -> tuple[Tensor, Tensor]:
    """`(n_tokens, n_seqs)` of a full batch's `(B, T)` mask, to pass to every micro-batch's loss; a
    sequence counts when it has a mask token (a fully masked one adds nothing to any sequence mean).

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
    """DAPO token-level loss (Yu et al. 2025, arXiv:2503.14476, Eq. 12): `sum_{i,t} v_it / N`, `(B, T)`
    -> scalar. `N` = `n_tokens_global` (the whole batch's mask sum over micro-batches and ranks, so
    the micro-batch losses sum to the full-batch loss) or the local mask sum. Change from vanilla
    GRPO: every token weighs the same (no length bias). `max_len`, `n_seqs_global` ignored.
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
    """Vanilla GRPO (DeepSeekMath Eq. 3): `(1/S) sum_i (1/|o_i|) sum_t v_it`, `(B, T)` -> scalar.
    `|o_i|` is row i's mask sum; `S` is `n_seqs_global` (`global_counts`) or the local number of
    non-empty rows. Rows with no mask token contribute 0."""
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
    """Dr. GRPO (Liu et al. 2025, arXiv:2503.20783): `(1/S) sum_i (1/L) sum_t v_it`, `(B, T)` -> scalar,
    `L = max_len` (the generation budget, required), `S` as in `seq_mean_token_mean`. Change from
    vanilla GRPO: the constant `1/L` for `1/|o_i|` removes the response-length bias.
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

    >>> v, m = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([[1, 1, 0], [1, 1, 1]])
    >>> [round(aggregate(v, m, a, max_len=3).item(), 4) for a in AGGREGATIONS]
    [3.6, 3.25, 3.0]
    """
    fn = resolve_aggregation(aggregation)
    return fn(values, mask, max_len=max_len, n_tokens_global=n_tokens_global, n_seqs_global=n_seqs_global)


# ----------------------------------------------------------------------------- policy losses


def _ratio_stats(ratio: Tensor, m: Tensor) -> dict[str, Tensor]:
    """`ratio_mean` over the mask tokens, `ratio_min`/`ratio_max` (+inf/-inf on an empty mask)."""
    n = m.sum().clamp(min=1)
    return {
        "ratio_mean": torch.where(m, ratio, 0.0).sum() / n,
        "ratio_min": torch.where(m, ratio, math.inf).amin(),
        "ratio_max": torch.where(m, ratio, -math.inf).amax(),
    }


def _reduce(
    per_token: Tensor,
    mask: Tensor,
    aggregation: AggregationName | AggregateFn,
    is_weights: Tensor | None,
    max_len: int | None,
    n_tokens_global: Count | None,
    n_seqs_global: Count | None,
) -> Tensor:
    """A policy loss's `per_token` `(B, T)`, times `is_weights` (no gradient), reduced by `aggregation`."""
    if is_weights is not None:
        per_token = per_token * is_weights.detach()
    agg = resolve_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
    return agg(per_token, mask, max_len=max_len, n_tokens_global=n_tokens_global, n_seqs_global=n_seqs_global)


def _clipped_surrogate(ratio: Tensor, adv: Tensor, eps_low: float, eps_high: float, delta: float | None) -> Tensor:
    """`-min(min(ratio, delta) * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A)`, elementwise."""
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    surr = ratio if delta is None else torch.clamp(ratio, max=delta)
    return -torch.minimum(surr * adv, clipped * adv)


def _clip_stats(
    r: Tensor, adv: Tensor, m: Tensor, eps_low: float, eps_high: float, delta: float | None
) -> tuple[dict[str, Tensor], Tensor]:
    """Shares of the mask tokens of `m` `(B, T)`, for ratios `r` `(B, T)` and advantages `(B, 1)`:
    `clip_frac_low` (`r < 1 - eps_low`, `A < 0`), `clip_frac_high` (`r > 1 + eps_high`, `A > 0`),
    `clip_frac_delta` (`r > delta`, `A < 0`; only with `delta`), `clip_frac` (any: the tokens with zero
    gradient), with `ratio_mean|min|max` of `r`; and the `(B, T)` mask of the clipped tokens."""
    n = m.sum().clamp(min=1)
    low = m & (r < 1.0 - eps_low) & (adv < 0)  # (B, T)
    high = m & (r > 1.0 + eps_high) & (adv > 0)  # (B, T)
    stats = {"clip_frac_low": low.sum() / n, "clip_frac_high": high.sum() / n}
    if delta is not None:
        dual = m & (r > delta) & (adv < 0)  # (B, T)
        stats["clip_frac_delta"] = dual.sum() / n
        low = low | dual
    stats["clip_frac"] = (low | high).sum() / n
    return {**stats, **_ratio_stats(r, m)}, low | high


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
    delta: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """`"clip"`: the PPO/GRPO clipped surrogate, token level, decoupled clip range; `(loss, stats)`.

    Per token `rho = exp(logp - old_logp)`, `l = -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A)`,
    reduced by `aggregation` (a name or a function). Vanilla GRPO has `eps_low = eps_high`; DAPO's
    clip-higher raises `eps_high` (0.28). No KL here. `is_weights` `(B, T)` multiply each token's loss
    (the rollout correction of `rlvr.grpo.correction`, or a 0/1 token selection; no gradient).
    `delta` (None = off): two-sided clipping (INTELLECT-2, arXiv:2505.07291, Sec. 4.1; dual clip,
    arXiv:1912.09729): the unclipped branch uses `min(rho, delta)`, bounding the loss of a token with
    `A < 0` whose ratio ran away; needs `delta > 1 + eps_high`. `stats` (detached): `_clip_stats` of `rho`.
    """
    ratio = torch.exp(logp - old_logp)  # (B, T)
    adv = advantages.unsqueeze(-1)  # (B, 1)
    per_token = _clipped_surrogate(ratio, adv, eps_low, eps_high, delta)  # (B, T)
    loss = _reduce(per_token, mask, aggregation, is_weights, max_len, n_tokens_global, n_seqs_global)
    with torch.no_grad():
        stats, _ = _clip_stats(ratio.detach(), adv, mask.bool(), eps_low, eps_high, delta)
    return loss, stats


def _sequence_log_ratio(logp: Tensor, old_logp: Tensor, m: Tensor) -> Tensor:
    """`mean_t (logp - old_logp)` over each row's mask tokens, `(B,)`; 0 for an empty row."""
    return torch.where(m, logp - old_logp, 0.0).sum(-1) / m.sum(-1).clamp(min=1)


def _sequence_clip(
    s: Tensor, adv: Tensor, m: Tensor, eps_low: float, eps_high: float, delta: float | None
) -> dict[str, Tensor]:
    """GSPO's statistics from the sequence ratios `s` `(B, 1)`: `_clip_stats` of `s` on every token of
    its row, and `seq_clip_frac` over the non-empty rows."""
    stats, clipped = _clip_stats(s.expand(m.shape), adv, m, eps_low, eps_high, delta)
    stats["seq_clip_frac"] = clipped.any(-1).sum() / m.any(-1).sum().clamp(min=1)
    return stats


def gspo_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
    aggregation: AggregationName | AggregateFn = "seq_mean_token_mean",
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
    is_weights: Tensor | None = None,
    delta: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """`"gspo"`: GSPO (Zheng et al. 2025, arXiv:2507.18071, Eq. 5-7); `(loss, stats)`.

    Sequence ratio `s_i = exp((1/|o_i|) sum_t (logp_it - old_logp_it))`, clipped per sequence:
    `l_i = -min(s_i * A_i, clip(s_i, 1 - eps_low, 1 + eps_high) * A_i)` on every mask token of row i,
    then `aggregation` (`seq_mean_token_mean` gives the paper's `1/G sum_i`). `is_weights` and
    `delta` (on `s_i`) as in `policy_loss`. Change from vanilla GRPO: one ratio and one clip decision
    per sequence, so a clipped sequence sends no gradient through any token; the range is tiny
    (3e-4 / 4e-4) as `s_i` is a geometric mean. On-policy `s_i = 1` and GSPO equals GRPO. `stats`:
    those of `policy_loss` for `s_i` on every token of its sequence, and `seq_clip_frac`.
    """
    m = mask.bool()
    s = torch.exp(_sequence_log_ratio(logp, old_logp, m)).unsqueeze(-1)  # (B, 1)
    adv = advantages.unsqueeze(-1)  # (B, 1)
    per_token = _clipped_surrogate(s, adv, eps_low, eps_high, delta).expand_as(logp)  # (B, T)
    loss = _reduce(per_token, mask, aggregation, is_weights, max_len, n_tokens_global, n_seqs_global)
    with torch.no_grad():
        stats = _sequence_clip(s.detach(), adv, m, eps_low, eps_high, delta)
    return loss, stats


def gspo_token_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
    aggregation: AggregationName | AggregateFn = "seq_mean_token_mean",
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
    is_weights: Tensor | None = None,
    delta: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """`"gspo_token"`: GSPO-token (Zheng et al. 2025, arXiv:2507.18071, Eq. 13-14); `(loss, stats)`.

    Token ratio `s_it = sg(s_i) * exp(logp_it - sg(logp_it))` (value `s_i`, gradient of `logp_it`),
    then the token-level clipped surrogate and `aggregation`; the rest as in `gspo_loss`. With one
    advantage per sequence its loss and gradient equal `gspo_loss`'s (tested); the form exists for
    per-token advantages. Change from vanilla GRPO: as GSPO.
    """
    m = mask.bool()
    log_s = _sequence_log_ratio(logp, old_logp, m).detach().unsqueeze(-1)  # (B, 1)
    coef = torch.exp(logp - logp.detach() + log_s)  # (B, T): value s_i, gradient of logp_it
    adv = advantages.unsqueeze(-1)  # (B, 1)
    per_token = _clipped_surrogate(coef, adv, eps_low, eps_high, delta)  # (B, T)
    loss = _reduce(per_token, mask, aggregation, is_weights, max_len, n_tokens_global, n_seqs_global)
    with torch.no_grad():
        stats = _sequence_clip(torch.exp(log_s), adv, m, eps_low, eps_high, delta)
    return loss, stats


def cispo_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 4.0,
    aggregation: AggregationName | AggregateFn = "token_mean",
    max_len: int | None = None,
    n_tokens_global: Count | None = None,
    n_seqs_global: Count | None = None,
    is_weights: Tensor | None = None,
    delta: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """`"cispo"`: CISPO (MiniMax-M1, 2025, arXiv:2506.13585, Eq. 4-5); `(loss, stats)`.

    Per token `l = -sg(min(rho, 1 + eps_high)) * A * logp`, `rho = exp(logp - old_logp)`, then
    `aggregation` (the paper's: `token_mean`); `is_weights` as in `policy_loss`. `eps_low` unused (no
    lower bound, as TRL); `delta` must be None. Change from vanilla GRPO: the weight is capped and its
    gradient stopped, so a token outside the clip range still gets gradient (rare "fork" tokens keep
    learning off-policy). TRL's `epsilon_high` is `1 + eps_high` here (ScaleRL, arXiv:2510.13786: 5).
    `stats`: `clip_frac_high` / `clip_frac_low` count the capped weights with `A > 0` / `A < 0`.
    """
    if delta is not None:
        raise ValueError("cispo: delta does not apply (the importance weight is already capped at 1 + eps_high)")
    ratio = torch.exp(logp - old_logp)  # (B, T)
    adv = advantages.unsqueeze(-1)  # (B, 1)
    weight = torch.clamp(ratio, max=1.0 + eps_high).detach()  # (B, T)
    per_token = -weight * adv * logp  # (B, T)
    loss = _reduce(per_token, mask, aggregation, is_weights, max_len, n_tokens_global, n_seqs_global)
    with torch.no_grad():
        m = mask.bool()
        n = m.sum().clamp(min=1)
        r = ratio.detach()
        capped = m & (r > 1.0 + eps_high)  # (B, T)
        high, low = capped & (adv > 0), capped & (adv < 0)
        stats = {"clip_frac_low": low.sum() / n, "clip_frac_high": high.sum() / n, "clip_frac": (low | high).sum() / n}
        stats.update(_ratio_stats(r, m))
    return loss, stats


PolicyLossFn = Callable[..., tuple[Tensor, dict[str, Tensor]]]  # the signature of `policy_loss`


Reduce = Literal["token", "seq", "min", "max"]
"""How a statistic merges over micro-batches and data-parallel ranks (`merge_stats`): a mean weighted by
mask tokens or by non-empty sequences, or the extreme."""


@dataclass(frozen=True)
class PolicyLoss:
    """A policy loss declared once: its pure function, the objective fields it reads (`knobs`, passed
    by name) and each statistic it returns with how that merges (`Reduce`). Calling it calls `fn`."""

    fn: PolicyLossFn
    knobs: tuple[str, ...]
    stats: Mapping[str, Reduce]

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Tensor, dict[str, Tensor]]:
        return self.fn(*args, **kwargs)

    def bind(self, objective: Any, aggregation: AggregateFn) -> Callable[..., tuple[Tensor, dict[str, Tensor]]]:
        """The loss with `objective`'s knobs and the aggregation filled in (once, at setup)."""
        return functools.partial(self.fn, aggregation=aggregation, **{k: getattr(objective, k) for k in self.knobs})


_CLIPS: dict[str, Reduce] = {"clip_frac_low": "token", "clip_frac_high": "token", "clip_frac": "token"}
_RATIOS: dict[str, Reduce] = {"ratio_mean": "token", "ratio_min": "min", "ratio_max": "max"}
_TOKEN: dict[str, Reduce] = {**_CLIPS, "clip_frac_delta": "token", **_RATIOS}
_SEQUENCE: dict[str, Reduce] = {**_TOKEN, "seq_clip_frac": "seq"}

POLICY_LOSSES: dict[str, PolicyLoss] = {
    "clip": PolicyLoss(
        policy_loss, ("eps_low", "eps_high", "delta"), {**_CLIPS, "clip_frac_delta": "token", **_RATIOS}
    ),
    "gspo": PolicyLoss(gspo_loss, ("eps_low", "eps_high", "delta"), _SEQUENCE),
    "gspo_token": PolicyLoss(gspo_token_loss, ("eps_low", "eps_high", "delta"), _SEQUENCE),
    "cispo": PolicyLoss(cispo_loss, ("eps_high",), {**_CLIPS, **_RATIOS}),
}


def resolve_policy_loss(name: str) -> PolicyLoss:
    """The policy loss declared as `name` in `POLICY_LOSSES`; call it once at setup."""
    if name not in POLICY_LOSSES:
        raise ValueError(f"unknown policy loss {name!r}; choose one of {sorted(POLICY_LOSSES)}")
    return POLICY_LOSSES[name]


def merge_stats(
    parts: Sequence[tuple[Mapping[str, float], float, float]], reduce: Mapping[str, Reduce]
) -> dict[str, float]:
    """The statistics of several micro-batches or ranks, each given as `(stats, mask tokens, non-empty
    sequences)`, merged as `reduce` declares; a statistic no part has is left out.

    >>> merge_stats([({"clip_frac": 0.5, "seq_clip_frac": 0.5, "ratio_min": 0.9}, 30.0, 2.0),
    ...              ({"clip_frac": 0.0, "seq_clip_frac": 0.0, "ratio_min": 1.0}, 10.0, 6.0)],
    ...             {"clip_frac": "token", "seq_clip_frac": "seq", "ratio_min": "min", "kl": "token"})
    {'clip_frac': 0.375, 'seq_clip_frac': 0.125, 'ratio_min': 0.9}
    """
    out: dict[str, float] = {}
    for k, how in reduce.items():
        have = [(float(st[k]), n, q) for st, n, q in parts if k in st]
        if not have:
            continue
        if how in ("min", "max"):
            out[k] = (min if how == "min" else max)(v for v, _, _ in have)
            continue
        weights = [n if how == "token" else q for _, n, q in have]
        total = sum(weights)
        out[k] = sum(v * w for (v, _, _), w in zip(have, weights, strict=True)) / total if total else 0.0
    return out


# ----------------------------------------------------------------------------- token selection


def entropy_threshold(entropies: Tensor, quantile: float) -> Tensor:
    """The entropy above which the top `quantile` fraction of the 1-D `entropies` lies, a 0-d tensor:
    their `1 - quantile` quantile, interpolated as `torch.quantile` (which TRL uses) but through a
    sort, so with no limit on the number of tokens; `+inf` (nothing selected) when there are none.

    >>> e = torch.tensor([0.5, 2.0, 1.0, 3.0, 0.1])
    >>> entropy_threshold(e, 0.25).item(), round(entropy_threshold(e, 0.2).item(), 4)
    (2.0, 2.2)
    """
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {quantile}")
    v = entropies.detach().reshape(-1).sort().values
    if v.numel() == 0:
        return torch.tensor(math.inf, dtype=v.dtype, device=v.device)
    pos = (1.0 - quantile) * (v.numel() - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, v.numel() - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def high_entropy_mask(entropy: Tensor, mask: Tensor, threshold: Tensor | float) -> Tensor:
    """`(B, T)` bool: the mask tokens whose entropy is at least `threshold` (`entropy_threshold`)."""
    return mask.bool() & (entropy.detach() >= threshold)


def select_top_entropy(entropy: Tensor, mask: Tensor, quantile: float) -> Tensor:
    """Beyond the 80/20 Rule (Wang et al. 2025, arXiv:2506.01939): `(B, T)` bool, the top `quantile`
    fraction of the mask tokens by entropy `(B, T)` (the paper keeps 0.2), threshold over this batch
    (the trainer's is over the whole step). Used as `is_weights`. Change from vanilla GRPO: only
    high-entropy "forking" tokens get policy gradient.

    >>> e = torch.tensor([[0.1, 2.0, 0.3], [1.5, 0.2, 9.0]])
    >>> select_top_entropy(e, torch.tensor([[1, 1, 1], [1, 1, 0]]), 0.4).int().tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    return high_entropy_mask(entropy, mask, entropy_threshold(entropy[mask.bool()], quantile))
