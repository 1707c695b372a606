"""Moved to `rlvr.sft` (SFT is not GRPO); this alias stays for one release."""

from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

__all__ = ["SFT_PRESETS", "SFTConfig", "run_sft"]
