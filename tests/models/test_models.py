"""Tiny model save/load round trip, the sampler against teacher forcing, and batch packing."""

from pathlib import Path

import pytest
import torch

from rlvr.config import SamplingConfig
from rlvr.models.batching import completion_logits, pack
from rlvr.models.load import ModelLoadError, load_model, load_tokenizer
from rlvr.models.sampling import encode_prompts, sample
from rlvr.models.tiny import build_tokenizer
from rlvr.tasks import format_prompt, format_target, load_task


def test_tokenizer_round_trip_through_disk(tiny_model_dir: Path) -> None:
    tok = load_tokenizer(tiny_model_dir)
    probs = load_task("arith", "test", n=20)
    for p in probs:
        text = format_prompt(p.question) + format_target(p)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text  # spaces, newlines and digits survive save + load
        assert tok.unk_token_id not in ids
        # the prompt ends exactly where the solution's first token begins
        n_prompt = len(tok(format_prompt(p.question), add_special_tokens=False)["input_ids"])
        assert ids[:n_prompt] == tok(format_prompt(p.question), add_special_tokens=False)["input_ids"]
    assert tok.padding_side == "left" and tok.pad_token_id != tok.eos_token_id


def test_digits_are_single_tokens_and_words_whole() -> None:
    tok = build_tokenizer(["Tom has 12 apples ."])
    pieces = tok.convert_ids_to_tokens(tok("Tom has 907 apples", add_special_tokens=False)["input_ids"])
    assert pieces == ["Tom", "Ġhas", "Ġ", "9", "0", "7", "Ġapples"]


def test_load_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=str(tmp_path)):
        load_model(tmp_path)


def _teacher_forced_greedy(model, prompt_ids, completion):
    batch = pack([prompt_ids], [completion], pad_id=0)
    return completion_logits(model, batch)[0].argmax(-1).tolist()


def test_greedy_sampling_matches_teacher_forcing_with_left_padding(tiny_model_dir: Path) -> None:
    """Position ids from the attention mask: a left-padded prompt decodes exactly as it would alone."""
    tok, model = load_tokenizer(tiny_model_dir), load_model(tiny_model_dir)
    torch.manual_seed(0)
    with torch.no_grad():  # make the untrained model's argmax less flat
        for p in model.parameters():
            p.mul_(8.0)
    prompts = [format_prompt(p.question) for p in load_task("arith", "test", n=4)]
    out = sample(model, tok, prompts, 1, SamplingConfig(max_new_tokens=12), greedy=True)
    for ids, comp in zip(encode_prompts(tok, prompts), out.tokens, strict=True):
        alone = sample(model, tok, [tok.decode(ids)], 1, SamplingConfig(max_new_tokens=12), greedy=True).tokens[0]
        assert comp == alone
        assert _teacher_forced_greedy(model, ids, comp) == comp


def test_sampling_is_seeded_and_prompt_major(tiny_model_dir: Path) -> None:
    tok, model = load_tokenizer(tiny_model_dir), load_model(tiny_model_dir)
    prompts = [format_prompt(p.question) for p in load_task("arith", "test", n=3)]
    a = sample(model, tok, prompts, 4, SamplingConfig(max_new_tokens=8), seed=3, chunk_size=5)
    b = sample(model, tok, prompts, 4, SamplingConfig(max_new_tokens=8), seed=3)
    c = sample(model, tok, prompts, 4, SamplingConfig(max_new_tokens=8), seed=4)
    assert a.prompt_index == [0] * 4 + [1] * 4 + [2] * 4
    assert a.tokens == b.tokens != c.tokens  # chunking does not change the draws' order
    for toks, trunc in zip(a.tokens, a.truncated, strict=True):
        assert len(toks) <= 8
        assert trunc == (toks[-1] != tok.eos_token_id)


def test_top_p_keeps_the_nucleus() -> None:
    from rlvr.models.sampling import _draw

    logits = torch.log(torch.tensor([[0.6, 0.3, 0.1]]))
    u = torch.rand(2000, generator=torch.Generator().manual_seed(0))
    assert set(_draw(logits.expand(2000, 3), SamplingConfig(top_p=0.5), u).tolist()) == {0}  # 0.6 alone reaches 0.5
    draws = _draw(logits.expand(2000, 3), SamplingConfig(top_p=0.8), u)
    assert set(draws.tolist()) == {0, 1}
    assert abs((draws == 0).float().mean().item() - 2 / 3) < 0.04  # renormalised 0.6 / 0.9
    full = _draw(logits.expand(2000, 3), SamplingConfig(), u)
    freq = torch.bincount(full, minlength=3).float() / 2000
    assert torch.allclose(freq, torch.tensor([0.6, 0.3, 0.1]), atol=0.04)


def test_pack_layout() -> None:
    b = pack([[5, 6, 7], [8]], [[1], [2, 3, 4]], pad_id=0)
    assert b.input_ids.tolist() == [[5, 6, 7, 1, 0, 0], [0, 0, 8, 2, 3, 4]]
    assert b.targets.tolist() == [[1, 0, 0], [2, 3, 4]]
    assert b.mask.tolist() == [[1, 0, 0], [1, 1, 1]]
