"""Named objective configurations that reproduce each paper's recipe (docs/papers.md).

`ObjectiveConfig` holds the choices the trainer resolves once into functions of
`rlvr.grpo.objective`; `PRESETS` names the paper recipes; `PresetName` is their Literal (the type
of `TrainConfig.objective`). `field_error` checks one field's value alone: the dataclass uses it,
and so does `rlvr.grpo.config.ObjectiveOverrides`, which is derived from this dataclass's fields.
docs/objectives.md explains every field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rlvr.grpo.correction import CORRECTIONS, CorrectionName
from rlvr.grpo.objective import (
    ADVANTAGES,
    AGGREGATIONS,
    KL_ESTIMATORS,
    POLICY_LOSSES,
    REWARD_NORMALIZATIONS,
    AdvantageScale,
    AggregationName,
    KLEstimator,
    PolicyLossName,
    RewardNormalization,
)

__all__ = ["ObjectiveConfig", "PRESETS", "PresetName", "field_error"]

PresetName = Literal[
    "grpo",
    "dr_grpo",
    "dapo",
    "gspo",
    "gspo_token",
    "cispo",
    "rloo",
    "reinforce_pp",
    "reinforce_pp_baseline",
    "intellect2",
    "high_entropy",
    "gdpo",
]


@dataclass(frozen=True)
class ObjectiveConfig:
    """The objective's choices; `PRESETS` holds the ones that reproduce papers.

    advantage_scale: key of `ADVANTAGES`, the advantage estimator (group/batch/none scale GRPO's
    group-centred rewards; rloo, reinforce_pp, reinforce_pp_baseline are the other estimators).
    aggregation: key of `AGGREGATIONS`. policy_loss: key of `POLICY_LOSSES` (clip = PPO/GRPO's
    token-level surrogate, gspo, gspo_token, cispo).
    eps_low / eps_high: clip range `[1 - eps_low, 1 + eps_high]` of the ratio (for cispo, the cap
    `1 + eps_high` of the importance weight; eps_low unused). delta: two-sided clipping bound of
    the ratio for negative advantages (None = off; must exceed `1 + eps_high`; not with cispo).
    top_entropy_quantile: share of the policy-gradient tokens, highest entropy first, that get
    policy gradient (1.0 = all, the paper's 0.2).
    reward_normalization: key of `REWARD_NORMALIZATIONS`, how several rewards become one advantage.
    beta: KL coefficient (0 = no reference model needed). kl_estimator: key of `KL_ESTIMATORS`.
    dynamic_sampling: DAPO's filter: drop zero-std groups and sample more prompts to refill.
    overlong_buffer: DAPO soft overlong buffer in tokens (None = off); overlong_penalty: its
    maximum penalty. mask_truncated: DAPO's overlong filtering (mask the loss of truncated
    completions). rollout_correction / rollout_correction_cap: the importance weights applied when
    another engine (vLLM) sampled the rollouts (`rlvr.grpo.correction`; "none" = off).
    """

    advantage_scale: AdvantageScale = "group"
    aggregation: AggregationName = "seq_mean_token_mean"
    eps_low: float = 0.2
    eps_high: float = 0.2
    beta: float = 0.04
    kl_estimator: KLEstimator = "k3"
    dynamic_sampling: bool = False
    overlong_buffer: int | None = None
    overlong_penalty: float = 0.0
    mask_truncated: bool = False
    rollout_correction: Literal["none"] | CorrectionName = "token"
    rollout_correction_cap: float = 2.0
    policy_loss: PolicyLossName = "clip"
    delta: float | None = None
    top_entropy_quantile: float = 1.0
    reward_normalization: RewardNormalization = "sum_then_normalize"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            msg = field_error(f.name, getattr(self, f.name))
            if msg is not None:
                raise ValueError(f"ObjectiveConfig.{f.name}: {msg}")
        if self.delta is not None and self.policy_loss == "cispo":
            raise ValueError("ObjectiveConfig.delta: does not apply to policy_loss 'cispo' (its weight is already "
                             "capped at 1 + eps_high); leave it unset")  # fmt: skip
        if self.delta is not None and self.delta <= 1.0 + self.eps_high:
            raise ValueError(f"ObjectiveConfig.delta: must be > 1 + eps_high = {1.0 + self.eps_high}, got {self.delta}")


_CHOICES: dict[str, list[str]] = {
    "advantage_scale": sorted(ADVANTAGES),
    "aggregation": sorted(AGGREGATIONS),
    "kl_estimator": sorted(KL_ESTIMATORS),
    "policy_loss": sorted(POLICY_LOSSES),
    "reward_normalization": sorted(REWARD_NORMALIZATIONS),
    "rollout_correction": sorted(["none", *CORRECTIONS]),
}
_RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "eps_low": (lambda v: 0.0 <= v < 1.0, "must be in [0, 1)"),
    "eps_high": (lambda v: v >= 0, "must be >= 0"),
    "beta": (lambda v: v >= 0, "must be >= 0"),
    "overlong_penalty": (lambda v: v >= 0, "must be >= 0"),
    "rollout_correction_cap": (lambda v: v >= 1, "must be >= 1"),
    "overlong_buffer": (lambda v: v > 0, "must be > 0 or None"),
    "delta": (lambda v: v > 1, "must be > 1 or None"),
    "top_entropy_quantile": (lambda v: 0.0 <= v <= 1.0, "must be in [0, 1]"),
}


def field_error(name: str, value: Any) -> str | None:
    """Why `value` is not a valid `ObjectiveConfig.<name>` on its own, or None when it is.

    Checks choices and ranges only (types are the config loader's job; None is "off" for the
    optional fields); checks between fields are in `ObjectiveConfig.__post_init__`.

    >>> field_error("eps_low", 1.0), field_error("eps_low", 0.1), field_error("policy_loss", "ppo")
    ('must be in [0, 1), got 1.0', None, "'ppo' is not one of ['cispo', 'clip', 'gspo', 'gspo_token']")
    """
    if name in _CHOICES and value not in _CHOICES[name]:
        return f"{value!r} is not one of {_CHOICES[name]}"
    if name in _RANGES and value is not None:
        ok, msg = _RANGES[name]
        if not ok(value):
            return f"{msg}, got {value}"
    return None


PRESETS: dict[str, ObjectiveConfig] = {
    # DeepSeekMath GRPO: std-scaled group advantages, per-sequence token mean, beta 0.04 with k3.
    "grpo": ObjectiveConfig("group", "seq_mean_token_mean", eps_low=0.2, eps_high=0.2, beta=0.04),
    # Dr. GRPO: no std, constant max_len normaliser, no KL.
    "dr_grpo": ObjectiveConfig("none", "seq_mean_token_sum_norm", eps_low=0.2, eps_high=0.2, beta=0.0),
    # DAPO: clip-higher, token-level loss, dynamic sampling, soft overlong punishment, no KL.
    # The paper's buffer is 4,096 of 20,480 tokens (20%); ours is 16 tokens, 25% of a 64-token
    # budget (the embedded task's completions run ~27 tokens). Scale it to ~max_new_tokens // 5.
    "dapo": ObjectiveConfig(
        "group",
        "token_mean",
        eps_low=0.2,
        eps_high=0.28,
        beta=0.0,
        dynamic_sampling=True,
        overlong_buffer=16,
        overlong_penalty=1.0,
        mask_truncated=False,
    ),
    # GSPO (v2, Sec. 5.1): sequence ratio clipped at 3e-4 / 4e-4, no KL, GRPO's advantages and
    # 1/G sum_i. Off-policy only: pair with num_iterations >= 2 (the paper: 4 mini-batches/rollout).
    "gspo": ObjectiveConfig("group", "seq_mean_token_mean", eps_low=3e-4, eps_high=4e-4, beta=0.0, policy_loss="gspo"),
    "gspo_token": ObjectiveConfig(
        "group", "seq_mean_token_mean", eps_low=3e-4, eps_high=4e-4, beta=0.0, policy_loss="gspo_token"
    ),
    # CISPO (MiniMax-M1): clipped, stop-gradient IS weight on every token, token-level loss, no
    # KL. The paper gives no eps_high; 4.0 is ScaleRL's cap of 5 (TRL's recommended epsilon_high).
    "cispo": ObjectiveConfig("group", "token_mean", eps_low=0.2, eps_high=4.0, beta=0.0, policy_loss="cispo"),
    # RLOO ("Back to Basics"): leave-one-out baseline, REINFORCE on the sequence log-likelihood
    # (a per-sequence token sum; the constant 1/max_len only rescales it). The paper's KL sits in
    # the reward; rlvr has no KL-in-reward, so none here (set beta for a KL loss instead).
    "rloo": ObjectiveConfig("rloo", "seq_mean_token_sum_norm", eps_low=0.2, eps_high=0.2, beta=0.0),
    # REINFORCE++ (k = 1): global batch normalisation, PPO clip, token-level loss; the paper's
    # k1 KL-in-reward is left out (as for rloo).
    "reinforce_pp": ObjectiveConfig("reinforce_pp", "token_mean", eps_low=0.2, eps_high=0.2, beta=0.0),
    # REINFORCE++ with baseline (k > 1, reasoning tasks): group mean, batch std, k2 KL as a loss.
    "reinforce_pp_baseline": ObjectiveConfig(
        "reinforce_pp_baseline", "token_mean", eps_low=0.2, eps_high=0.2, beta=0.001, kl_estimator="k2"
    ),
    # INTELLECT-2 (Sec. 4.1): two-sided clipping delta 4, eps 0.2, KL 0.001 (k3); TRL's token-level
    # default normaliser.
    "intellect2": ObjectiveConfig("group", "token_mean", eps_low=0.2, eps_high=0.2, beta=0.001, delta=4.0),
    # GDPO: each reward normalised in its group, weighted sum, batch whitening; otherwise GRPO
    # without KL (the paper's GRPO baseline in verl: token-level loss).
    "gdpo": ObjectiveConfig("group", "token_mean", beta=0.0, reward_normalization="normalize_then_sum"),
}
# Beyond the 80/20 Rule: DAPO with policy gradient on the top 20% highest-entropy tokens only.
PRESETS["high_entropy"] = dataclasses.replace(PRESETS["dapo"], top_entropy_quantile=0.2)
