"""Named objective configurations that reproduce each paper's recipe (docs/papers.md).

`ObjectiveConfig` holds the choices the trainer resolves once into functions of
`rlvr.grpo.objective`; `PRESETS` names the paper recipes (`grpo`, `dr_grpo`, `dapo`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr.grpo.correction import CORRECTIONS
from rlvr.grpo.objective import ADVANTAGES, AGGREGATIONS, KL_ESTIMATORS, AdvantageScale, AggregationName, KLEstimator

__all__ = ["ObjectiveConfig", "PRESETS"]


@dataclass(frozen=True)
class ObjectiveConfig:
    """The objective's choices; `PRESETS` holds the ones that reproduce papers.

    advantage_scale: key of `ADVANTAGES`. aggregation: key of `AGGREGATIONS`.
    eps_low / eps_high: clip range `[1 - eps_low, 1 + eps_high]` of the ratio.
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
    rollout_correction: str = "token"
    rollout_correction_cap: float = 2.0

    def __post_init__(self) -> None:
        for field, table in (
            ("advantage_scale", ADVANTAGES),
            ("aggregation", AGGREGATIONS),
            ("kl_estimator", KL_ESTIMATORS),
        ):
            if getattr(self, field) not in table:
                raise ValueError(f"ObjectiveConfig.{field}: {getattr(self, field)!r} is not one of {sorted(table)}")
        if not 0.0 <= self.eps_low < 1.0:
            raise ValueError(f"ObjectiveConfig.eps_low: must be in [0, 1), got {self.eps_low}")
        for field in ("eps_high", "beta", "overlong_penalty"):
            if getattr(self, field) < 0:
                raise ValueError(f"ObjectiveConfig.{field}: must be >= 0, got {getattr(self, field)}")
        if self.rollout_correction != "none" and self.rollout_correction not in CORRECTIONS:
            raise ValueError(f"ObjectiveConfig.rollout_correction: {self.rollout_correction!r} is not one of "
                             f"{['none', *CORRECTIONS]}")  # fmt: skip
        if self.rollout_correction_cap < 1.0:
            raise ValueError(f"ObjectiveConfig.rollout_correction_cap: must be >= 1, got {self.rollout_correction_cap}")
        if self.overlong_buffer is not None and self.overlong_buffer <= 0:
            raise ValueError(f"ObjectiveConfig.overlong_buffer: must be > 0 or None, got {self.overlong_buffer}")


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
}
