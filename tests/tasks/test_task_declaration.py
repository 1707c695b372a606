"""A task is one declaration: its own load settings, splits, holdout and verifier, registered once;
loading, the trainer's accuracy and samples, the outcome reward, evaluation and the audit ask it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from rlvr.rewards.outcome import outcome
from rlvr.tasks import (
    DataError,
    HoldoutError,
    Problem,
    Task,
    arith,
    get_task,
    load_task,
    problems_hash,
    register,
    replay,
)
from rlvr.tasks.task import _TASKS
from rlvr.verify import Verdict, verify_answer


class ParityParams(BaseModel):
    preset: str = "small"
    n_max: int = 1000  # a setting of this task alone


class ParityTask(Task):
    """arith's problems, judged on the parity of the final answer only (a verifier of its own)."""

    name = "arith-parity"
    params = ParityParams

    def generate(self, split, n, seed, params):
        return arith.generate(split, min(n or 50, params.n_max), seed=seed, preset=params.preset)

    def verify(self, completion: str, gold: str) -> Verdict:
        got = verify_answer(completion, gold).parsed  # the number the completion answered
        ok = got is not None and int(float(got)) % 2 == int(gold) % 2
        return Verdict(ok, got, "same parity" if ok else "other parity")


@pytest.fixture
def parity():
    task = register(ParityTask())
    yield task
    _TASKS.pop(task.name)


def test_a_registered_task_loads_with_its_own_settings(parity) -> None:
    assert get_task("arith-parity") is parity and not parity.holdout
    probs = load_task("arith-parity", "train", n=7, seed=1, n_max=5, temperature=0.3)  # undeclared: ignored
    assert len(probs) == 5 and probs[0].id.startswith("arith-small-train-1-")
    with pytest.raises(DataError, match=r"task 'arith-parity': n_max: Input should be a valid integer"):
        load_task("arith-parity", "train", n_max="many")
    with pytest.raises(HoldoutError):
        load_task("arith-parity", "holdout")
    with pytest.raises(DataError, match="no private holdout"):
        load_task("arith-parity", "holdout", allow_holdout=True)
    with pytest.raises(ValueError, match="already registered"):
        register(ParityTask())


def test_load_args_replay_the_same_problems() -> None:
    for name in ("arith", "gsm8k"):
        args = get_task(name).load_args("test", n=9, seed=3, preset="medium")
        assert args["task"] == name and ("preset" in args) == (name == "arith")
        assert problems_hash(replay(args)) == problems_hash(load_task(name, "test", n=9, seed=3, preset="medium"))
    with pytest.raises(HoldoutError):
        replay(get_task("arith").load_args("holdout", n=2))
    assert len(replay(get_task("arith").load_args("holdout", n=2), allow_holdout=True)) == 2


def test_the_outcome_reward_asks_the_task(parity) -> None:
    done = ["#### 8", "#### 7"]
    assert outcome(done, answer=["6", "6"]) == [0.0, 0.0]  # the numeric verifier: wrong both times
    assert outcome(done, answer=["6", "6"], task=["arith-parity"] * 2) == [1.0, 0.0]


def test_training_and_evaluation_ask_the_task_and_record_the_load(parity, tiny_model_dir: Path, tmp_path) -> None:
    from rlvr.config import load_config
    from rlvr.evaluate.evaluation import EvalConfig, run_eval
    from rlvr.grpo.config import TrainConfig
    from rlvr.grpo.trainer import GRPOTrainer
    from rlvr.runs import read_manifest

    cfg = load_config(
        TrainConfig,
        None,
        {
            "model": str(tiny_model_dir),
            "out": str(tmp_path / "run"),
            "task": "arith-parity",
            "preset": "small",
            "n_train": 16,
            "steps": 2,
            "prompts_per_step": 2,
            "group_size": 4,
            "sampling": {"max_new_tokens": 12},
            "eval_every": 0,
            "save_every": 0,
            "threads": 1,
            "rewards": [{"name": "outcome"}],
        },
    )
    GRPOTrainer(cfg).train()
    run = tmp_path / "run"
    ref = read_manifest(run).data["train"]
    assert ref.load == {"task": "arith-parity", "split": "train", "n": 16, "seed": 0, "preset": "small", "n_max": 1000}
    assert problems_hash(replay(ref.load)) == ref.hash
    golds = {p.id: p.answer for p in replay(ref.load)}
    rows = [json.loads(x) for x in (run / "samples" / "train.jsonl").read_text().splitlines()]
    assert rows and all(r["correct"] == parity.verify(r["completion"], golds[r["problem_id"]]).correct for r in rows)
    assert all(r["rewards"]["outcome"] == float(r["correct"]) for r in rows)

    ev = load_config(
        EvalConfig,
        None,
        {
            "model": str(tiny_model_dir),
            "out": str(tmp_path / "ev"),
            "task": "arith-parity",
            "preset": "small",
            "split": "test",
            "n_problems": 6,
            "n_samples": 2,
            "sampling": {"max_new_tokens": 12},
            "threads": 1,
        },
    )
    run_eval(ev)
    ref = read_manifest(tmp_path / "ev").data["test"]
    assert ref.load["task"] == "arith-parity" and problems_hash(replay(ref.load)) == ref.hash
    golds = {p.id: p.answer for p in replay(ref.load)}
    rows = [json.loads(x) for x in (tmp_path / "ev" / "samples.jsonl").read_text().splitlines()]
    assert all(r["correct"] == parity.verify(r["completion"], golds[r["problem_id"]]).correct for r in rows)


def test_problem_is_unchanged_by_the_declaration() -> None:
    p = load_task("arith", "test", n=1)[0]
    assert isinstance(p, Problem) and p.source == "arith" and p.id == "arith-easy-test-0-0"
