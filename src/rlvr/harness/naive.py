"""The naive code harness, kept for contrast (`verifier: naive`): solution and tests in one file, run
with `python FILE`, passed iff the exit status is 0. This is the harness a hurried implementer writes
and the one every known hack family fools (docs/code.md); rlvr keeps it only to demonstrate that and
for the audit's contrast. It still runs in the jail (it executes untrusted code too), with seccomp
off so that the program behaves as it would under a plain `python FILE` (it may fork).
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping

from rlvr.harness.checks import ProblemError
from rlvr.harness.extract import build_program, extract_code
from rlvr.harness.verifier import DEFAULT_LIMITS, DEFAULT_TIMEOUT_S, CodeVerdict, _trusted, require_jail

__all__ = ["naive_program", "naive_verify_humaneval"]

NAIVE_SCRIPT = "harness/naive_boot.py"


def naive_program(program: str, test: str, entry: str) -> str:
    """The one file the naive harness runs: the solution's program, the test, then `check(entry)` (when
    the test defines `check`; top-level asserts run as they are)."""
    call = f"check({entry})\n" if re.search(r"^def check\(", test, re.M) else ""
    return f"{program}\n\n{test}\n\n{call}"


def naive_verify_humaneval(
    completion: str, problem: Mapping[str, str], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> CodeVerdict:
    """The naive verdict (exit status 0 = correct, all tests counted as passed; anything else, or the
    deadline, = wrong with none passed), same extraction and return type as `verify_humaneval`."""
    prompt, test, entry = problem.get("prompt", ""), problem["test"], problem["entry_point"]
    try:
        total = _trusted(prompt, test, entry).total
    except ProblemError:
        total = 1
    code = extract_code(completion)
    program, why = build_program(code, prompt, entry)
    if program is None:
        return CodeVerdict("unparseable_answer", 0, total, why, None)
    backend = dataclasses.replace(require_jail(), seccomp=False)
    cfg = {"limits": DEFAULT_LIMITS, "path": backend.pkg_root}
    start = time.monotonic()
    proc = subprocess.Popen(
        backend.argv(cfg, None, NAIVE_SCRIPT),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={},
        cwd="/",
    )
    try:
        proc.communicate(naive_program(program, test, entry).encode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    rc = proc.returncode
    if time.monotonic() - start >= timeout_s and rc != 0:
        return CodeVerdict("wrong", 0, total, f"ran past {timeout_s:g} s", code)
    if rc == 0:
        return CodeVerdict("correct", total, total, "exit status 0", code)
    return CodeVerdict("wrong", 0, total, f"exit status {rc}", code)
