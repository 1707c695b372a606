"""The GRPO trainer on a tiny model: resume equivalence, robustness to bad rewards, run folder."""

import json
import math
import time
from pathlib import Path

import pytest
import torch

from rlvr.config import load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.rewarding import RewardRunner
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.rewards import RewardSpec


def _cfg(model: Path, out: Path, **kw) -> TrainConfig:
    base = {
        "model": str(model),
        "out": str(out),
        "n_train": 64,
        "steps": 6,
        "prompts_per_step": 2,
        "group_size": 4,
        "sampling": {"max_new_tokens": 10},
        "micro_batch_size": 3,
        "lr": 1e-3,
        "eval_every": 3,
        "eval_n": 4,
        "eval_samples": 2,
        "save_every": 3,
        "threads": 1,
        "rewards": [{"name": "outcome"}, {"name": "format_gsm8k", "weight": 0.5}],
    }
    base.update(kw)
    return load_config(TrainConfig, None, base)


def _metrics(run: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


def test_resume_gives_identical_metrics(tiny_model_dir: Path, tmp_path: Path) -> None:
    straight = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "a", objective="grpo"))
    straight.train()

    first = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "b", objective="grpo"))
    for _ in range(3):  # three steps, a checkpoint, then the process "dies"
        first.run.log(first.train_step())
    first.save_checkpoint()
    first.run.log(first.train_step())  # a step after the checkpoint that the resume must discard
    first.run.close()  # the process dies: its lock on the run folder goes with it
    del first
    resumed = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "b", objective="grpo"), resume=True)
    assert resumed.step == 3
    resumed.train()

    a, b = _metrics(tmp_path / "a"), _metrics(tmp_path / "b")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5, 6]
    assert a == b
    for pa, pb in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_run_folder_contents(tiny_model_dir: Path, tmp_path: Path) -> None:
    run = GRPOTrainer(
        _cfg(
            tiny_model_dir,
            tmp_path / "r",
            steps=3,
            objective="dapo",
            objective_overrides={"overlong_buffer": 4},
            bf16=True,
        )
    ).train()
    assert (run / "model" / "config.json").is_file()
    assert (run / "checkpoints" / "step-000003" / "trainer_state.pt").is_file()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["data"]["train"]["hash"] and manifest["versions"]["torch"] and manifest["finished"]
    assert manifest["objective"]["eps_high"] == 0.28  # the dapo preset was resolved
    cfg = load_config(TrainConfig, run / "config.yaml")
    assert cfg.objective == "dapo" and cfg.steps == 3
    rows = _metrics(run)
    for key in ("reward/outcome/mean", "reward/format_gsm8k/mean", "train/accuracy", "train/loss", "train/entropy"):
        assert key in rows[0] and math.isfinite(rows[0][key])
    assert "eval/dev/pass@1" in rows[2] and "eval/dev/greedy_acc" in rows[2]
    samples = [json.loads(x) for x in (run / "samples" / "train.jsonl").read_text().splitlines()]
    assert len(samples) == 3 * 2 * 4 and set(samples[0]) >= {"completion", "rewards", "advantage", "correct"}


def _length(completions, **kw):
    return [len(c) / 10 for c in completions]


