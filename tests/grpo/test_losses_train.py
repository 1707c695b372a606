"""The objective variants end to end: the config surface (`objective`, `objective_overrides`, derived
from `ObjectiveConfig`), a short training run per new preset on the tiny model, the trainer's
update invariant to micro-batching with every new loss and with token selection, and one
`rlvr train` subprocess run with a new objective.

Run: `.venv/bin/python -m pytest tests/test_losses_train.py -q`.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
import torch
import yaml

from rlvr.config import ConfigError, load_config
from rlvr.grpo.config import ObjectiveOverrides, TrainConfig
from rlvr.grpo.presets import PRESETS, ObjectiveConfig, PresetName
from rlvr.grpo.rollout import collect
from rlvr.grpo.trainer import GRPOTrainer


def _helpers():  # type: ignore[no-untyped-def]
    """tests/grpo/test_trainer.py's `_cfg` and `_metrics` (the tests are not a package)."""
    spec = importlib.util.spec_from_file_location("_trainer_helpers", Path(__file__).parent / "test_trainer.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._cfg, mod._metrics


_cfg, _metrics = _helpers()
NEW = ["gspo", "gspo_token", "cispo", "rloo", "reinforce_pp", "reinforce_pp_baseline", "intellect2", "high_entropy",
       "gdpo"]  # fmt: skip


def _length(completions, **kw):  # type: ignore[no-untyped-def]
    return [len(c) / 10 for c in completions]  # a reward that varies, so groups carry signal


@pytest.fixture
def length_reward(monkeypatch):  # type: ignore[no-untyped-def]
    from rlvr.rewards import REGISTRY

    monkeypatch.setitem(REGISTRY, "length", lambda p: _length)


# ----------------------------------------------------------------------------- config


def test_overrides_are_derived_from_objective_config() -> None:
    assert list(ObjectiveOverrides.model_fields) == list(ObjectiveConfig.model_fields)
    assert all(v is None for v in ObjectiveOverrides().model_dump().values())
    assert set(get_args(PresetName)) == set(PRESETS)
    for name in PRESETS:  # every preset is a valid `objective`
        assert load_config(TrainConfig, None, {"objective": name}).objective_config == PRESETS[name]


def test_configs_with_objective_overrides_pickle() -> None:
    """Search and study workers receive their configs pickled; a derived model bound in the wrong module
    does not pickle (found by a search whose every screen failed)."""
    import pickle

    from rlvr.search.config import SearchConfig

    cfg = load_config(TrainConfig, None, {"objective": "dapo", "objective_overrides": {"beta": 0.1}})
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.objective_config.beta == 0.1 and back.objective_config == cfg.objective_config
    search = load_config(SearchConfig, None, {"train": {"objective_overrides": {"beta": 0.0}}})
    assert pickle.loads(pickle.dumps(search)) == search


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"policy_loss": "ppo"}, "field 'objective_overrides.policy_loss': Input should be 'clip', 'gspo'"),
        ({"advantage_scale": "std"}, "field 'objective_overrides.advantage_scale': Input should be"),
        ({"eps_low": 1.0}, "field 'objective_overrides.eps_low': Input should be less than 1"),
        ({"eps_high": -1}, "field 'objective_overrides.eps_high': Input should be greater than or equal to 0"),
        (
            {"top_entropy_quantile": 1.5},
            "field 'objective_overrides.top_entropy_quantile': Input should be less than or equal to 1",
        ),
        ({"delta": 0.5}, "field 'objective_overrides.delta': Input should be greater than 1"),
        (
            {"rollout_correction_cap": 0.5},
            "field 'objective_overrides.rollout_correction_cap': Input should be greater than or equal to 1",
        ),
        ({"reward_normalization": "gdpo"}, "field 'objective_overrides.reward_normalization': Input should be"),
        ({"beta": "lots"}, "field 'objective_overrides.beta': Input should be a valid number"),
        ({"clip": 0.2}, "field 'objective_overrides.clip': unknown field"),
        ({"delta": 1.1}, "objective 'grpo' with objective_overrides: delta: must be > 1 + eps_high"),
    ],
)
def test_override_errors_name_the_field(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(TrainConfig, None, {"objective_overrides": overrides})
    assert message in str(e.value)


def test_cispo_refuses_delta_and_presets_can_be_overridden() -> None:
    with pytest.raises(ConfigError, match="delta: does not apply to policy_loss 'cispo'"):
        load_config(TrainConfig, None, {"objective": "cispo", "objective_overrides": {"delta": 4.0}})
    cfg = load_config(TrainConfig, None, {"objective": "gspo", "objective_overrides": {"top_entropy_quantile": 0.5}})
    o = cfg.objective_config
    assert (o.policy_loss, o.eps_low, o.eps_high, o.top_entropy_quantile) == ("gspo", 3e-4, 4e-4, 0.5)
    with pytest.raises(ConfigError, match="field 'objective': Input should be 'grpo'"):
        load_config(TrainConfig, None, {"objective": "ppo"})


# ----------------------------------------------------------------------------- short runs


@pytest.mark.parametrize("objective", NEW)
def test_three_steps_of_each_new_objective(objective: str, tiny_model_dir: Path, tmp_path: Path, length_reward) -> None:  # type: ignore[no-untyped-def]
    # Two updates per rollout, so that the ratio moves and the off-policy losses (GSPO, CISPO,
    # two-sided clipping) act; two rewards, so that GDPO's normalisation has something to do.
    overrides = {"overlong_buffer": 4} if PRESETS[objective].overlong_buffer else {}  # 10-token budget here
    cfg = _cfg(tiny_model_dir, tmp_path / "r", objective=objective, objective_overrides=overrides, steps=3,
               eval_every=0, save_every=0, num_iterations=2,
               rewards=[{"name": "length"}, {"name": "outcome", "weight": 0.5}])  # fmt: skip
    tr = GRPOTrainer(cfg)
    before = [p.detach().clone() for p in tr.model.parameters()]
    run = tr.train()
    rows = _metrics(run)
    assert [r["step"] for r in rows] == [1, 2, 3]
    for r in rows:
        for key in ("train/loss", "train/grad_norm", "train/clip_frac", "train/ratio_mean", "reward/total/mean"):
            assert math.isfinite(r[key]), key
    assert any(not torch.equal(a, b) for a, b in zip(before, tr.model.parameters(), strict=True))
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["objective"] == {**PRESETS[objective].model_dump(), **overrides} and manifest["finished"]
    o = PRESETS[objective]
    if o.policy_loss.startswith("gspo"):  # the second update's sequence ratios leave GSPO's tiny range
        assert all(0 <= r["train/seq_clip_frac"] <= 1 for r in rows) and any(r["train/seq_clip_frac"] > 0 for r in rows)
    if o.delta is not None:
        assert all(0 <= r["train/clip_frac_delta"] <= r["train/clip_frac"] + 1e-9 for r in rows)
    if o.top_entropy_quantile < 1:
        assert all(0 < r["train/entropy_select_frac"] <= 1 for r in rows if r["train/update_rows_frac"] > 0)
        assert all(math.isfinite(r["train/entropy_threshold"]) for r in rows if r["train/update_rows_frac"] > 0)
    if o.advantage_scale == "reinforce_pp":  # no group baseline: zero-std groups still train
        assert rows[0]["train/update_rows_frac"] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- update invariances


@pytest.mark.parametrize(
    "objective, overrides",
    [
        ("high_entropy", {"dynamic_sampling": False, "overlong_buffer": 4}),
        ("gspo", {"top_entropy_quantile": 0.5}),
        ("cispo", {"eps_high": 0.01, "top_entropy_quantile": 0.3, "reward_normalization": "normalize_then_sum"}),
        ("intellect2", {"eps_low": 0.01, "eps_high": 0.01, "delta": 1.02}),
    ],
)
def test_update_does_not_depend_on_micro_batching(objective, overrides, tiny_model_dir, tmp_path, length_reward):  # type: ignore[no-untyped-def]
    """The same rollout updated with micro-batches of 2 and of 8 gives the same weights, also with
    token selection (one entropy threshold for the step) and two updates per rollout."""
    trainers = []
    for mbs in (2, 8):
        cfg = _cfg(tiny_model_dir, tmp_path / f"m{mbs}", objective=objective, objective_overrides=overrides,
                   micro_batch_size=mbs, num_iterations=2, eval_every=0, lr=1e-3,
                   rewards=[{"name": "length"}, {"name": "outcome"}])  # fmt: skip
        trainers.append(GRPOTrainer(cfg))
    a, b = trainers
    ro = collect(a.model, a.tok, a.fmt, a._next_problems, a.runner, a.cfg, a.ocfg, a.advantage_fn, a.gen)
    assert (ro.advantages != 0).any()
    sa, sb = a.update(copy.deepcopy(ro)), b.update(copy.deepcopy(ro))
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, atol=2e-5, rtol=1e-5)  # Adam steps are ~lr = 1e-3
    assert sa["clip_frac"] > 0  # the second update clips (or, for CISPO, caps) somewhere
    for k in ("loss", "clip_frac", "entropy_select_frac", "entropy_threshold", "seq_clip_frac", "clip_frac_delta"):
        if k in sa:
            assert sb[k] == pytest.approx(sa[k], abs=1e-5), k
    if "clip_frac_delta" in sa:
        assert sa["clip_frac_delta"] > 0


