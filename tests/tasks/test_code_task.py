"""The `code` task: HumanEval vendored as test, the verdict from the jailed harness, partial credit in
`tests_passed`, and without bubblewrap a one-line refusal that names the package (never an unjailed run)."""

from __future__ import annotations

import hashlib

import pytest

import rlvr.tasks.code_task as code_task
from rlvr.harness import JailUnavailable
from rlvr.rewards import code as code_rewards
from rlvr.rewards import outcome
from rlvr.tasks import DataError, get_task, load_task
from rlvr.tasks.code_task import humaneval_path


def test_humaneval_is_vendored_unchanged_with_its_licence():
    digest = hashlib.sha256(humaneval_path().read_bytes()).hexdigest()
    assert digest == "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
    assert "The MIT License" in (humaneval_path().parent / "LICENSE").read_text()


def test_the_task_verifies_through_the_jail_and_the_rewards_read_its_columns(os_sandbox):
    probs = load_task("code", "test", n=3)
    assert len(probs) == 3 and all(set(p.columns) == {"code_prompt", "test", "entry_point", "verifier"} for p in probs)
    p = probs[0]
    right = p.solution
    always = f"```python\ndef {p.answer}(numbers, threshold):\n    return True\n```"
    task = get_task("code")
    assert task.verify(right, p.answer, **p.columns).status == "correct"
    v = task.verify(always, p.answer, **p.columns)
    assert v.status == "wrong" and "tests passed" in v.reason
    cols = {k: [v, v] for k, v in p.columns.items()}
    assert outcome([right, always], answer=[p.answer] * 2, task=["code"] * 2, **cols) == [1.0, 0.0]
    partial = code_rewards.tests_passed([right, always], **cols)
    assert partial[0] == 1.0 and 0.0 < partial[1] < 1.0


def test_without_bubblewrap_the_task_refuses_in_one_line(monkeypatch):
    def missing():
        raise JailUnavailable("the code verifier needs bubblewrap (apt-get install bubblewrap): not installed")

    monkeypatch.setattr(code_task, "require_jail", missing)
    with pytest.raises(DataError, match=r"^the code task cannot run: the code verifier needs bubblewrap") as e:
        load_task("code", "test", n=2)
    assert "\n" not in str(e.value)


def test_the_naive_verifier_pays_a_hack_that_rlvr_s_refuses(os_sandbox):
    """`verifier: naive` (the hack demonstration's harness) accepts `exit(0)`; the default refuses it."""
    hack = "```python\nimport os\nos._exit(0)\n```"
    for verifier, status, reward in (("rlvr", "wrong", 0.0), ("naive", "correct", 1.0)):
        p = load_task("code", "test", n=1, verifier=verifier)[0]
        assert get_task("code").verify(hack, p.answer, **p.columns).status == status, verifier
        assert code_rewards.tests_passed([hack], **{k: [v] for k, v in p.columns.items()}) == [reward], verifier


def test_both_harnesses_run_under_a_parent_s_cpu_limit(os_sandbox):
    """A parent's `ulimit -t` below the harness's CPU limit: the jail clamps to it instead of failing
    (the naive harness used to crash here and call a correct solution wrong)."""
    import subprocess
    import sys

    script = (
        "from rlvr.tasks import load_task\n"
        "from rlvr.harness import naive_verify_humaneval, verify_humaneval\n"
        "p = load_task('code', 'test', n=1)[0]\n"
        "c = p.columns\n"
        "prob = {'prompt': c['code_prompt'], 'test': c['test'], 'entry_point': c['entry_point']}\n"
        "print(naive_verify_humaneval(p.solution, prob).status, verify_humaneval(p.solution, prob).status)\n"
    )
    out = subprocess.run(["bash", "-c", f'ulimit -t 30 && "{sys.executable}" -c "$0"', script],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.stdout.split() == ["correct", "correct"], out.stderr[-500:]
