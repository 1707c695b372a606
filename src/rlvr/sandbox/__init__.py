"""The reward sandbox: check untrusted reward code, then run it, always in an OS jail.

`validate(source)` applies the four stages (static, load, namespace, probe); `load(source)` returns a
`SandboxedReward`, a TRL-convention callable backed by one jailed worker. Modules, threat model and
the stages: docs/sandbox.md."""

from rlvr.sandbox.core import RewardRejected, SandboxedReward, Validation, check_file, load, validate
from rlvr.sandbox.jail import SandboxUnavailable, UnsafeSandboxWarning
from rlvr.sandbox.probe import probe_batch
from rlvr.sandbox.static import ALLOWED_MODULES, DEFAULT_RANGE, ENTRY, StaticResult, static_check

__all__ = [
    "ALLOWED_MODULES",
    "DEFAULT_RANGE",
    "ENTRY",
    "RewardRejected",
    "SandboxUnavailable",
    "SandboxedReward",
    "StaticResult",
    "UnsafeSandboxWarning",
    "Validation",
    "check_file",
    "load",
    "probe_batch",
    "static_check",
    "validate",
]
