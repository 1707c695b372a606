"""GRPO and its follow-ups: the objective's pure tensor functions, the trainer, and SFT warm starts."""

from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
from rlvr.grpo.objective import group_advantages, kl_penalty, policy_loss
from rlvr.grpo.presets import PRESETS, ObjectiveConfig
from rlvr.grpo.sft import SFT_PRESETS, SFTConfig, run_sft
from rlvr.grpo.trainer import GRPOTrainer

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
