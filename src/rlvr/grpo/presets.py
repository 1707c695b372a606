"""Named objective configurations that reproduce each paper's recipe (docs/papers.md).

`ObjectiveConfig` is the one validated model of the objective (its fields, ranges and the checks between
them); `PRESETS` names the paper recipes, `PresetName` is their Literal, and `resolve(preset, overrides)`
applies `objective_overrides` to a preset. docs/objectives.md explains every field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from rlvr.config import StrictModel
from rlvr.grpo.correction import CorrectionName
from rlvr.grpo.objective import AdvantageScale, AggregationName, KLEstimator, PolicyLossName, RewardNormalization

__all__ = ["Method", "ObjectiveConfig", "PRESETS", "PresetName", "resolve"]

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
    "rft",
]

Method = Literal["policy_gradient", "rft"]


class ObjectiveConfig(StrictModel):
    """The objective's choices, each field explained in docs/objectives.md and docs/train.md; `PRESETS`
    holds the ones that reproduce papers."""

    advantage_scale: AdvantageScale = "group"
    aggregation: AggregationName = "seq_mean_token_mean"
    eps_low: float = Field(0.2, ge=0, lt=1)
    eps_high: float = Field(0.2, ge=0)
    beta: float = Field(0.04, ge=0, allow_inf_nan=False)
    kl_estimator: KLEstimator = "k3"
    dynamic_sampling: bool = False  # DAPO: drop zero-std groups, sample more prompts to refill
    overlong_buffer: int | None = Field(None, gt=0)  # DAPO's soft overlong buffer in tokens (None = off)
    overlong_penalty: float = Field(0.0, ge=0, allow_inf_nan=False)  # its maximum penalty
    mask_truncated: bool = False  # DAPO's overlong filtering: no loss on truncated completions
    rollout_correction: Literal["none"] | CorrectionName = "token"
    rollout_correction_cap: float = Field(2.0, ge=1)
    policy_loss: PolicyLossName = "clip"
    delta: float | None = Field(None, gt=1)
    top_entropy_quantile: float = Field(1.0, ge=0, le=1)
    reward_normalization: RewardNormalization = "sum_then_normalize"
    # rejection-sampling fine-tuning (`rlvr.grpo.rft`): a supervised step on the accepted samples
    method: Method = "policy_gradient"
    rft_max_per_prompt: int | None = Field(None, ge=1)  # at most this many targets per prompt (None: all)
    rft_dedup: bool = True  # identical accepted completions of a prompt are one target

    @model_validator(mode="after")
    def _rft(self) -> ObjectiveConfig:
        """RFT takes no policy-gradient step: the settings that only shape one are refused with it, and
        its own settings are refused without it (a config that says something must do it)."""
        if self.method == "rft":
            if self.beta > 0:
                raise ValueError("beta: method 'rft' has no KL term; set beta: 0")
            if self.dynamic_sampling:
                raise ValueError("dynamic_sampling: does not apply to method 'rft' (it draws P x G samples a step)")
            if self.top_entropy_quantile < 1.0:
                raise ValueError("top_entropy_quantile: does not apply to method 'rft'")
        elif self.rft_max_per_prompt is not None:
            raise ValueError("rft_max_per_prompt: applies to method 'rft' only (objective: rft)")
        return self

    @model_validator(mode="after")
    def _delta(self) -> ObjectiveConfig:
        if self.delta is not None and self.policy_loss == "cispo":
            raise ValueError(
                "delta: does not apply to policy_loss 'cispo' (its weight is already capped at "
                "1 + eps_high); leave it unset"
            )
        if self.delta is not None and self.delta <= 1.0 + self.eps_high:
            raise ValueError(f"delta: must be > 1 + eps_high = {1.0 + self.eps_high}, got {self.delta}")
        return self


def resolve(preset: str, overrides: Mapping[str, Any]) -> ObjectiveConfig:
    """`PRESETS[preset]` with `overrides` replacing its fields (None keeps the preset's), validated
    whole; a ValueError names the first wrong field in one line.

    >>> resolve("grpo", {"beta": 0.0, "eps_high": None}).beta
    0.0
    >>> resolve("grpo", {"eps_low": 1.0})
    Traceback (most recent call last):
    ValueError: eps_low: Input should be less than 1
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return ObjectiveConfig.model_validate({**PRESETS[preset].model_dump(), **given})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}: {msg}" if where else msg) from None


