"""Prompt formats and the shared sampling config: on the embedded tokenizer (no chat template), on a
tokenizer given a ChatML template in the test, with conversational (TRL-format) data, and the
example configs. The real SmolLM2 tokenizer is covered in test_real_model.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import ConfigError, SamplingConfig, load_config
from rlvr.models.load import load_tokenizer
from rlvr.runs import read_manifest
from rlvr.tasks import (
    PromptFormatError,
    PromptFormatter,
    format_prompt,
    format_target,
    load_task,
    refuse_unused_system_prompt,
)
from rlvr.tasks.gsm8k import DataError, load_jsonl

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture
def chat_tok(tiny_model_dir: Path):
    tok = load_tokenizer(tiny_model_dir)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHATML
    return tok


def test_auto_is_plain_without_a_template_and_chat_is_refused(tiny_model_dir: Path) -> None:
    tok = load_tokenizer(tiny_model_dir)
    fmt = PromptFormatter.create(tok)
    p = load_task("arith", "test", n=1)[0]
    assert fmt.fmt == "plain" and fmt.prompt(p) == format_prompt(p.question) and fmt.target(p) == format_target(p)
    assert fmt.end_ids == {tok.eos_token_id} and fmt.end_id == tok.eos_token_id
    with pytest.raises(PromptFormatError, match="no chat template"):
        PromptFormatter.create(tok, "chat")
    r1 = PromptFormatter.create(tok, "r1")  # R1-Zero's plain text template
    assert r1.prompt(p).endswith(f"User: {p.question}\nAssistant:") and "<think>" in r1.prompt(p)
    assert r1.target(p).startswith(" <think>\n") and r1.target(p).endswith(f"<answer>{p.answer}</answer>")


def test_a_system_prompt_is_refused_only_where_plain_has_no_place_for_it() -> None:
    refuse_unused_system_prompt("plain", "plain", None)  # nothing to refuse
    for fmt in ("chat", "r1"):
        refuse_unused_system_prompt(fmt, "auto", "Be brief.")  # chat and r1 carry it
    with pytest.raises(PromptFormatError, match="prompt_format 'plain' has no system message"):
        refuse_unused_system_prompt("plain", "plain", "Be brief.")
    with pytest.raises(PromptFormatError, match="'auto' \\(here 'plain': the tokenizer has no chat template\\)"):
        refuse_unused_system_prompt("plain", "auto", "Be brief.")


def test_chat_format_renders_the_template_and_stops_at_the_turn_end(chat_tok) -> None:
    p = load_task("arith", "test", n=1)[0]
    fmt = PromptFormatter.create(chat_tok)
    im_end = chat_tok.convert_tokens_to_ids("<|im_end|>")
    assert fmt.fmt == "chat" and fmt.prompt(p) == f"<|im_start|>user\n{p.question}<|im_end|>\n<|im_start|>assistant\n"
    assert fmt.end_id == im_end and fmt.end_ids == {im_end, chat_tok.eos_token_id}
    sys_fmt = PromptFormatter.create(chat_tok, "chat", "Be brief.")
    assert sys_fmt.prompt(p).startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")
    r1 = PromptFormatter.create(chat_tok, "r1")
    assert r1.prompt(p).startswith("<|im_start|>system\nA conversation between User and Assistant.")
    assert r1.target(p).startswith("<think>\n") and r1.end_id == im_end


def test_conversational_jsonl_loads_with_messages(tmp_path: Path, chat_tok) -> None:
    f = tmp_path / "conv.jsonl"
    rows = [
        {"prompt": [{"role": "system", "content": "Answer as #### N."}, {"role": "user", "content": "What is 2+3?"}],
         "answer": 5},
        {"prompt": "What is 4+4?", "answer": "4+4=<<4+4=8>>8\n#### 8"},
    ]  # fmt: skip
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    a, b = load_jsonl(f)
    assert a.question == "What is 2+3?" and a.answer == "5" and a.messages is not None and len(a.messages) == 2
    assert b.messages is None and b.answer == "8" and [s.result for s in b.steps] == ["8"]
    fmt = PromptFormatter.create(chat_tok, "chat", "ignored: the data has its own system message")
    assert fmt.prompt(a).startswith("<|im_start|>system\nAnswer as #### N.<|im_end|>\n<|im_start|>user\nWhat is 2+3?")
    for bad, field in (({"prompt": [{"role": "user"}], "answer": "1"}, "prompt"), ({"prompt": "q"}, "answer")):
        f.write_text(json.dumps(bad) + "\n")
        with pytest.raises(DataError, match=rf"conv.jsonl:1: field '{field}'"):
            load_jsonl(f)


def test_rewards_get_messages_when_the_prompt_was_conversational(tmp_path: Path, tiny_model_dir: Path) -> None:
    """As TRL passes them: completions as [{'role': 'assistant', 'content': ...}], prompts as the messages."""
    from rlvr.grpo.config import TrainConfig
    from rlvr.grpo.trainer import GRPOTrainer

    f = tmp_path / "conv.jsonl"
    probs = load_task("arith", "train", n=4)
    f.write_text("".join(json.dumps({"prompt": [{"role": "user", "content": p.question}], "answer": p.answer}) + "\n"
                         for p in probs))  # fmt: skip
    seen: dict = {}

    def spy(completions, prompts, **kw):
        seen.update(completions=completions, prompts=prompts)
        return [0.0] * len(completions)

    cfg = load_config(TrainConfig, None, {
        "model": str(tiny_model_dir), "task": str(f), "steps": 1, "prompts_per_step": 2, "group_size": 2,
        "sampling": {"max_new_tokens": 4, "prompt_format": "plain"}, "eval_every": 0, "save_every": 0, "threads": 1,
        "out": str(tmp_path / "run"),
    })  # fmt: skip
    GRPOTrainer(cfg, extra_rewards={"spy": spy}).train()
    assert all(isinstance(c, list) and c[0]["role"] == "assistant" for c in seen["completions"])
    assert seen["prompts"][0][0] == {"role": "user", "content": seen["prompts"][0][0]["content"]}
    rows = [json.loads(x) for x in (tmp_path / "run" / "samples" / "train.jsonl").read_text().splitlines()]
    assert all(isinstance(r["completion"], str) for r in rows)


def test_sampling_config_is_one_sub_config_and_old_keys_say_where_they_went(tmp_path: Path) -> None:
    from rlvr.evaluate.evaluation import EvalConfig
    from rlvr.grpo.config import TrainConfig
    from rlvr.sft import SFTConfig

    for model in (TrainConfig, EvalConfig, SFTConfig):
        assert model.model_fields["sampling"].annotation is SamplingConfig
    f = tmp_path / "run.yaml"
    f.write_text("steps: 3\nmax_new_tokens: 128\n")
    with pytest.raises(ConfigError, match="'max_new_tokens' is now 'sampling.max_new_tokens'"):
        load_config(TrainConfig, f)
    f.write_text("sampling:\n  stop: ['']\n")
    with pytest.raises(ConfigError, match="stop strings must be non-empty"):
        load_config(TrainConfig, f)
    cfg = load_config(EvalConfig, None, {"model": "m", "sampling.top_k": 5, "sampling.prompt_format": "r1"})
    assert cfg.sampling.top_k == 5 and cfg.sampling.prompt_format == "r1"


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[2].glob("examples/*.yaml")), ids=lambda p: p.name)
def test_example_configs_load(path: Path) -> None:
    from rlvr.evaluate.evaluation import EvalConfig
    from rlvr.grpo.config import TrainConfig
    from rlvr.search.config import SearchConfig
    from rlvr.sft import SFTConfig

    kind = (
        SearchConfig
        if "search" in path.name
        else EvalConfig
        if path.stem.endswith("-eval")
        else SFTConfig
        if path.stem.endswith("-sft")
        else TrainConfig
    )
    load_config(kind, path, {"model": "m"} if kind is EvalConfig else None)


def test_top_k_and_stop_strings_in_the_sampler(tiny_model_dir: Path) -> None:
    import torch

    from rlvr.models.load import load_model
    from rlvr.models.sampling import _draw, sample

    logits = torch.tensor([[3.0, 2.0, 1.0, 0.0]])
    draws = {
        int(_draw(logits, SamplingConfig(top_k=2), torch.tensor([u]))) for u in torch.linspace(0, 0.999, 50).tolist()
    }
    assert draws == {0, 1}
    tok, model = load_tokenizer(tiny_model_dir), load_model(tiny_model_dir)
    prompts = [format_prompt(p.question) for p in load_task("arith", "test", n=3)]
    full = sample(model, tok, prompts, 1, SamplingConfig(max_new_tokens=12), greedy=True)
    stop = full.texts[0][2:5]
    assert stop.strip()
    cut = sample(model, tok, prompts, 1, SamplingConfig(max_new_tokens=12, stop=[stop]), greedy=True)
    assert stop in cut.texts[0] and not cut.truncated[0] and len(cut.tokens[0]) < len(full.tokens[0])
    for a, b in zip(full.tokens, cut.tokens, strict=True):
        assert a[: len(b)] == b


def test_over_long_prompts_are_refused_by_eval_and_left_out_by_train(tmp_path: Path, tiny_model_dir: Path) -> None:
    """An 80 KB question once filled 24 GB in eval: prompts over the model's context less
    max_new_tokens (or sampling.max_prompt_tokens) are refused with their ids by eval, and left out,
    counted and named by train; nothing is truncated silently."""
    from rlvr.evaluate.evaluation import EvalConfig, run_eval
    from rlvr.grpo.config import TrainConfig
    from rlvr.grpo.trainer import GRPOTrainer

    probs = load_task("arith", "train", n=6)
    rows = [{"id": p.id, "question": p.question, "answer": p.solution} for p in probs]
    rows[2]["question"] = " ".join(["Tom has 3 apples ."] * 4000)  # ~80 KB
    f = tmp_path / "long.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = load_config(EvalConfig, None, {"model": str(tiny_model_dir), "task": str(f), "split": "test",
                                         "out": str(tmp_path / "ev"), "threads": 1})  # fmt: skip
    with pytest.raises(DataError, match=rf"1 prompts are longer than 96 tokens \({probs[2].id}\)"):
        run_eval(cfg)
    assert not (tmp_path / "ev").exists()
    tcfg = load_config(TrainConfig, None, {
        "model": str(tiny_model_dir), "task": str(f), "steps": 1, "prompts_per_step": 2, "group_size": 2,
        "sampling": {"max_new_tokens": 4}, "eval_every": 0, "save_every": 0, "threads": 1, "out": str(tmp_path / "t"),
    })  # fmt: skip
    with pytest.warns(UserWarning, match="1 training prompts are longer than 156 tokens"):
        tr = GRPOTrainer(tcfg)
    assert len(tr.problems) == 5 and tr.skipped_long == [probs[2].id]
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["data"]["train"]["skipped_long_prompts"] == [probs[2].id]
    assert read_manifest(tr.run.path).data["train"].skipped_long_prompts == [probs[2].id]
