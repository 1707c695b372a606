"""GRPO and its follow-ups: the objective's pure tensor functions and the trainer. SFT lives in `rlvr.sft`;
its names stay importable from here for one release.

The names below are imported on first use, so `import rlvr.grpo` stays cheap. Each of them loads
torch when used: `rlvr.grpo.config` reads the objective presets, which name the loss functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlvr.lazy import lazy_names

if TYPE_CHECKING:
    from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
    from rlvr.grpo.objective import group_advantages, kl_penalty, policy_loss
    from rlvr.grpo.presets import PRESETS, ObjectiveConfig
    from rlvr.grpo.trainer import GRPOTrainer
    from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

_WHERE = {
    "rlvr.grpo.config": ["TRAIN_PRESETS", "TrainConfig"],
    "rlvr.grpo.objective": ["group_advantages", "kl_penalty", "policy_loss"],
    "rlvr.grpo.presets": ["PRESETS", "ObjectiveConfig"],
    "rlvr.grpo.trainer": ["GRPOTrainer"],
    "rlvr.sft": ["SFT_PRESETS", "SFTConfig", "run_sft"],
}

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


__getattr__ = lazy_names(__name__, _WHERE)
