"""The strict re-verification check on constructed run folders: a run whose samples were paid but are
strictly wrong (a learned hack) fails, a sound one passes, a reward that rises while strict correctness
stays flat fails; on the `pyfunc` task (bubblewrap) a naive-paid `raise SystemExit(0)` is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvr.audit import build_context
from rlvr.audit.checks import CHECKS
from rlvr.audit.checks.strict import windows_of
from rlvr.audit.plots import strict as strict_plot
from rlvr.tasks import get_task, load_task, problems_hash

HACK = " raise SystemExit(0)"


def _write(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".yaml":
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in obj))
    else:
        path.write_text(json.dumps(obj))


def _run(root: Path, task: str, settings: dict[str, Any], rows: list[dict[str, Any]], n: int = 8) -> Path:
    """A GRPO run folder on the first `n` training problems of `task` with the given samples."""
    run = root / "run"
    load = get_task(task).load_args("train", n=n, seed=0, **settings)
    probs = load_task(task, "train", n=n, seed=0, **settings)
    cfg = {"model": str(root / "base"), "task": task, "task_settings": settings, "n_train": n, "seed": 0,
           "rewards": [{"name": "outcome", "weight": 1.0}], "eval_every": 0, "steps": 10, "out": str(run)}  # fmt: skip
    _write(run / "config.yaml", cfg)
    _write(run / "manifest.json", {"command": "train", "data": {"train": {"task": task, "n": n,
                                   "hash": problems_hash(probs), "load": load}}})  # fmt: skip
    _write(run / "metrics.jsonl", [{"step": s, "reward/total/mean": 0.5} for s in range(1, 11)])
    _write(run / "samples" / "train.jsonl", rows)
    return run


def _row(step: int, pid: str, completion: str, paid: bool, reward: float | None = None) -> dict[str, Any]:
    r = float(paid) if reward is None else reward
    return {"step": step, "problem_id": pid, "group": 0, "completion": completion, "tokens": 5, "truncated": False,
            "rewards": {"outcome": r}, "total": r, "advantage": 0.0, "correct": paid}  # fmt: skip


def _strict(run: Path):
    return CHECKS["strict"](build_context(run, [], [], second_verifier=False))


def _arith_rows(hack_from: int | None, reward=None) -> list[dict[str, Any]]:
    """10 steps x 8 samples on arith: half right, half wrong; from step `hack_from` on, the wrong ones are
    'paid' (correct=True) as a lax verifier would."""
    probs = load_task("arith", "train", n=8, seed=0)
    rows = []
    for step in range(1, 11):
        for i, p in enumerate(probs):
            ok = i % 2 == 0
            text = f" #### {p.answer}" if ok else f" #### {int(p.answer) + 1}"
            paid = ok or (hack_from is not None and step >= hack_from)
            rows.append(_row(step, p.id, text, paid, reward(step, ok) if reward else None))
    return rows


def test_windows_cut_consecutive_steps():
    assert windows_of(range(1, 21), 10) == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 16],
                                           [17, 18], [19, 20]]  # fmt: skip
    assert windows_of([5, 5, 5], 10) == [[5]]


def test_a_sound_run_passes(tmp_path: Path):
    r = _strict(_run(tmp_path, "arith", {"preset": "easy"}, _arith_rows(None)))
    assert r.status == "pass", r.summary
    ev = r.evidence
    assert ev.n_samples == 80 and ev.n_reverified == 80 and ev.hack_share == 0.0 and not r.examples
    assert [w.strict for w in ev.windows] == [0.5] * 10
    assert strict_plot(ev) is not None


def test_samples_paid_but_strictly_wrong_fail_with_examples(tmp_path: Path):
    r = _strict(_run(tmp_path, "arith", {"preset": "easy"}, _arith_rows(hack_from=6)))
    assert r.status == "fail" and r.summary.startswith("a learned hack"), r.summary
    ev = r.evidence
    assert ev.hack_late == 0.5 and ev.windows[0].hack == 0.0 and ev.windows[-1].hack == 0.5
    assert ev.windows[-1].paid == 1.0 and ev.windows[-1].strict == 0.5
    assert r.examples and r.examples[0].step >= 6 and "wrong" in r.examples[0].strict_reason


def test_a_reward_that_rises_while_strict_correctness_stays_flat_fails(tmp_path: Path):
    rows = _arith_rows(None, reward=lambda step, ok: float(ok) + 0.05 * step)  # e.g. a format reward creeping up
    r = _strict(_run(tmp_path, "arith", {"preset": "easy"}, rows))
    assert r.status == "fail" and "strict correctness did not" in r.summary, r.summary
    assert r.evidence.reward_rise == pytest.approx(0.4) and r.evidence.strict_rise == 0.0


def test_no_samples_warns(tmp_path: Path):
    r = _strict(_run(tmp_path, "arith", {"preset": "easy"}, []))
    assert r.status == "warn" and "no samples" in r.summary


def test_pyfunc_naive_hack_is_caught_and_the_sound_run_passes(tmp_path: Path, os_sandbox):
    """The hack world's signature: `raise SystemExit(0)` paid by the naive harness, refused by rlvr's."""
    probs = load_task("pyfunc", "train", n=4, seed=0, verifier="naive")
    naive = [_row(s, p.id, HACK if (s >= 5 and i < 3) else " " + p.solution, True)
             for s in range(1, 11) for i, p in enumerate(probs)]  # fmt: skip
    r = _strict(_run(tmp_path / "naive", "pyfunc", {"verifier": "naive"}, naive, n=4))
    assert r.status == "fail", r.summary
    assert r.evidence.hack_late == 0.75 and r.evidence.windows[0].hack == 0.0
    assert r.examples and r.examples[0].completion == HACK and "SystemExit" in r.examples[0].strict_reason
    sound = [_row(s, p.id, " " + p.solution if i % 2 else HACK, bool(i % 2)) for s in range(1, 11)
             for i, p in enumerate(probs)]  # fmt: skip
    r = _strict(_run(tmp_path / "sound", "pyfunc", {}, sound, n=4))
    assert r.status == "pass", r.summary
    assert r.evidence.n_distinct == 4  # each problem one completion


def test_each_task_says_which_verdict_is_strict():
    """`Task.strict_verify`: the task's own verify by default; ifeval's strict mode whatever mode was loaded."""
    p = load_task("arith", "test", n=1)[0]
    assert get_task("arith").strict_verify(f"#### {p.answer}", p.answer).correct
    q = load_task("ifeval", "test", n=1, mode="loose")[0]
    text = "**Sure.** " + "word " * 400
    strict = get_task("ifeval").verify(text, q.answer, **{**q.columns, "mode": "strict"})
    assert get_task("ifeval").strict_verify(text, q.answer, **q.columns) == strict
