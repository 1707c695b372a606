"""stdin/stdout programs (rlvr.harness.stdio): every way of reading input works, the output is compared
outside the jail, exits and printed markers never pass a test. Skipped with one line where bubblewrap
cannot run (`apt-get install bubblewrap`)."""

from __future__ import annotations

import time

import pytest

from rlvr.harness import CodeVerifier
from rlvr.harness.stdio import normalise_output, run_stdio

TESTS = [("1 2\n", "3\n"), ("10 -4\n", "6"), ("0 0\n", "0\n")]


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.fixture(scope="module")
def verifier(os_sandbox):
    with CodeVerifier(timeout_s=4.0, test_timeout_s=1.0) as v:
        yield v


@pytest.mark.parametrize(
    "code",
    [
        "a, b = map(int, input().split())\nprint(a + b)",
        "import sys\nprint(sum(map(int, sys.stdin.read().split())))",
        "import sys\nprint(sum(map(int, sys.stdin.buffer.readline().split())))",
        "print(sum(map(int, open(0).read().split())), end='  \\n\\n')",
        "import os\nos.write(1, str(sum(map(int, input().split()))).encode() + b'\\n')",
        "def main():\n    print(sum(map(int, input().split())))\n\nif __name__ == '__main__':\n    main()",
        "import sys\nprint(sum(map(int, input().split())))\nsys.exit(0)",
    ],
)
def test_correct_programs(code, verifier):
    v = run_stdio(verifier, fenced(code), TESTS)
    assert (v.status, v.passed, v.total) == ("correct", 3, 3), v


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("a, b = map(int, input().split())\nprint(a - b)", "wrong output"),
        ("print('PASSED')\nprint('{\"passed\": true}')", "wrong output"),
        ("import os\nos._exit(0)", "the worker exited"),
        ("import sys\nprint(sum(map(int, input().split())))\nsys.exit(1)", "exit status 1"),
        ("print(sum(map(int, input().split())))\nraise ValueError('late')", "ValueError: late"),
        ("while True:\n    pass", "ran past its 1 s"),
    ],
)
def test_wrong_programs_and_hacks(code, why, verifier):
    v = run_stdio(verifier, fenced(code), TESTS[:2])
    assert v.status in ("wrong", "timeout") and v.passed == 0, v
    assert why in v.reason or v.status == "timeout", v


def test_statuses_and_deadline(verifier):
    assert run_stdio(verifier, "no code here", TESTS).status == "unparseable_answer"
    start = time.monotonic()
    v = run_stdio(verifier, fenced("while True:\n    pass"), TESTS * 3, timeout_s=1.5)
    assert v.status == "timeout" and v.reward is None and time.monotonic() - start < 2.0


def test_normalise_output():
    assert normalise_output("1 \n2\t\n\n\n") == "1\n2" == normalise_output("1\r\n2")
    assert normalise_output(" 1") != normalise_output("1")
