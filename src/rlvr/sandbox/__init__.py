"""The reward sandbox: check untrusted reward code, then run it, always in an OS jail.

`validate(source)` applies the four stages (static, load, namespace, probe) and returns a
`Validation`; `load(source)` returns a `SandboxedReward`, a TRL-convention callable
`f(completions, **columns) -> list[float | None]` backed by one jailed worker. Both take
`function=` to name the entry point (default `reward`). `rlvr rewards check`, reward search and
training with user-written reward files use it.

Modules: `core` (validate, load, the call wrapper, `check_file`), `static` (stage 1, the AST check
and the allowlists), `jail` (bubblewrap, seccomp, rlimits, one worker process), `worker` (the
in-jail side, run as a script, never imported), `probe` (stage 4's batch). The package imports only
the standard library and `rlvr.tasks`/`rlvr.verify` (floor 1). Threat model: docs/sandbox.md.
"""

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
