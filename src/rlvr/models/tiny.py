"""The embedded default model: a tiny Llama built from a config, with a word-level tokenizer.

It is saved with `save_pretrained` and loaded back by path exactly as a real model is, so the whole
pipeline runs the same code on a laptop CPU and on a real checkpoint. The tokenizer keeps words as
single tokens and splits every number into digits (NOTES.md: character tokens made solutions ~2.4x
longer and learning slow). A Llama config, not Qwen2: transformers 5.x rebuilds a `qwen2` folder's
tokenizer as `Qwen2Tokenizer` and loses a custom vocabulary's spaces.

Run `python -m rlvr.models.tiny OUT_DIR` to build an untrained model for the arith task.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["CHAT_TEMPLATE", "TOOL_TOKENS", "TinyConfig", "build_tokenizer", "build_tiny_model", "SPECIAL_TOKENS"]

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]
# Hermes tool-call markers, one token each and not special (a turn's text keeps them when decoded)
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
# The tiny model's chat template: the plain `Q: ... A:` format as turns. An assistant turn ends with
# `</s>` and a newline the model never samples (ChatML's shape); tool results come back inside
# <tool_response>; the tools' schemas are not rendered (a 1M-parameter model learns its one tool's
# call from demonstrations, and the schema would cost ~100 tokens a prompt).
CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{{ m['content'] }}{{ '\\n' }}"
    "{%- elif m['role'] == 'user' -%}Q: {{ m['content'] }}{{ '\\n' }}"
    "{%- elif m['role'] == 'assistant' -%}A:{{ m['content'] }}</s>{{ '\\n' }}"
    "{%- elif m['role'] == 'tool' -%}<tool_response>{{ m['content'] }}</tool_response>{{ '\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}A:{%- endif -%}"
)

# One token per: `<<`, `>>`, `####` (each with an optional leading space), newline, a word with its
# leading space, one digit, one other symbol with its leading space, a run of spaces.
_SPLIT = r" ?<<| ?>>| ?####|\n| ?[A-Za-z]+|\d| ?[^\sA-Za-z\d]| +"


class TinyConfig(BaseModel):
    """Shape of the tiny Llama. The default (~1M parameters) is the one NOTES.md measured."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hidden_size: int = Field(128, ge=1)
    num_layers: int = Field(4, ge=1)
    num_heads: int = Field(4, ge=1)
    intermediate_size: int = Field(512, ge=1)
    max_position_embeddings: int = Field(256, ge=8)

    @model_validator(mode="after")
    def _heads_divide(self) -> TinyConfig:
        if self.hidden_size % self.num_heads or (self.hidden_size // self.num_heads) % 2:
            raise ValueError(
                f"hidden_size {self.hidden_size} must split into num_heads {self.num_heads} heads of an even size"
            )
        return self


def build_tokenizer(texts: Iterable[str], *, chat: bool = False):  # -> transformers.PreTrainedTokenizerFast
    """A word-level, digit-split, byte-level-decoded tokenizer whose vocabulary is `texts`' words.

    All 10 digits and the printable ASCII symbols are always in the vocabulary, so any number and
    any arithmetic can be written even if the training text never used it. `chat` adds
    `CHAT_TEMPLATE` and the tool-call markers (`TOOL_TOKENS`, for environments: docs/environments.md).

    >>> tok = build_tokenizer(["Tom has 12 apples .\\n#### 12"])
    >>> tok.convert_ids_to_tokens(tok(" Tom has 30")["input_ids"])
    ['ĠTom', 'Ġhas', 'Ġ', '3', '0']
    >>> tok.decode(tok("Tom has 30 apples")["input_ids"])
    'Tom has 30 apples'
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    symbols = "".join(chr(c) for c in range(33, 127) if not chr(c).isalnum())
    always = [symbols, " " + " ".join(symbols), "0123456789", "<< >> #### \n  <<  >>  ####"]
    texts = list(texts)
    # every word both with and without a leading space, wherever the corpus happened to use it
    words = sorted({w for t in texts for w in re.findall(r"[A-Za-z]+", t)})
    always += [" " + " ".join(words), "\n".join(words)]
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS, min_frequency=1)
    tok.train_from_iterator([*always, *texts], trainer)
    out = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    if chat:
        out.add_tokens([AddedToken(t, normalized=False) for t in TOOL_TOKENS])
        out.chat_template = CHAT_TEMPLATE
    return out


def build_tiny_model(tokenizer, cfg: TinyConfig | None = None, *, seed: int = 0):  # -> LlamaForCausalLM
    """A randomly initialised Llama sized by `cfg` for `tokenizer`'s vocabulary (seeded)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = cfg or TinyConfig()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


def build_for_task(
    out_dir: str | Path, texts: Iterable[str], cfg: TinyConfig | None = None, seed: int = 0, *, chat: bool = False
) -> Path:
    """Build tokenizer (`chat`: with the chat template and tool markers) and model from task text and
    save both to `out_dir` (HF format)."""
    out = Path(out_dir)
    tok = build_tokenizer(texts, chat=chat)
    model = build_tiny_model(tok, cfg, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    model.save_pretrained(out)
    return out


if __name__ == "__main__":  # pragma: no cover
    from rlvr.tasks import format_prompt, format_target, load_task

    probs = load_task("arith", "train", n=5000)
    print(build_for_task(sys.argv[1], [format_prompt(p.question) + format_target(p) for p in probs]))