# ----------------------------------------------------------------------------- the CLI


def test_rlvr_train_with_a_new_objective(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = {
        "model": str(tiny_model_dir), "out": str(tmp_path / "run"), "n_train": 16, "steps": 2,
        "prompts_per_step": 2, "group_size": 2, "sampling": {"max_new_tokens": 8}, "eval_every": 0, "threads": 1,
        "objective": "cispo", "num_iterations": 2,
        "objective_overrides": {"top_entropy_quantile": 0.5, "reward_normalization": "normalize_then_sum"},
        "rewards": [{"name": "outcome"}, {"name": "format_gsm8k", "weight": 0.5}],
    }  # fmt: skip
    path = tmp_path / "cispo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-c", "from rlvr.cli import main; main()", "train", "--config", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = _metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["train/loss"]) for r in rows)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["objective"]["policy_loss"] == "cispo"
    assert manifest["objective"]["reward_normalization"] == "normalize_then_sum"
    bad = subprocess.run([*cmd[:-2], "--objective", "ppo"], capture_output=True, text=True, timeout=300, env=env)
    assert bad.returncode == 2 and "field 'objective'" in bad.stderr


# ----------------------------------------------------------------------------- data parallel


@pytest.mark.slow
def test_two_ranks_equal_one_process_with_token_selection_and_gdpo(
    tmp_path: Path, tiny_model_dir: Path, length_reward, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The step-wide entropy threshold is gathered over ranks: 2 gloo ranks train like one process
    (tests/grpo/test_distributed.py's check, here for the new objective features)."""
    site = tmp_path / "site"  # the ranks are fresh processes: register the varying reward there too
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "from rlvr.rewards import REGISTRY\n"
        "REGISTRY['length'] = lambda p: (lambda completions, **kw: [len(c) / 10 for c in completions])\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    spec = importlib.util.spec_from_file_location("_dist_helpers", Path(__file__).parent / "test_distributed.py")
    assert spec is not None and spec.loader is not None
    dist = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dist)  # its ENV now carries PYTHONPATH
    kw = {"objective": "gspo", "num_iterations": 2, "rewards": [{"name": "length"}, {"name": "outcome"}],
          "objective_overrides": {"eps_low": 0.05, "eps_high": 0.05, "top_entropy_quantile": 0.3,
                                  "reward_normalization": "normalize_then_sum"}}  # fmt: skip
    one = dist._config(tmp_path, tiny_model_dir, "one", **kw)
    GRPOTrainer(load_config(TrainConfig, one)).train()
    dist._torchrun("--config", str(dist._config(tmp_path, tiny_model_dir, "two", **kw)))
    dist._assert_same(tmp_path / "one", tmp_path / "two")
    a, b = _metrics(tmp_path / "one"), _metrics(tmp_path / "two")
    assert all(r["train/update_rows_frac"] > 0 and 0 < r["train/entropy_select_frac"] < 1 for r in a)
    for ra, rb in zip(a, b, strict=True):
        for k in ("train/entropy_threshold", "train/entropy_select_frac", "train/clip_frac"):
            assert rb[k] == pytest.approx(ra[k], abs=1e-5), k