def test_kl_and_multiple_iterations_run(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from rlvr.rewards import REGISTRY

    monkeypatch.setitem(REGISTRY, "length", lambda p: _length)  # a reward that varies
    cfg = _cfg(
        tiny_model_dir, tmp_path / "k", steps=2, eval_every=0, num_iterations=2, objective="grpo", lr=1e-2,
        rewards=[{"name": "length"}],
    )  # fmt: skip
    trainer = GRPOTrainer(cfg)
    assert trainer.ref is not None  # grpo preset: beta 0.04
    trainer.train()
    rows = _metrics(tmp_path / "k")
    assert rows[1]["train/kl"] > 0  # the policy moved away from the reference
    assert rows[0]["train/ratio_max"] >= 1.0


def _raises(completions, **kw):
    raise RuntimeError("boom")


def _nan(completions, **kw):
    return [math.nan] * len(completions)


def _short(completions, **kw):
    return [1.0]


def _hangs(completions, **kw):
    time.sleep(3)
    return [1.0] * len(completions)


def test_bad_rewards_become_none_and_are_counted() -> None:
    runner = RewardRunner(
        [RewardSpec(name="outcome")],
        timeout_s=0.5,
        extra={"raises": _raises, "nan": _nan, "short": _short, "hangs": _hangs},
    )
    t0 = time.perf_counter()
    scored = runner.score(["#### 3", "#### 4"], {"answer": ["3", "3"]})
    assert time.perf_counter() - t0 < 2.5  # the hung reward was abandoned at its timeout
    assert scored.values["outcome"] == [1.0, 0.0]
    for name in ("raises", "nan", "short", "hangs"):
        assert scored.values[name] == [None, None]
        assert scored.errors[name] == 2
    assert all(math.isnan(t) for t in scored.total)
    # the runner still works after a timeout
    assert runner.score(["#### 3"], {"answer": ["3"]}).values["outcome"] == [1.0]
    runner.close()


def test_training_survives_a_failing_reward(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from rlvr.rewards import REGISTRY

    monkeypatch.setitem(REGISTRY, "boom", lambda p: _raises)
    cfg = _cfg(tiny_model_dir, tmp_path / "f", steps=2, eval_every=0, rewards=[{"name": "outcome"}, {"name": "boom"}])
    run = GRPOTrainer(cfg).train()
    rows = _metrics(run)
    assert rows[-1]["reward/boom/errors"] == 8 and rows[-1]["train/advantage_abs_mean"] == 0.0
    assert rows[-1]["reward/total/mean"] is None  # NaN is written as null: every total was unscorable


def test_overlong_buffer_must_fit() -> None:
    from rlvr.config import ConfigError

    with pytest.raises(ConfigError, match="overlong_buffer=16 must be in"):
        load_config(TrainConfig, None, {"objective": "dapo", "sampling": {"max_new_tokens": 10}})


def test_unknown_reward_is_a_config_error(tmp_path: Path) -> None:
    from rlvr.config import ConfigError

    f = tmp_path / "run.yaml"
    f.write_text("steps: 3\nrewards:\n  - name: outcom\n")
    with pytest.raises(ConfigError, match=r"run.yaml:3: field 'rewards.0': .*unknown reward 'outcom'"):
        load_config(TrainConfig, f)


def test_lora_trains_adapters_only_and_resumes(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("peft")
    from rlvr.rewards import REGISTRY

    monkeypatch.setitem(REGISTRY, "length", lambda p: _length)
    kw = {
        "steps": 2, "eval_every": 0, "save_every": 1, "lr": 1e-2, "objective": "grpo",  # grpo: beta 0.04
        "rewards": [{"name": "length"}], "lora": {"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]},
    }  # fmt: skip
    trainer = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "l", **kw))
    assert trainer.ref is None  # the reference is the policy with adapters disabled
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    base_before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if not p.requires_grad}
    trainer.train_step()
    trainer.save_checkpoint()
    for n, p in trainer.model.named_parameters():
        if n in base_before:
            assert torch.equal(p, base_before[n])
    trainer.run.close()  # the process "dies": its lock on the run folder goes with it
    resumed = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "l", **kw), resume=True)
    assert resumed.step == 1
    run = resumed.train()
    from rlvr.models.load import load_model

    merged = load_model(run / "model")  # LoRA merged into a plain HF model
    assert not any("lora_" in n for n, _ in merged.named_parameters())
    assert _metrics(run)[-1]["train/kl"] > 0
    # a LoRA checkpoint (adapters only) loads as its base with the adapters merged: the same weights
    from_ck = load_model(run / "checkpoints" / "step-000002")
    final = dict(merged.named_parameters())
    assert all(torch.allclose(p, final[n], atol=1e-6) for n, p in from_ck.named_parameters())


