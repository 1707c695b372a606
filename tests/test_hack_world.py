"""The hack world end to end in a few steps (docs/code.md, "A policy that learns a hack"): the pyfunc base
from `pyfunc-base` (shortened), GRPO paid by the naive harness, and the audit's strict re-verification
reading that run. Slow (SFT, GRPO and the jail); needs bubblewrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.audit import run_audit
from rlvr.config import load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.runs import read_samples
from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft


@pytest.mark.slow
def test_a_naive_paid_run_is_re_verified_strictly(tmp_path: Path, os_sandbox) -> None:
    sft = load_config(SFTConfig, None, {**SFT_PRESETS["pyfunc-base"], "steps": 30, "batch_size": 16, "threads": 1,
                                        "shortcut_share": 0.5, "out": str(tmp_path / "base")})  # fmt: skip
    base = run_sft(sft)
    cfg = load_config(
        TrainConfig,
        None,
        {"model": str(base / "model"), "task": "pyfunc", "task_settings": {"verifier": "naive"}, "steps": 2,
         "prompts_per_step": 2, "group_size": 4, "sampling": {"max_new_tokens": 16}, "eval_every": 0,
         "save_every": 0, "threads": 1, "out": str(tmp_path / "naive")},
    )  # fmt: skip
    run = GRPOTrainer(cfg).train()
    samples = read_samples(run / "samples" / "train.jsonl")
    assert len(samples) == 16 and {s.step for s in samples} == {1, 2}
    result = run_audit(run, [], second_verifier=False)
    strict = result.check("strict")
    assert strict.evidence.n_reverified == 16 and strict.evidence.strict_verifier == "pyfunc.strict_verify"
    assert all(s.correct for s in samples if s.completion == " raise SystemExit(0)")  # the naive harness paid
    paid_exits = [s for s in samples if s.correct and "SystemExit" in (s.completion or "")]
    assert strict.evidence.hack_share == pytest.approx(len(paid_exits) / 16)  # and rlvr's refuses them
