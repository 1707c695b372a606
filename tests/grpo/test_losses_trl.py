"""rlvr's policy losses against TRL's own loss code (`GRPOTrainer._compute_loss`) on fixed tensors:
the same loss and the same gradient for every loss TRL shares with rlvr. Runs when the `trl` extra
is installed (`pip install 'rlvr[trl]'`), skips otherwise.

TRL's `_compute_loss` is called unbound on a stand-in trainer whose model forward returns the fixed
log-probs and entropies, with one process and no gradient accumulation, so that nothing but TRL's
loss arithmetic runs. Correspondence (rlvr <- TRL):
- aggregation: `seq_mean_token_mean` <- `grpo`, `token_mean` <- `bnpo` and `dapo`,
  `seq_mean_token_sum_norm` <- `dr_grpo` (no empty rows, where TRL's means count them and rlvr's not);
- `clip` <- the token-level GRPO loss, `gspo` <- `importance_sampling_level="sequence"`;
- `cispo` <- `loss_type="cispo"` with TRL `epsilon_high = 1 + eps_high`;
- `delta` <- `delta`; `select_top_entropy(..., q)` <- `top_entropy_quantile=q` (one micro-batch).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from rlvr.grpo.losses import POLICY_LOSSES, select_top_entropy

trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer", reason="the trl extra is not installed")
torch.set_num_threads(1)
F64 = torch.float64
B, T, MAX_LEN = 6, 5, 7


class _OneProcess:
    """The accelerator calls `_compute_loss` makes, for a single process."""

    num_processes = 1

    def gather(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def pad_across_processes(self, x: torch.Tensor, dim: int = 0, pad_index: float = 0) -> torch.Tensor:
        return x

    def reduce(self, x: torch.Tensor, reduction: str = "sum") -> torch.Tensor:
        return x

    def gather_for_metrics(self, x: torch.Tensor) -> torch.Tensor:
        return x


def trl_loss(logp, old, adv, mask, entropy, *, loss_type, level, eps_low, eps_high, delta=None, top_q=1.0):  # type: ignore[no-untyped-def]
    cls = trl_grpo.GRPOTrainer
    fake = SimpleNamespace(
        aux_loss_enabled=False, top_entropy_quantile=top_q, off_policy_mask_threshold=None,
        importance_sampling_level=level, beta=0.0, loss_type=loss_type, epsilon_low=eps_low, epsilon_high=eps_high,
        args=SimpleNamespace(delta=delta, use_bias_correction_kl=False, steps_per_generation=1),
        use_vllm=False, vllm_importance_sampling_correction=False, model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1, _entropy_bonus_enabled=False, accelerator=_OneProcess(),
        _metrics={"train": defaultdict(list)}, max_completion_length=MAX_LEN,
    )  # fmt: skip
    fake._get_per_token_logps_and_entropies = lambda *a, **k: (logp, entropy, None)
    fake.get_high_entropy_mask = functools.partial(cls.get_high_entropy_mask, fake)
    inputs = {
        "prompt_ids": torch.zeros(B, 1, dtype=torch.long),
        "prompt_mask": torch.ones(B, 1, dtype=torch.long),
        "completion_ids": torch.zeros(B, T, dtype=torch.long),
        "completion_mask": mask,
        "advantages": adv,
        "old_per_token_logps": old,
        "num_items_in_batch": mask.sum(),
    }
    return cls._compute_loss(fake, None, inputs)


def case(seed: int, spread: float) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=gen, dtype=F64) * 3
    lengths = torch.randint(1, T + 1, (B,), generator=gen)  # no empty row
    return {
        "logp": logp,
        "old": logp + spread * torch.randn(B, T, generator=gen, dtype=F64),
        "adv": torch.randn(B, generator=gen, dtype=F64),
        "mask": (torch.arange(T) < lengths.unsqueeze(-1)).long(),
        "entropy": torch.rand(B, T, generator=gen) * 2,  # float32, as a model's (TRL compares in float32)
    }


AGG = {"grpo": "seq_mean_token_mean", "bnpo": "token_mean", "dapo": "token_mean", "dr_grpo": "seq_mean_token_sum_norm"}
AGG["cispo"] = "token_mean"  # TRL's cispo normalises as dapo
# (rlvr policy loss, TRL loss_type, TRL importance_sampling_level, eps_low, eps_high, delta, top_q)
CASES = [
    (name, loss_type, "token", 0.2, 0.28, delta, q)
    for name in ["clip"]
    for loss_type in ("grpo", "bnpo", "dapo", "dr_grpo")
    for delta in (None, 1.6)
    for q in (1.0, 0.3)
] + [
    ("gspo", loss_type, "sequence", 0.03, 0.04, delta, q)
    for loss_type in ("grpo", "dapo")
    for delta in (None, 1.08)
    for q in (1.0, 0.3)
] + [("cispo", "cispo", "token", 0.2, 0.25, None, q) for q in (1.0, 0.3)]  # fmt: skip

MAX_DIFF: dict[str, float] = {}  # largest |rlvr - TRL| seen, loss and gradient, for the report
EXERCISED: dict[str, bool] = {}  # whether some seed clipped (and, with delta, hit delta)


@pytest.mark.parametrize(("name", "loss_type", "level", "eps_low", "eps_high", "delta", "top_q"), CASES)
@pytest.mark.parametrize("seed", range(3))
def test_same_loss_and_gradient_as_trl(name, loss_type, level, eps_low, eps_high, delta, top_q, seed) -> None:  # type: ignore[no-untyped-def]
    c = case(seed, spread=0.4 if level == "token" else 0.15)
    lp_trl = c["logp"].clone().requires_grad_()
    trl_eps_high = 1.0 + eps_high if name == "cispo" else eps_high
    want = trl_loss(lp_trl, c["old"], c["adv"], c["mask"], c["entropy"], loss_type=loss_type, level=level,
                    eps_low=eps_low, eps_high=trl_eps_high, delta=delta, top_q=top_q)  # fmt: skip
    (g_want,) = torch.autograd.grad(want, lp_trl)

    lp = c["logp"].clone().requires_grad_()
    sel = None if top_q == 1.0 else select_top_entropy(c["entropy"], c["mask"], top_q).to(F64)
    got, st = POLICY_LOSSES[name](lp, c["old"], c["adv"], c["mask"], eps_low=eps_low, eps_high=eps_high,
                                  aggregation=AGG[loss_type], max_len=MAX_LEN, is_weights=sel, delta=delta)  # fmt: skip
    (g_got,) = torch.autograd.grad(got, lp)

    assert g_want.abs().max() > 0  # the case has a gradient
    assert got.item() == pytest.approx(want.item(), rel=1e-12, abs=1e-12)
    torch.testing.assert_close(g_got, g_want, rtol=1e-12, atol=1e-12)
    key = f"{name}/{loss_type}"
    MAX_DIFF[key] = max(MAX_DIFF.get(key, 0.0), abs(got.item() - want.item()), float((g_got - g_want).abs().max()))
    hit = st["clip_frac"].item() > 0
    if delta is not None:  # delta changes the loss somewhere
        plain, _ = POLICY_LOSSES[name](lp, c["old"], c["adv"], c["mask"], eps_low=eps_low, eps_high=eps_high,
                                       aggregation=AGG[loss_type], max_len=MAX_LEN, is_weights=sel)  # fmt: skip
        hit = hit and plain.item() != got.item()
    EXERCISED[f"{key}/delta={delta}/q={top_q}"] = EXERCISED.get(f"{key}/delta={delta}/q={top_q}", False) or hit


@pytest.mark.parametrize("seed", range(3))
def test_entropy_mask_is_trls(seed: int) -> None:
    c = case(seed, spread=0.1)
    fake = SimpleNamespace(accelerator=_OneProcess())
    for q in (0.0, 0.2, 0.5, 1.0):
        want = trl_grpo.GRPOTrainer.get_high_entropy_mask(fake, c["entropy"], c["mask"], 1 - q)
        assert torch.equal(select_top_entropy(c["entropy"], c["mask"], q), want)


def test_report_max_differences() -> None:
    """Prints the largest differences seen above (run with -s); they are 0 or float64 rounding."""
    print({k: f"{v:.1e}" for k, v in sorted(MAX_DIFF.items())})
    assert all(v < 1e-12 for v in MAX_DIFF.values())
    assert all(EXERCISED.values()), [k for k, v in EXERCISED.items() if not v]  # every case clipped somewhere


@pytest.mark.parametrize("temperature", [0.7, 1.3])
def test_trainer_scores_tokens_as_trl_does_at_the_sampling_temperature(tiny_model_dir, tmp_path, temperature) -> None:  # type: ignore[no-untyped-def]
    """The log-probs the update uses are TRL's (`add_fused_lm_head(model, temperature=T)`, what its
    GRPOTrainer scores completions with): the logits divided by the sampling temperature."""
    from trl.trainer.utils import add_fused_lm_head

    from rlvr.config import load_config
    from rlvr.grpo.config import TrainConfig
    from rlvr.grpo.objective import token_logprobs
    from rlvr.grpo.rollout import collect
    from rlvr.grpo.trainer import GRPOTrainer
    from rlvr.models.load import load_model

    cfg = load_config(TrainConfig, None, {
        "model": str(tiny_model_dir), "out": str(tmp_path / "t"), "n_train": 16, "prompts_per_step": 2,
        "group_size": 2, "sampling": {"max_new_tokens": 12, "temperature": temperature}, "eval_every": 0, "threads": 1,
    })  # fmt: skip
    t = GRPOTrainer(cfg)
    ro = collect(t.model, t.tok, t.fmt, t._next_problems, t.runner, t.cfg, t.ocfg, t.advantage_fn, t.gen, t.dist,
                 t.sampler)  # fmt: skip
    peer = load_model(tiny_model_dir)
    add_fused_lm_head(peer, temperature=temperature)
    for i, toks in enumerate(ro.tokens):
        ((idx, b),) = t._micro_batches(ro, [i])
        with torch.no_grad():
            ours = token_logprobs(t._logits(t.model, b), b.targets)[0, : len(toks)]
        ids = torch.tensor([ro.prompt_tokens[i] + toks])
        labels = ids.clone()
        labels[:, : len(ro.prompt_tokens[i])] = -100
        with torch.no_grad():
            out = peer(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels, fused_lm_head=True)
        theirs = out.log_probs[0, len(ro.prompt_tokens[i]) - 1 :]
        assert torch.allclose(ours, theirs.float(), atol=1e-5)
    t.run.close()