def _fake_rounds(monkeypatch, signal: list[list[bool]]):
    """Replace one sampling round by groups whose 'has signal' flags come from `signal`, in order;
    return the list of problem counts each round asked for."""
    from rlvr.grpo import rollout

    asked: list[int] = []

    def fake_round(model, tok, fmt, probs, runner, cfg, ocfg, gen, dist, sampler, env=None):
        flags = signal[len(asked)][: len(probs)]
        asked.append(len(probs))
        g = cfg.group_size
        groups = []
        for p, ok in zip(probs, flags, strict=True):
            total = torch.tensor([1.0, 0.0] * (g // 2)) if ok else torch.ones(g)
            groups.append(rollout.Group(problem=p, tokens=[[5, 2]] * g, texts=["x"] * g, truncated=[False] * g,
                                        correct=[False] * g, entropy=[1.0] * g, rollout_logp=None,
                                        rewards={"outcome": total.tolist()}, total=total, components=total[None],
                                        weights=[1.0]))  # fmt: skip
        return groups, torch.tensor(flags), 0.0, type("S", (), {"seconds": 0.0, "errors": {"outcome": 0}})()

    monkeypatch.setattr(rollout, "_sample_round", fake_round)
    return asked


@pytest.mark.parametrize(
    ("dynamic", "gen_batch", "refills", "signal", "asked", "kept_signal"),
    [
        (False, None, 3, [[False, True, False, True]], [4], 2),  # no filtering: one round, as sampled
        (True, None, 3, [[False, True, False, True], [True, False], [True]], [4, 2, 1], 4),
        (True, 6, 3, [[False, True, False, True, True, False], [True] * 6], [6, 6], 4),  # bigger rounds
        (True, None, 1, [[False] * 4, [False] * 4, [True] * 4], [4, 4], 0),  # out of refills: zero-std fill
    ],
)
def test_dynamic_sampling_refills_zero_std_groups(monkeypatch, dynamic, gen_batch, refills, signal, asked, kept_signal):
    import functools

    from rlvr.grpo import objective as obj
    from rlvr.grpo.presets import PRESETS
    from rlvr.grpo.rollout import collect
    from rlvr.tasks import PromptFormatter, load_task

    got = _fake_rounds(monkeypatch, signal)
    problems = iter(load_task("arith", "train", n=64))
    cfg = load_config(
        TrainConfig, None,
        {"prompts_per_step": 4, "group_size": 2, "gen_batch_prompts": gen_batch, "max_refill_rounds": refills},
    )  # fmt: skip
    ocfg = PRESETS["dapo" if dynamic else "grpo"]
    tok = type("T", (), {"__call__": lambda self, texts, **kw: {"input_ids": [[1] for _ in texts]}})()
    ro = collect(
        None, tok, PromptFormatter(tok), lambda k: [next(problems) for _ in range(k)],
        RewardRunner([RewardSpec(name="outcome")]), cfg,
        ocfg, functools.partial(obj.resolve_reward_normalization("sum_then_normalize"),
                                advantage=obj.resolve_advantage("group"), eps=1e-4),
        torch.Generator(),
    )  # fmt: skip
    assert got == asked
    assert len(ro.problems) == 4 and ro.stats["train/sampling_rounds"] == len(asked)
    with_signal = sum(float(ro.total[i * 2 : i * 2 + 2].std()) > 0 for i in range(4))
    assert with_signal == kept_signal


def test_resume_skips_a_torn_checkpoint_and_an_interrupted_write(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Checkpoints are written to `step-N.tmp` and renamed; a resume ignores a leftover `.tmp` and
    falls back, with a warning, from a torn newest checkpoint to the one before."""
    run = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "r", steps=4, save_every=2, eval_every=0)).train()
    cks = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert cks == ["step-000002", "step-000004"]
    state = run / "checkpoints" / "step-000004" / "trainer_state.pt"
    state.write_bytes(state.read_bytes()[:100])  # torn, as after a full disk
    (run / "checkpoints" / "step-000006.tmp").mkdir()  # a write that was killed
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "finished": False}))  # killed before it finished
    with pytest.warns(UserWarning, match="step-000004: unreadable checkpoint"):
        resumed = GRPOTrainer(_cfg(tiny_model_dir, tmp_path / "r", steps=4, save_every=2, eval_every=0), resume=True)
    assert resumed.step == 2
    assert [r["step"] for r in _metrics(run)] == [1, 2]


@pytest.mark.parametrize("temperature", [0.5, 1.0])
def test_update_scores_the_distribution_the_rollouts_were_sampled_from(
    tiny_model_dir: Path, tmp_path: Path, temperature: float
) -> None:
    """The update's log-probs are of softmax(logits / T), the sampling distribution: the entropy the
    trainer computes from its logits equals the one the sampler recorded while drawing each completion
    (an independent code path). Before the fix the trainer scored softmax(logits) at any T."""
    from rlvr.grpo import objective as obj
    from rlvr.grpo.rollout import collect

    cfg = _cfg(tiny_model_dir, tmp_path / "t", sampling={"max_new_tokens": 10, "temperature": temperature})
    t = GRPOTrainer(cfg)
    ro = collect(
        t.model, t.tok, t.fmt, t._next_problems, t.runner, t.cfg, t.ocfg, t.advantage_fn, t.gen, t.dist, t.sampler
    )
    rows = [i for i in range(len(ro.tokens)) if ro.tokens[i]]
    with torch.no_grad():
        for idx, b in t._micro_batches(ro, rows):
            ent = obj.entropy_from_logits(t._logits(t.model, b))  # (mb, Lc)
            mine = ((ent * b.mask).sum(-1) / b.mask.sum(-1)).tolist()
            theirs = [ro.entropy[i] for i in idx.tolist()]
            assert mine == pytest.approx(theirs, abs=1e-4)
    t.run.close()
