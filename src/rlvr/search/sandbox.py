"""Deprecated: `rlvr.search.sandbox` is an alias of `rlvr.sandbox`, kept for one release and then
removed. Import from `rlvr.sandbox` instead (`from rlvr.sandbox import validate, load`)."""

from rlvr.sandbox import (
    RewardRejected,
    SandboxedReward,
    SandboxUnavailable,
    UnsafeSandboxWarning,
    Validation,
    check_file,
    load,
    probe_batch,
    static_check,
    validate,
)

__all__ = [
    "RewardRejected",
    "SandboxUnavailable",
    "SandboxedReward",
    "UnsafeSandboxWarning",
    "Validation",
    "check_file",
    "load",
    "probe_batch",
    "static_check",
    "validate",
]
