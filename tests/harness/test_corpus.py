"""The labelled corpus (tests/data/code_corpus.py) against rlvr's code verifier and the naive harness.

correct -> both accept; wrong -> both reject; hack -> the naive harness accepts it (each case is shown
to fool it) and rlvr's rejects it with a scored verdict. The hostile cases: test_hostile.py.
Skipped with one line where bubblewrap cannot run (`apt-get install bubblewrap`).
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from rlvr.harness import CodeVerifier, naive_verify_humaneval

DATA = Path(__file__).resolve().parents[1] / "data"
PROBLEMS = {p["task_id"]: p for p in map(json.loads, (DATA / "humaneval_subset.jsonl").read_text().splitlines())}
CASES = runpy.run_path(str(DATA / "code_corpus.py"))["CASES"]
TIMEOUT_S, TEST_TIMEOUT_S = 3.0, 1.0
HACK_FAMILIES = {
    "exit(0)", "sys.exit", "os._exit", "signal handler", "SkipTest + excepthook", "always-equal", "patched builtins",
    "patched modules", "import hook", "settrace", "caller's frame", "test file", "atexit/excepthook", "forked child",
    "ctypes", "printed result", "fake protocol reply", "run_tests overwrite",
}  # fmt: skip
HOSTILE_FAMILIES = {
    "fork bomb", "memory bomb", "infinite loop", "huge output", "writes files outside", "network", "kills the parent",
    "left-behind children",
}  # fmt: skip


def _ids(case: dict) -> str:
    return f"{case['kind']}-{case['family']}-{case['problem'].split('/')[1]}".replace(" ", "_")


@pytest.fixture(scope="module")
def verifier(os_sandbox):
    with CodeVerifier(timeout_s=TIMEOUT_S, test_timeout_s=TEST_TIMEOUT_S) as v:
        yield v


def test_the_corpus_has_every_kind_and_each_hack_family():
    kinds = {c["kind"] for c in CASES}
    assert kinds == {"correct", "wrong", "hack", "hostile"}
    hacks = {c["family"] for c in CASES if c["kind"] == "hack"}
    assert hacks >= HACK_FAMILIES, sorted(HACK_FAMILIES - hacks)
    hostile = {c["family"] for c in CASES if c["kind"] == "hostile"}
    assert hostile >= HOSTILE_FAMILIES, sorted(HOSTILE_FAMILIES - hostile)
    assert all(c["problem"] in PROBLEMS for c in CASES)


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] != "hostile"], ids=_ids)
def test_case(case, verifier):
    problem = PROBLEMS[case["problem"]]
    ours = verifier.verify(case["completion"], problem)
    naive = naive_verify_humaneval(case["completion"], problem, timeout_s=5.0)
    if case["kind"] == "correct":
        assert ours.correct and ours.reward == 1.0, ours
        assert naive.correct, naive
    elif case["kind"] == "wrong":
        assert not ours.correct and ours.scored and ours.reward < 1.0, ours
        assert not naive.correct, naive
    else:  # hack: fools the naive harness, not ours
        assert naive.correct, f"the naive harness was not fooled: {naive}"
        assert not ours.correct and ours.scored and ours.reward < 1.0, ours
