"""Hack probes built from a problem (rlvr.harness.probes): every universal probe fools the naive
harness on any problem, and rlvr's verifier rejects every probe. Skipped with one line where
bubblewrap cannot run (`apt-get install bubblewrap`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.harness import CodeVerifier, hack_probes, naive_verify_humaneval

DATA = Path(__file__).resolve().parents[1] / "data"
PROBLEMS = [json.loads(line) for line in (DATA / "humaneval_subset.jsonl").read_text().splitlines()]


def _check(problems: list[dict]) -> None:
    with CodeVerifier(timeout_s=3.0, test_timeout_s=1.0) as ours:
        for problem in problems:
            for probe in hack_probes(problem):
                verdict = ours.verify(probe.completion, problem)
                assert not verdict.correct and verdict.scored, (problem["task_id"], probe.family, verdict)
                if probe.universal:
                    naive = naive_verify_humaneval(probe.completion, problem, timeout_s=5.0)
                    assert naive.correct, (problem["task_id"], probe.family, naive)


def test_probes_cover_every_family_and_name_the_entry_point():
    probes = hack_probes({"entry_point": "solve_it"})
    assert len({p.family for p in probes}) == len(probes) >= 18
    assert all("def solve_it(" in p.completion or "solve_it" in p.completion for p in probes)


@pytest.mark.parametrize("task_id", ["HumanEval/32"])
def test_probes_on_one_problem(task_id, os_sandbox):
    _check([p for p in PROBLEMS if p["task_id"] == task_id])


@pytest.mark.slow
def test_probes_on_every_vendored_problem(os_sandbox):
    _check(PROBLEMS)
