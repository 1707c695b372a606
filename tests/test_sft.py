"""Tests for rlvr.sft: the answer-only share of the SFT targets and the length-bucketed micro-batches."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from rlvr.sft import SFTConfig, _accumulate, _answer_only
from rlvr.tasks import format_prompt, format_target, load_task
from rlvr.tasks.problem import parse_gsm8k_solution


def test_answer_only_share_is_seeded_and_keeps_the_answer() -> None:
    probs = load_task("arith", "train", n=2000, preset="small")
    assert _answer_only(probs, 0.0, seed=0) is probs
    mixed = _answer_only(probs, 0.6, seed=0)
    short = [m for m, p in zip(mixed, probs, strict=True) if m.solution != p.solution]
    assert 0.55 < len(short) / len(probs) < 0.65
    for m in short:
        assert m.solution == f"#### {m.answer}" and parse_gsm8k_solution(m.solution) == (m.answer, [])
    kept = [m for m, p in zip(mixed, probs, strict=True) if m.solution == p.solution]
    assert all("<<" in m.solution for m in kept)
    assert _answer_only(probs, 0.6, seed=0) == mixed  # the same seed draws the same problems
    assert _answer_only(probs, 0.6, seed=1) != mixed
    assert all(m.id == p.id and m.answer == p.answer for m, p in zip(mixed, probs, strict=True))


def test_length_buckets_give_the_whole_batch_gradient(tiny_model_dir: Path) -> None:
    from rlvr.models.load import load_model, load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    probs = _answer_only(load_task("arith", "train", n=12), 0.5, seed=0)
    prompt_ids = [tok(format_prompt(p.question), add_special_tokens=False)["input_ids"] for p in probs]
    target_ids = [tok(format_target(p), add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for p in probs]
    grads, losses = [], []
    for buckets in (1, 3):
        model = load_model(tiny_model_dir).train()
        cfg = SFTConfig(length_buckets=buckets)
        losses.append(float(_accumulate(model, list(range(12)), prompt_ids, target_ids, tok.pad_token_id, cfg)))
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert math.isclose(losses[0], losses[1], rel_tol=1e-5)
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6)


def test_answer_only_targets_start_at_answer_only_from(tmp_path: Path, monkeypatch) -> None:
    """With share 1 from half-way, the first half of the steps trains worked chains, the rest bare answers."""
    import rlvr.sft as sft

    seen: list[list[int]] = []

    def spy(model, idx, prompt_ids, target_ids, pad_id, cfg, masks=None):
        seen.append([len(target_ids[i]) for i in idx])
        return real(model, idx, prompt_ids, target_ids, pad_id, cfg, masks)

    real = sft._accumulate
    monkeypatch.setattr(sft, "_accumulate", spy)
    tiny = {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "intermediate_size": 32}
    cfg = SFTConfig(tiny=tiny, preset="small", n_train=16, steps=6, batch_size=4, warmup_steps=1, log_every=3,
                    answer_only_share=1.0, answer_only_from=0.5, threads=1, out=str(tmp_path / "sft"))  # fmt: skip
    sft.run_sft(cfg)
    # a bare answer is `####`, its digits and the end token; a worked chain of 2-3 steps is far longer
    assert [max(s) > 6 for s in seen] == [True, True, True, False, False, False]
