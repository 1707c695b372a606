"""The `math` task: MATH-500 vendored and every gold round-trips, bad files are one DataError naming the
line, pathological answers get a verdict or a timeout within the deadline from any process model, a
timeout's reward is None, and `rlvr train` / `rlvr eval` run on it end to end."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from rlvr.rewards import outcome
from rlvr.tasks import DataError, get_task, load_task
from rlvr.tasks.math_task import DEADLINE_S, load_math_jsonl, math500_path
from rlvr.verify import STATUSES, Verdict

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "math500" / "test.jsonl"
PATHOLOGICAL = [
    "\\boxed{10^{10^{10}}}",
    "\\boxed{10^{10^{10}} - 10^{10^{10}} + 21}",
    "\\boxed{" + "(" * 5000 + "1" + ")" * 5000 + "}",
    "\\boxed{" + "1+" * 25000 + "1}",
    "\\boxed{" + "x" * 50000 + "}",
    "\\boxed{9^{9^{9^{9}}}}",
    "\\boxed{" + "\\sqrt{" * 2000 + "2" + "}" * 2000 + "}",
    "\\boxed{(2^{100000})!}",
]


def test_math500_is_vendored_byte_identical_with_its_licence():
    data = math500_path().read_bytes()
    assert hashlib.sha256(data).hexdigest() == "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132"
    assert (math500_path().parent / "LICENSE").read_text().startswith("MIT License")
    if SHARED.is_file():
        assert SHARED.read_bytes() == data


def test_all_500_golds_round_trip():
    """Loading checks that `\\boxed{gold}` verifies correct against the gold, for every gold: a gold the
    parser cannot read would be a DataError here, never a silently skipped or zero-scored sample."""
    probs = load_task("math", "test")
    assert len(probs) == 500 and len({p.id for p in probs}) == 500
    task = get_task("math")
    bad = [
        p.answer for p in probs if task.verify(f"The answer is $\\boxed{{{p.answer}}}$.", p.answer).status != "correct"
    ]
    assert bad == []
    assert probs[0].question.endswith("within \\boxed{}.") and probs[0].meta["subject"]


def test_bad_math_files_are_one_line_naming_the_line(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n" + json.dumps({"problem": "x?"}) + "\n")
    with pytest.raises(DataError, match=r"m\.jsonl:2: field 'solution'"):
        load_math_jsonl(f)
    f.write_text(json.dumps({"problem": "1+1?", "solution": "so $\\boxed{2}$", "unique_id": "a"}) + "\n")
    assert load_math_jsonl(f)[0].answer == "2"
    f.write_text(json.dumps({"problem": "?", "answer": "\\boxed{"}) + "\n")
    with pytest.raises(DataError, match=r"m\.jsonl:1: field 'answer': the verifier cannot read this gold"):
        load_math_jsonl(f)
    with pytest.raises(DataError, match="math_file"):
        load_task("math", "train")


def test_train_and_dev_split_a_math_file_disjointly(tmp_path):
    f = tmp_path / "train.jsonl"
    f.write_text(
        "".join(json.dumps({"problem": f"What is {i} + {i}?", "answer": str(2 * i)}) + "\n" for i in range(200))
    )
    train = load_task("math", "train", math_file=str(f))
    dev = load_task("math", "dev", math_file=str(f))
    assert len(train) + len(dev) == 200 and dev and not {p.id for p in train} & {p.id for p in dev}


def _timed(completion: str) -> tuple[str, float]:
    t0 = time.monotonic()
    v = get_task("math").verify(completion, "21")
    return v.status, time.monotonic() - t0


def _all_timed() -> list[tuple[str, float]]:
    return [_timed(c) for c in PATHOLOGICAL]


def _check(results: list[tuple[str, float]], cases: list[str] = PATHOLOGICAL) -> None:
    for (status, seconds), case in zip(results, cases, strict=True):
        assert status in ("correct", "wrong", "unparseable_answer", "timeout"), (case[:40], status)
        assert seconds <= DEADLINE_S + 0.5, (case[:40], status, seconds)


@pytest.mark.slow  # up to 8 deadlines in each of four process models
def test_pathological_answers_end_within_the_deadline_from_any_process_model():
    _check(_all_timed())  # the main thread
    with ThreadPoolExecutor(1) as ex:
        _check(ex.submit(_all_timed).result())

    async def in_asyncio():
        return [await asyncio.to_thread(_timed, c) for c in PATHOLOGICAL]

    _check(asyncio.run(in_asyncio()))
    with ProcessPoolExecutor(1) as ex:
        _check(ex.submit(_all_timed).result())


def test_pathological_answers_from_the_main_thread():
    _check([_timed(c) for c in PATHOLOGICAL[:4]], PATHOLOGICAL[:4])


def test_a_timeout_is_a_none_reward_and_is_counted(monkeypatch):
    task = get_task("math")
    monkeypatch.setattr(type(task), "verify", lambda self, c, g, **k: Verdict(False, None, "slow", "timeout"))
    assert outcome(["\\boxed{1}"], answer=["1"], task=["math"]) == [None]


def test_rlvr_verify_task_math_prints_status_counts(tmp_path):
    f = tmp_path / "c.jsonl"
    rows = [
        {"completion": "so $\\boxed{\\dfrac{1}{2}}$", "gold": "\\frac12"},
        {"completion": "\\boxed{3}", "gold": "4"},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli import main; main()", "verify", str(f), "--task", "math"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = [json.loads(x) for x in out.stdout.splitlines()]
    assert [r["status"] for r in got] == ["correct", "wrong"]
    assert "statuses: correct 1, wrong 1, unparseable_gold 0" in " ".join(out.stderr.split())


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "from rlvr.cli import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.slow  # a tiny model trained and evaluated on `math` through the CLI: about a minute
def test_rlvr_train_and_eval_run_on_math_end_to_end(tmp_path):
    from rlvr.models.tiny import TinyConfig, build_for_task

    rows = [
        {"problem": f"What is $\\frac{{{i}}}{{2}} + {i}$?", "answer": f"\\frac{{{3 * i}}}{{2}}"} for i in range(1, 81)
    ]
    math_file = tmp_path / "train.jsonl"
    math_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    texts = [p.question + " $\\boxed{" + p.answer + "}$" for p in load_task("math", "test", n=20)]
    texts += [r["problem"] + " $\\boxed{" + r["answer"] + "}$" for r in rows]
    cfg = TinyConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, max_position_embeddings=2048)
    model = build_for_task(tmp_path / "tiny", texts, cfg, seed=0)
    train_cfg = tmp_path / "train.yaml"
    train_cfg.write_text(
        f"task: math\ntask_settings: {{math_file: {math_file}}}\nn_train: 40\nsteps: 2\nprompts_per_step: 2\n"
        "group_size: 2\nsampling: {max_new_tokens: 8}\neval_every: 0\nthreads: 1\n"
    )
    run = tmp_path / "grpo"
    out = _cli("train", "--config", str(train_cfg), "--model", str(model), "--out", str(run))
    assert out.returncode == 0, out.stderr
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "train/accuracy" in m]
    assert len(steps) == 2 and all(sum(m[f"verify/{s}"] for s in STATUSES) == 4 for m in steps)
    ev = tmp_path / "ev"
    out = _cli("eval", "--model", str(run), "--task", "math", "--problems", "3", "--samples", "2", "--ks", "1,2",
               "--out", str(ev))  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads((ev / "eval.json").read_text())
    assert result["task"] == "math" and sum(result["statuses"].values()) == 6
    samples = [json.loads(x) for x in (ev / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 6 and all(s["status"] in STATUSES for s in samples)


def test_the_value_of_a_variable_the_question_does_not_ask_for_is_wrong():
    task = get_task("math")
    asked = "If $f(q(1)) = -3$, what is $b$?"
    assert task.verify(r"\boxed{b = -1}", "-1", question=asked).status == "correct"
    other = task.verify(r"\boxed{a = -1}", "-1", question=asked)
    assert other.status == "wrong" and other.reason == "value of a, not b"
    assert task.verify(r"\boxed{a = -1}", "-1", question="Compute $f(2)$.").status == "correct"  # none named
    assert task.verify(r"\boxed{y = 83}", "83").reason == "value of y, not x"  # MATH-500's question for 83
    probs = load_task("math", "test")
    assert all(p.columns["question"] in p.question for p in probs)
