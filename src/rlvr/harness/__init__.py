"""The code verifier: runs a model's Python solution against a problem's tests without trusting it.

`verify_humaneval(completion, problem) -> CodeVerdict` (rlvr's verifier: the tests run here, the
solution in a jailed worker, only plain data crosses); `CodeVerifier` (pre-started workers, threads);
`naive_verify_humaneval` (the exit-status harness every hack fools, kept for contrast); `hack_probes`
(one hack completion per family for any problem, for the audit); `verify_stdio(completion, tests)` for
stdin/stdout programs. Rules, security
model and hack families: docs/code.md.
"""

from rlvr.harness.extract import build_program, extract_code
from rlvr.harness.naive import naive_verify_humaneval
from rlvr.harness.probes import HackProbe, hack_probes
from rlvr.harness.stdio import verify_stdio
from rlvr.harness.verifier import (
    DEFAULT_TEST_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    CodeStatus,
    CodeVerdict,
    CodeVerifier,
    JailUnavailable,
    require_jail,
    verify_humaneval,
)

__all__ = [
    "DEFAULT_TEST_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "CodeStatus",
    "CodeVerdict",
    "CodeVerifier",
    "HackProbe",
    "JailUnavailable",
    "build_program",
    "extract_code",
    "hack_probes",
    "naive_verify_humaneval",
    "require_jail",
    "verify_humaneval",
    "verify_stdio",
]
