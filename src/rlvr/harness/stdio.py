"""The code verifier's second mode: whole programs that read stdin and write stdout (competitive style).

`verify_stdio(completion, tests)` runs the extracted program (rule 1 of `rlvr.harness.extract`; no
prompt is prepended) once per test in a jailed worker with the test's input on its stdin, and
compares what it printed with the expected output HERE: the expected output never enters the jail.
The output is the answer itself, so it is the one thing read from the solution; its exit status only
ever fails a test (an exception, or a SystemExit with a status other than 0/None), never passes one.
Outputs are compared after stripping trailing whitespace from each line and trailing empty lines.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rlvr.harness.extract import extract_code
from rlvr.harness.verifier import CodeVerdict, CodeVerifier, _Infra, _shared_verifier, _Timeout
from rlvr.sandbox.jail import WorkerError, WorkerProcess

__all__ = ["normalise_output", "verify_stdio"]

MAX_OUTPUT_BYTES = 4 << 20


def normalise_output(text: str) -> str:
    """Trailing whitespace of each line and trailing empty lines removed; \\r\\n as \\n.

    >>> normalise_output("3 \\r\\n4\\n\\n")
    '3\\n4'
    """
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).rstrip("\n")


def _parses(code: str) -> bool:
    try:
        compile(code, "<solution>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def run_stdio(
    verifier: CodeVerifier, completion: str, tests: Sequence[tuple[str, str]], timeout_s: float | None = None
) -> CodeVerdict:
    """`verifier`'s verdict on a stdin/stdout program against (input, expected output) pairs."""
    start = time.monotonic()
    timeout = timeout_s or verifier.timeout_s
    deadline = start + timeout
    code = extract_code(completion)
    if not code.strip() or not _parses(code):
        return CodeVerdict("unparseable_answer", 0, len(tests), "the code does not parse as Python", None)
    if not tests:
        return CodeVerdict("unparseable_gold", 0, 0, "no tests", code)
    passed, first = 0, ""
    worker: WorkerProcess | None = None
    try:
        for i, (stdin, expected) in enumerate(tests, 1):
            now = time.monotonic()
            if now >= deadline:
                raise _Timeout(f"the problem's {timeout:g} s ran out")
            test_deadline = min(deadline, now + verifier.test_timeout_s)
            if worker is None or not worker.alive():
                worker = verifier._take(test_deadline)
            why = None
            try:
                left = max(test_deadline - time.monotonic(), 0.001)
                reply = worker.request({"op": "run", "id": i, "source": code, "stdin": stdin}, left, MAX_OUTPUT_BYTES)
            except WorkerError as e:
                worker = None
                if time.monotonic() >= deadline:
                    raise _Timeout(f"the problem's {timeout:g} s ran out") from e
                late = time.monotonic() >= test_deadline
                why = f"the test ran past its {verifier.test_timeout_s:g} s" if late else f"the program failed: {e}"
            else:
                if reply.get("id") != i or reply.get("ok") is not True or type(reply.get("stdout")) is not str:
                    worker.close()
                    worker, why = None, "the worker answered out of turn"
                elif reply.get("error") is not None:
                    why = str(reply["error"])[:300]
                elif normalise_output(reply["stdout"]) != normalise_output(expected):
                    why = "wrong output"
            if why is None:
                passed += 1
            elif not first:
                first = f"; test {i}: {why}"
    except _Timeout as e:
        return CodeVerdict("timeout", passed, len(tests), f"{e} after {passed}/{len(tests)} tests passed", code)
    except _Infra as e:
        return CodeVerdict("infra_error", passed, len(tests), str(e), code)
    finally:
        if worker is not None:
            worker.close()
    if passed == len(tests):
        return CodeVerdict("correct", passed, passed, f"all {passed} tests passed", code)
    return CodeVerdict("wrong", passed, len(tests), f"{passed}/{len(tests)} tests passed{first}", code)


def verify_stdio(completion: str, tests: Sequence[tuple[str, str]], *, timeout_s: float = 10.0) -> CodeVerdict:
    """rlvr's verdict on a stdin/stdout program: `tests` are (input, expected output) pairs; the shared
    `CodeVerifier` of `verify_humaneval`. Raises `JailUnavailable` without bubblewrap."""
    return run_stdio(_shared_verifier(), completion, tests, timeout_s)
