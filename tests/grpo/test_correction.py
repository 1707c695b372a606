"""The rollout/trainer mismatch correction: each weighting against a slow per-token loop, no gradient
through the weights, the weighted policy loss, and the trainer's plumbing with a stand-in engine that
reports log-probs shifted from the trainer's by a known amount."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from rlvr.config import load_config
from rlvr.grpo import objective as obj
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.correction import CORRECTIONS, correction_stats, resolve_correction
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.models.batching import completion_logits, pack
from rlvr.models.engines import Sampler


def _loop(name: str, old: torch.Tensor, roll: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    out = torch.zeros_like(old)
    for b in range(old.shape[0]):
        lrs = [float(old[b, t] - roll[b, t]) for t in range(old.shape[1]) if mask[b, t]]
        for t in range(old.shape[1]):
            r = math.exp(float(old[b, t] - roll[b, t])) if mask[b, t] else 1.0
            if name == "token":
                out[b, t] = min(r, cap)
            elif name == "sequence":
                out[b, t] = min(math.exp(sum(lrs)), cap)
            elif name == "token_mask":
                out[b, t] = float(1 / cap <= r <= cap)
            else:
                geo = math.exp(sum(lrs) / max(1, len(lrs)))
                out[b, t] = float(1 / cap <= geo <= cap)
    return out


@pytest.mark.parametrize("name", list(CORRECTIONS))
def test_each_correction_equals_a_slow_loop(name: str) -> None:
    g = torch.Generator().manual_seed(0)
    old = torch.randn(5, 7, generator=g) * 0.5
    roll = old + torch.randn(5, 7, generator=g) * 0.4
    mask = (torch.rand(5, 7, generator=g) > 0.3).float()
    got = resolve_correction(name)(old, roll, mask, 1.5)
    want = _loop(name, old, roll, mask, 1.5)
    torch.testing.assert_close(got * mask, want * mask, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="unknown rollout correction"):
        resolve_correction("nope")


def test_weights_scale_the_loss_and_carry_no_gradient() -> None:
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    roll = torch.tensor([[-1.5, -1.0, -0.5]], requires_grad=True)
    mask = torch.ones(1, 3)
    w = resolve_correction("token")(logp.detach(), roll, mask, 2.0)
    assert not w.requires_grad
    torch.testing.assert_close(w, torch.tensor([[math.exp(0.5), math.exp(-1.0), 1.0]]).clamp(max=2.0))
    adv = torch.tensor([1.0])
    plain, _ = obj.policy_loss(logp, logp.detach(), adv, mask, aggregation="token_mean")
    weighted, _ = obj.policy_loss(logp, logp.detach(), adv, mask, aggregation="token_mean", is_weights=w)
    assert plain.item() == pytest.approx(-1.0) and weighted.item() == pytest.approx(-float(w.mean()))
    weighted.backward()
    torch.testing.assert_close(logp.grad, -w / 3)  # d/dlogp of -w * rho * A / T at rho = 1
    st = correction_stats(logp.detach(), roll.detach(), mask, w)
    assert float(st["logprob_diff_max"]) == pytest.approx(1.0) and float(st["is_ratio_min"]) == pytest.approx(
        math.exp(-1.0)
    )


class ShiftedEngine(Sampler):
    """rlvr's sampler, reporting the trainer's own log-probs of its tokens minus `shift`, as an engine
    whose numerics differ from the trainer's would."""

    def __init__(self, shift: float) -> None:
        super().__init__("hf")
        self.shift, self.synced = shift, []

    def sample(self, model, tok, prompts, n, sampling, **kw):
        out = super().sample(model, tok, prompts, n, sampling, **kw)
        enc = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts for _ in range(n)]
        with torch.no_grad():
            b = pack(enc, out.tokens, tok.pad_token_id)
            logp = obj.token_logprobs(completion_logits(model, b), b.targets)
        out.logprobs = [(logp[i, : len(t)] - self.shift).tolist() for i, t in enumerate(out.tokens)]
        return out

    def sync(self, model, step=None) -> None:
        self.synced.append(step)


@pytest.mark.parametrize(("correction", "weight"), [("token", math.exp(0.3)), ("none", 1.0), ("token_mask", 1.0)])
def test_trainer_applies_the_correction_and_logs_the_mismatch(tiny_model_dir: Path, tmp_path: Path, correction, weight):
    cfg = load_config(TrainConfig, None, {
        "model": str(tiny_model_dir), "out": str(tmp_path / "run"), "n_train": 16, "steps": 2, "prompts_per_step": 2,
        "group_size": 4, "sampling": {"max_new_tokens": 8}, "eval_every": 0, "save_every": 0, "threads": 1,
        "objective_overrides": {"beta": 0.04, "rollout_correction": correction},
    })  # fmt: skip
    tr = GRPOTrainer(cfg)
    tr.sampler = engine = ShiftedEngine(0.3)
    rows = [tr.train_step() for _ in range(2)]
    assert engine.synced == [1, 2]  # weights pushed after every optimiser step
    for row in rows:
        assert row["rollout/logprob_diff/mean"] == pytest.approx(0.3, abs=1e-4)
        assert row["rollout/is_ratio/mean"] == pytest.approx(math.exp(0.3), abs=1e-3)
        assert row["rollout/is_weight/mean"] == pytest.approx(weight, abs=1e-3)
