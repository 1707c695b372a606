"""The code task end to end with a tiny model: `rlvr train` (2 steps, `outcome` + `tests_passed`),
`rlvr eval` (pass@k and statuses in eval.json) and `rlvr audit`, whose verifier check probes the run's
own training problems with its own verifier: the naive harness's run fails with the hacks it pays for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.audit import run_audit
from rlvr.config import load_config
from rlvr.evaluate.evaluation import EvalConfig, run_eval
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.models.tiny import TinyConfig, build_for_task


@pytest.mark.slow
@pytest.mark.parametrize("verifier", ["naive", "rlvr"])
def test_train_eval_audit_a_code_run(os_sandbox, tmp_path: Path, verifier: str) -> None:
    rows = [
        {"task_id": f"add/{k}", "prompt": f'def add{k}(x):\n    """x plus {k}"""\n', "entry_point": f"add{k}",
         "test": f"def check(candidate):\n    assert candidate(1) == {1 + k}\n    assert candidate(5) == {5 + k}\n",
         "canonical_solution": f"    return x + {k}\n"}
        for k in range(40)
    ]  # fmt: skip
    data = tmp_path / "code.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tiny = TinyConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=160)
    model = build_for_task(tmp_path / "model", [r["prompt"] + r["canonical_solution"] for r in rows], tiny, seed=0)
    ts = {"code_file": str(data), "test_file": str(data), "instruction": "", "verifier": verifier}
    cfg = load_config(TrainConfig, None, {
        "model": str(model), "out": str(tmp_path / "grpo"), "task": "code", "task_settings": ts, "n_train": 32,
        "steps": 2, "prompts_per_step": 2, "group_size": 4, "sampling": {"max_new_tokens": 16},
        "micro_batch_size": 8, "eval_every": 0, "save_every": 0, "threads": 1,
        "rewards": [{"name": "outcome"}, {"name": "tests_passed", "weight": 0.5}]})  # fmt: skip
    run = GRPOTrainer(cfg).train()
    last = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()][-1]
    assert last["step"] == 2 and "reward/outcome/mean" in last and "reward/tests_passed/mean" in last
    ev = run_eval(load_config(EvalConfig, None, {
        "model": str(run), "task": "code", "task_settings": ts, "split": "test", "n_problems": 4, "n_samples": 2,
        "ks": [1, 2], "sampling": {"max_new_tokens": 16}, "ci_resamples": 100, "threads": 1,
        "out": str(tmp_path / "eval")}))  # fmt: skip
    res = json.loads((ev / "eval.json").read_text())
    assert {"pass@1", "pass@2"} <= set(res["metrics"]) and sum(res["statuses"].values()) == 8
    audit = json.loads((run_audit(run, [ev], second_verifier=False).out_dir / "audit.json").read_text())
    check = next(c for c in audit["checks"] if c["name"] == "verifier")
    if verifier == "naive":
        assert check["status"] == "fail" and "hacks it accepts: exit(0) (4/4)" in check["summary"]
    else:
        assert check["status"] == "pass" and "it accepts no hack" in check["summary"], check["summary"]
