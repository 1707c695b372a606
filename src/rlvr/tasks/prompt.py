"""Prompt formats (`plain`, `chat`, `r1`, `auto`): where a problem's prompt ends and its completion
begins. SFT, GRPO rollouts, the update, evaluation, search screening and review all build prompts
through one `PromptFormatter`, so they cut prompt and completion at the same token; what each format
renders: docs/real-models.md, "Prompt formats and sampling".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rlvr.tasks.problem import Problem

__all__ = [
    "PROMPT_TEMPLATE",
    "R1_SYSTEM_PROMPT",
    "PromptFormat",
    "PromptFormatError",
    "PromptFormatter",
    "format_prompt",
    "format_target",
    "refuse_unused_system_prompt",
    "resolve_format",
]

PromptFormat = Literal["auto", "plain", "chat", "r1"]
PROMPT_TEMPLATE = "Q: {question}\nA:"
# DeepSeek-R1-Zero's template (DeepSeek-AI 2025, table 1), as open-r1 uses it for its system prompt.
R1_SYSTEM_PROMPT = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
    "The assistant first thinks about the reasoning process in the mind and then provides the user with the "
    "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
    "respectively, i.e., <think> reasoning process here </think> <answer> answer here </answer>."
)
_SENTINEL = "\x00rlvr-completion\x00"


class PromptFormatError(ValueError):
    """A prompt format that does not fit the tokenizer (e.g. `chat` without a chat template)."""


def format_prompt(question: str) -> str:
    """The `plain` prompt for a question.

    >>> format_prompt("What is 2 plus 3?")
    'Q: What is 2 plus 3?\\nA:'
    """
    return PROMPT_TEMPLATE.format(question=question.strip())


def format_target(problem: Problem) -> str:
    """The `plain` SFT target for a problem: its gold solution, starting with a space.

    >>> from rlvr.tasks.problem import Problem
    >>> format_target(Problem("p", "q", "7", [], "t", solution="<<3+4=7>>7\\n#### 7"))
    ' <<3+4=7>>7\\n#### 7'
    """
    return " " + problem.solution.strip()


def resolve_format(fmt: PromptFormat, tokenizer: Any) -> Literal["plain", "chat", "r1"]:
    """`auto` -> `chat` when the tokenizer has a chat template, else `plain`; `chat` without a template
    is a PromptFormatError."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if fmt == "auto":
        return "chat" if has_template else "plain"
    if fmt == "chat" and not has_template:
        raise PromptFormatError("prompt_format 'chat': the tokenizer has no chat template; use 'plain' or 'r1'")
    return fmt


def refuse_unused_system_prompt(
    fmt: Literal["plain", "chat", "r1"], requested: PromptFormat, system: str | None
) -> None:
    """A `system_prompt` under the `plain` format (given, or what `auto` resolved to) is refused with a
    PromptFormatError: `Q: ... A:` has no place for a system message, and a setting that silently does
    nothing would mislead whoever reads the run's config. (An environment's conversations are chats and
    take it; their commands do not call this.)"""
    if fmt != "plain" or system is None:
        return
    how = "'plain'" if requested == "plain" else f"{requested!r} (here 'plain': the tokenizer has no chat template)"
    raise PromptFormatError(
        f"field 'sampling.system_prompt': prompt_format {how} has no system message, so it would be ignored; "
        "use prompt_format 'chat' or 'r1', or drop system_prompt"
    )


def _r1_target(problem: Problem) -> str:
    """A gold solution in R1's shape: the worked steps in <think>, the final answer in <answer>."""
    reasoning = problem.solution.rpartition("####")[0].strip() or problem.solution.strip()
    return f"<think>\n{reasoning}\n</think>\n<answer>{problem.answer}</answer>"


@dataclass(frozen=True)
class PromptFormatter:
    """Prompts and SFT targets of one format for one tokenizer (`fmt` already resolved).

    `prompt(p)` is the text the model sees; `target(p)` the SFT target text; `end_ids` the token ids
    that end a completion (eos, and the chat template's end-of-turn token); `end_id` is the one SFT
    appends to a target. Encode prompts and targets with `add_special_tokens=False`.
    """

    tokenizer: Any
    fmt: Literal["plain", "chat", "r1"] = "plain"
    system_prompt: str | None = None
    _chat: bool = field(init=False, repr=False)
    _turn_end: int | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_chat", self.fmt == "chat" or (self.fmt == "r1" and self._has_template()))
        object.__setattr__(self, "_turn_end", _turn_end(self.tokenizer) if self._has_template() else None)

    @classmethod
    def create(cls, tokenizer: Any, fmt: PromptFormat = "auto", system_prompt: str | None = None) -> PromptFormatter:
        return cls(tokenizer, resolve_format(fmt, tokenizer), system_prompt)

    def _has_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def messages(self, problem: Problem) -> list[dict[str, str]]:
        """The conversation up to the assistant's turn (the problem's own messages when it has any)."""
        system = self.system_prompt if self.fmt != "r1" else (self.system_prompt or R1_SYSTEM_PROMPT)
        msgs = (
            [dict(m) for m in problem.messages] if problem.messages else [{"role": "user", "content": problem.question}]
        )
        if system is not None and msgs[0].get("role") != "system":
            msgs = [{"role": "system", "content": system}, *msgs]
        return msgs

    def prompt(self, problem: Problem) -> str:
        if self._chat:
            text = self.tokenizer.apply_chat_template(
                self.messages(problem), tokenize=False, add_generation_prompt=True
            )
            return str(text)
        if self.fmt == "r1":
            system = self.system_prompt or R1_SYSTEM_PROMPT
            return f"{system} User: {problem.question.strip()}\nAssistant:"
        return format_prompt(problem.question)

    def target(self, problem: Problem) -> str:
        """The SFT target text (without `end_id`, which the caller appends as a token)."""
        if self.fmt == "r1":
            return _r1_target(problem) if self._chat else " " + _r1_target(problem)
        return problem.solution.strip() if self._chat else format_target(problem)

    @property
    def end_id(self) -> int:
        """The token that ends an assistant turn: the template's end-of-turn token, else eos."""
        if self._chat and self._turn_end is not None:
            return self._turn_end
        return int(self.tokenizer.eos_token_id)

    @property
    def end_ids(self) -> frozenset[int]:
        """Every token that ends a completion: eos and the chat template's end-of-turn token."""
        ids = {int(self.tokenizer.eos_token_id)}
        if self._turn_end is not None:
            ids.add(self._turn_end)
        return frozenset(ids)


def _turn_end(tokenizer: Any) -> int | None:
    """The first special token a chat template writes after an assistant message (e.g. <|im_end|>)."""
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _SENTINEL}]
    try:
        text = str(tokenizer.apply_chat_template(msgs, tokenize=False))
    except Exception:  # a template that cannot render an assistant turn: eos alone ends completions
        return None
    special = set(tokenizer.all_special_ids)
    for tid in tokenizer(text.partition(_SENTINEL)[2], add_special_tokens=False)["input_ids"]:
        if tid in special:
            return int(tid)
    return None
