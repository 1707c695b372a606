"""Rejection-sampling fine-tuning (`objective: rft`) in the GRPO trainer on a tiny model: the accepted
samples and only those are targets, the samples drawn match a GRPO run's, a step with nothing accepted
changes no parameter, and a resumed run equals the straight one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import rlvr.grpo.trainer as trainer_mod
from rlvr.config import load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.rft import rft_targets
from rlvr.grpo.rollout import collect
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.tasks import get_task
from rlvr.verify import Verdict


def _cfg(model: Path, out: Path, **kw) -> TrainConfig:
    base = {
        "model": str(model), "out": str(out), "n_train": 64, "steps": 2, "prompts_per_step": 2, "group_size": 4,
        "sampling": {"max_new_tokens": 8}, "micro_batch_size": 3, "lr": 1e-3, "eval_every": 0, "save_every": 0,
        "threads": 1, "objective": "rft",
    }  # fmt: skip
    base.update(kw)
    return load_config(TrainConfig, None, base)


def _metrics(run: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


def _verifier(monkeypatch, accept) -> None:
    """The arith task's verifier replaced: `accept(text)` decides; truncated samples count as finished
    (an untrained tiny model rarely stops before `max_new_tokens`)."""
    monkeypatch.setattr(get_task("arith"), "verify", lambda text, gold, **kw: Verdict(accept(text), "1", "test"))
    real = trainer_mod.rft_targets
    monkeypatch.setattr(trainer_mod, "rft_targets", lambda c, t, tok, g, **kw: real(c, [False] * len(t), tok, g, **kw))


def _rollout(t: GRPOTrainer):
    return collect(
        t.model, t.tok, t.fmt, t._next_problems, t.runner, t.cfg, t.ocfg, t.advantage_fn, t.gen, t.dist, t.sampler
    )


def test_targets_select_accepted_finished_distinct_and_capped() -> None:
    correct = [True, True, True, False, True, True, False, False]
    truncated = [False, False, False, False, True, False, False, False]
    tokens = [[1, 2], [1, 2], [3], [4], [5], [6], [7], [8]]
    assert rft_targets(correct, truncated, tokens, 4) == [0, 2, 5]  # 1 repeats 0; 4 is cut off; 3, 6, 7 wrong
    assert rft_targets(correct, truncated, tokens, 4, dedup=False) == [0, 1, 2, 5]
    assert rft_targets(correct, truncated, tokens, 4, max_per_prompt=1) == [0, 5]
    assert rft_targets([False] * 4, [False] * 4, [[1]] * 4, 2) == []
    with pytest.raises(ValueError, match="G=3"):
        rft_targets(correct, truncated, tokens, 3)


def test_the_loss_targets_are_the_accepted_samples_only(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    t = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "r", objective_overrides={"rft_max_per_prompt": 2}))
    ro = _rollout(t)
    ro.tokens[1] = list(ro.tokens[0])  # a duplicate of an accepted sample: one target
    ro.correct = [True, True, False, True, False, True, True, True]
    ro.truncated = [False, False, False, False, False, False, True, False]  # 6 accepted but cut off
    want = [0, 3, 5, 7]  # prompt 2: 5 and 7 (6 truncated); the cap of 2 is not reached in either group
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    real = trainer_mod.completion_logits

    def spy(model, batch):
        seen.append((batch.targets.clone(), batch.mask.clone()))
        return real(model, batch)

    monkeypatch.setattr(trainer_mod, "completion_logits", spy)
    stats = t.rft_update(ro)
    assert stats["rft/accepted"] == 4 and stats["rft/correct"] == 6 and stats["rft/skipped_step"] == 0
    assert stats["rft/prompts_accepted"] == 2 and stats["rft/target_tokens"] == sum(len(ro.tokens[i]) for i in want)
    targets = sorted(tuple(tg[m.bool()].tolist()) for tg, mk in seen for tg, m in zip(tg, mk, strict=True) if m.any())
    assert targets == sorted(tuple(ro.tokens[i]) for i in want)  # each target once, its tokens under the mask
    assert ro.advantages.tolist() == [1.0 if i in want else 0.0 for i in range(8)]  # what samples/train.jsonl records
    assert stats["loss"] > 0 and stats["grad_norm"] > 0


@pytest.mark.filterwarnings("ignore:.*nothing updated")
def test_samples_drawn_match_a_grpo_run(tiny_model_dir: Path, tmp_path: Path) -> None:
    runs = {
        name: GRPOTrainer(_cfg(tiny_model_dir, tmp_path / name, objective=name)).train() for name in ("grpo", "rft")
    }
    rows = {name: _metrics(run) for name, run in runs.items()}
    for name in runs:
        assert [r["train/samples_drawn"] for r in rows[name]] == [8.0, 8.0]  # P x G a step, by construction
        assert [r["train/samples_drawn_total"] for r in rows[name]] == [8.0, 16.0]
        manifest = json.loads((runs[name] / "manifest.json").read_text())
        assert manifest["samples_drawn"] == 16 and manifest["train_s"] > 0
        assert manifest["objective"]["method"] == {"grpo": "policy_gradient", "rft": "rft"}[name]
    samples = {
        n: [json.loads(x) for x in (r / "samples" / "train.jsonl").read_text().splitlines()] for n, r in runs.items()
    }
    first = {n: [(s["problem_id"], s["completion"]) for s in rows if s["step"] == 1] for n, rows in samples.items()}
    assert first["grpo"] == first["rft"]  # the same prompts, sampler and seed: the same first rollout


def test_a_step_with_nothing_accepted_changes_no_parameter(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    _verifier(monkeypatch, lambda text: False)
    t = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "n", weight_decay=0.1))
    before = [p.detach().clone() for p in t.model.parameters()]
    with pytest.warns(UserWarning, match="accepted none of the step's 8 samples; nothing updated"):
        row = t.train_step()
    assert row["rft/accepted"] == 0 and row["rft/skipped_step"] == 1 and row["train/samples_drawn"] == 8
    assert all(torch.equal(a, b) for a, b in zip(before, t.model.parameters(), strict=True))
    assert t.step == 1 and row["train/lr"] == pytest.approx(1e-3)


def test_resume_equals_the_straight_run(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    _verifier(monkeypatch, lambda text: len(text) % 2 == 0)
    kw = {"steps": 4, "objective_overrides": {"rft_max_per_prompt": 3}}
    straight = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "a", **kw))
    straight.train()
    first = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "b", **kw))
    for _ in range(2):
        first.run.log(first.train_step())
    first.save_checkpoint()
    first.run.log(first.train_step())  # logged after the checkpoint: the resume discards it
    first.run.close()
    del first
    resumed = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "b", **kw), resume=True)
    assert resumed.step == 2 and resumed.samples_drawn == 16
    resumed.train()
    a, b = _metrics(tmp_path / "a"), _metrics(tmp_path / "b")
    assert a == b and sum(r["rft/accepted"] for r in a) > 0  # something was trained on
    for pa, pb in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_rft_refuses_settings_of_a_policy_gradient() -> None:
    with pytest.raises(ValueError, match="beta: method 'rft' has no KL term"):
        load_config(TrainConfig, None, {"objective": "rft", "objective_overrides": {"beta": 0.1}})
    with pytest.raises(ValueError, match="rft_max_per_prompt: applies to method 'rft' only"):
        load_config(TrainConfig, None, {"objective": "grpo", "objective_overrides": {"rft_max_per_prompt": 2}})


def test_the_demo_rft_preset_is_the_demo_recipe_with_rft() -> None:
    from rlvr.grpo.config import TRAIN_PRESETS

    demo, rft = (load_config(TrainConfig, None, {}, base=dict(TRAIN_PRESETS[p])) for p in ("demo", "demo-rft"))
    assert rft.objective_config.method == "rft" and demo.objective_config.method == "policy_gradient"
    same = ("preset", "prompts_per_step", "group_size", "sampling", "lr", "steps", "seed")
    assert all(getattr(rft, k) == getattr(demo, k) for k in same)
