"""Reward search: propose candidate reward functions, vet them in the sandbox (`rlvr.sandbox`, whose
API is re-exported here), screen them with short runs (docs/search.md)."""

from rlvr.sandbox import (
    RewardRejected,
    SandboxedReward,
    SandboxUnavailable,
    UnsafeSandboxWarning,
    Validation,
    check_file,
    load,
    validate,
)
from rlvr.search.proposer import Candidate, ChatProposer, OfflineProposer, RankedResult, build_prompt

__all__ = [
    "Candidate",
    "ChatProposer",
    "OfflineProposer",
    "RankedResult",
    "build_prompt",
    "RewardRejected",
    "SandboxUnavailable",
    "SandboxedReward",
    "UnsafeSandboxWarning",
    "Validation",
    "check_file",
    "load",
    "validate",
]
