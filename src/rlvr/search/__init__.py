"""Reward search: propose candidate reward functions, vet them in a sandbox, screen them with short runs.

The sandbox (`rlvr.sandbox`, whose API is re-exported here) runs untrusted reward code:
`validate(source)` applies the four checks (static, load, namespace, probe) and `load(source)`
returns a TRL-convention callable that runs the candidate in a bubblewrap jail (docs/sandbox.md).
`rlvr.search.proposer` writes candidates: `OfflineProposer` composes and mutates the primitives of
`rlvr.search.primitives` (no network); `ChatProposer` asks any OpenAI-compatible endpoint, fed the
ranked results of earlier rounds.
"""

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
