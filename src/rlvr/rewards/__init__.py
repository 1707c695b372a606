"""Rewards in TRL's calling convention: `f(completions, **columns) -> list[float | None]`, `None`
meaning "not scorable" (never a silent 0). Hand any of them to `trl.GRPOTrainer(reward_funcs=[...])`
unchanged. Formulas and ranges: docs/rewards.md."""

from rlvr.rewards.combine import REGISTRY, RewardSpec, build_reward, combine
from rlvr.rewards.format import (
    format_approx,
    format_exact,
    format_gsm8k,
    format_r1,
    make_format_approx,
    make_format_exact,
)
from rlvr.rewards.ifeval import ifeval_all, ifeval_partial, make_ifeval
from rlvr.rewards.outcome import env_reward, outcome
from rlvr.rewards.process import hybrid, make_hybrid, make_process, process, process_score

__all__ = [
    "REGISTRY",
    "RewardSpec",
    "build_reward",
    "combine",
    "format_approx",
    "format_exact",
    "format_gsm8k",
    "format_r1",
    "hybrid",
    "ifeval_all",
    "ifeval_partial",
    "make_format_approx",
    "make_format_exact",
    "make_hybrid",
    "make_ifeval",
    "make_process",
    "env_reward",
    "outcome",
    "process",
    "process_score",
]