PRESETS: dict[str, ObjectiveConfig] = {
    # DeepSeekMath GRPO: std-scaled group advantages, per-sequence token mean, beta 0.04 with k3.
    "grpo": ObjectiveConfig(
        advantage_scale="group", aggregation="seq_mean_token_mean", eps_low=0.2, eps_high=0.2, beta=0.04
    ),
    # Dr. GRPO: no std, constant max_len normaliser, no KL.
    "dr_grpo": ObjectiveConfig(
        advantage_scale="none", aggregation="seq_mean_token_sum_norm", eps_low=0.2, eps_high=0.2, beta=0.0
    ),
    # DAPO: clip-higher, token-level loss, dynamic sampling, soft overlong punishment, no KL.
    # The paper's buffer is 4,096 of 20,480 tokens (20%); ours is 16 tokens, 25% of a 64-token
    # budget (the embedded task's completions run ~27 tokens). Scale it to ~max_new_tokens // 5.
    "dapo": ObjectiveConfig(
        advantage_scale="group",
        aggregation="token_mean",
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
    "gspo": ObjectiveConfig(
        advantage_scale="group",
        aggregation="seq_mean_token_mean",
        eps_low=3e-4,
        eps_high=4e-4,
        beta=0.0,
        policy_loss="gspo",
    ),
    # CISPO (MiniMax-M1): clipped, stop-gradient IS weight on every token, token-level loss, no
    # KL. The paper gives no eps_high; 4.0 is ScaleRL's cap of 5 (TRL's recommended epsilon_high).
    "cispo": ObjectiveConfig(
        advantage_scale="group", aggregation="token_mean", eps_low=0.2, eps_high=4.0, beta=0.0, policy_loss="cispo"
    ),
    # RLOO ("Back to Basics"): leave-one-out baseline, REINFORCE on the sequence log-likelihood
    # (a per-sequence token sum; the constant 1/max_len only rescales it). The paper's KL sits in
    # the reward; rlvr has no KL-in-reward, so none here (set beta for a KL loss instead).
    "rloo": ObjectiveConfig(
        advantage_scale="rloo", aggregation="seq_mean_token_sum_norm", eps_low=0.2, eps_high=0.2, beta=0.0
    ),
    # REINFORCE++ (k = 1): global batch normalisation, PPO clip, token-level loss; the paper's
    # k1 KL-in-reward is left out (as for rloo).
    "reinforce_pp": ObjectiveConfig(
        advantage_scale="reinforce_pp", aggregation="token_mean", eps_low=0.2, eps_high=0.2, beta=0.0
    ),
    # REINFORCE++ with baseline (k > 1, reasoning tasks): group mean, batch std, k2 KL as a loss.
    "reinforce_pp_baseline": ObjectiveConfig(
        advantage_scale="reinforce_pp_baseline",
        aggregation="token_mean",
        eps_low=0.2,
        eps_high=0.2,
        beta=0.001,
        kl_estimator="k2",
    ),
    # INTELLECT-2 (Sec. 4.1): two-sided clipping delta 4, eps 0.2, KL 0.001 (k3); TRL's token-level
    # default normaliser.
    "intellect2": ObjectiveConfig(
        advantage_scale="group", aggregation="token_mean", eps_low=0.2, eps_high=0.2, beta=0.001, delta=4.0
    ),
    # GDPO: each reward normalised in its group, weighted sum, batch whitening; otherwise GRPO
    # without KL (the paper's GRPO baseline in verl: token-level loss).
    "gdpo": ObjectiveConfig(
        advantage_scale="group", aggregation="token_mean", beta=0.0, reward_normalization="normalize_then_sum"
    ),
}
# GSPO-token: GSPO's recipe with the token-level form of its ratio.
PRESETS["gspo_token"] = PRESETS["gspo"].model_copy(update={"policy_loss": "gspo_token"})
# Beyond the 80/20 Rule: DAPO with policy gradient on the top 20% highest-entropy tokens only.
PRESETS["high_entropy"] = PRESETS["dapo"].model_copy(update={"top_entropy_quantile": 0.2})
# Rejection-sampling fine-tuning (RFT: Yuan et al. 2023; STaR; ReST-EM; RAFT; arXiv 2504.11343's RAFT++
# baseline): GRPO's prompts, group size, sampler and verifier; the verifier's accepted, finished samples
# (deduplicated) are SFT targets, a token-mean NLL step on them. The information-matched baseline of GRPO.
PRESETS["rft"] = ObjectiveConfig(method="rft", aggregation="token_mean", beta=0.0, rollout_correction="none")
