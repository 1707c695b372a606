"""GRPO and its follow-ups: the objective's pure tensor functions and the trainer. SFT lives in `rlvr.sft`;
its names stay importable from here for one release."""

from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
from rlvr.grpo.objective import group_advantages, kl_penalty, policy_loss
from rlvr.grpo.presets import PRESETS, ObjectiveConfig
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

__all__ = [
    "PRESETS",
    "SFT_PRESETS",
    "TRAIN_PRESETS",
    "GRPOTrainer",
    "ObjectiveConfig",
    "SFTConfig",
    "TrainConfig",
    "group_advantages",
    "kl_penalty",
    "policy_loss",
    "run_sft",
]
