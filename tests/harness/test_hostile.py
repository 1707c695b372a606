"""The hostile programs of tests/data/code_corpus.py against rlvr's code verifier: each verdict comes
within the deadline + 0.5 s and is not "correct", no process is left running and nothing outside the
jail changed (this module runs no other verifier, so every new process below pytest is the case's).
Skipped with one line where bubblewrap cannot run (`apt-get install bubblewrap`).
"""

from __future__ import annotations

import json
import os
import runpy
import socket
import time
from pathlib import Path

import pytest

from rlvr.harness import CodeVerifier

DATA = Path(__file__).resolve().parents[1] / "data"
PROBLEMS = {p["task_id"]: p for p in map(json.loads, (DATA / "humaneval_subset.jsonl").read_text().splitlines())}
CASES = runpy.run_path(str(DATA / "code_corpus.py"))["CASES"]
TIMEOUT_S, TEST_TIMEOUT_S = 3.0, 1.0


def _ids(case: dict) -> str:
    return f"{case['family']}".replace(" ", "_")


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (read from /proc: jailed processes have host pids there)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


OUTSIDE = [
    "/tmp/rlvr_i41_pwned",
    "/work/rlvr_i41_pwned",
    "/root/rlvr_i41_pwned",
    os.path.expanduser("~/rlvr_i41_pwned"),
]


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "hostile"], ids=_ids)
def test_hostile_is_contained(case, os_sandbox):
    for path in OUTSIDE:
        Path(path).unlink(missing_ok=True)
    me = os.getpid()
    before = set(descendants(me))
    with CodeVerifier(workers=0, timeout_s=TIMEOUT_S, test_timeout_s=TEST_TIMEOUT_S) as v:
        start = time.monotonic()
        verdict = v.verify(case["completion"], PROBLEMS[case["problem"]])
        elapsed = time.monotonic() - start
        left = set(descendants(me)) - before
    assert elapsed <= TIMEOUT_S + 0.5, (elapsed, verdict)
    assert not verdict.correct and verdict.status in ("wrong", "timeout"), verdict
    assert not left, f"processes left running after the verdict: {left}"
    assert not [p for p in OUTSIDE if Path(p).exists()]
    assert os.getpid() == me


def test_a_listening_port_on_the_host_is_out_of_reach(os_sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.setblocking(False)
    port = server.getsockname()[1]
    code = (
        f"import socket\n\ndef strlen(string):\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\n"
        "    s.sendall(b'escaped')\n    return len(string)\n"
    )
    try:
        with CodeVerifier(workers=0, timeout_s=TIMEOUT_S, test_timeout_s=TEST_TIMEOUT_S) as v:
            verdict = v.verify(f"```python\n{code}```", PROBLEMS["HumanEval/23"])
        assert verdict.status == "wrong" and verdict.passed == 0, verdict
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()
