"""Strict and loose IFEval scoring of one response: `check_instruction` for one instruction, `check_prompt` for
a prompt's list of them.

Strict: the check on the response as given. Loose (IFEval's definition): the check passes on any of eight
variants of the response: as given, without its first line, without its last line, without both, and each of
those four with every `*` removed. An empty (or whitespace-only) response or variant follows no instruction;
bad arguments, an unknown instruction id and any exception inside a check are fails with the reason, never
passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from rlvr.verify.ifeval.instructions import REGISTRY, Instruction


@dataclass(frozen=True)
class InstructionVerdict:
    strict: bool
    loose: bool
    reason: str


@dataclass(frozen=True)
class PromptVerdict:
    """Prompt-level strict/loose: every instruction followed (IFEval's prompt-level accuracy)."""

    strict: bool
    loose: bool
    instructions: tuple[InstructionVerdict, ...]

    @property
    def strict_share(self) -> float:
        return sum(v.strict for v in self.instructions) / len(self.instructions) if self.instructions else 0.0

    @property
    def loose_share(self) -> float:
        return sum(v.loose for v in self.instructions) / len(self.instructions) if self.instructions else 0.0


def loose_variants(response: str) -> list[str]:
    """IFEval's eight variants, the response itself first."""
    lines = response.split("\n")
    first = "\n".join(lines[1:]).strip()
    last = "\n".join(lines[:-1]).strip()
    both = "\n".join(lines[1:-1]).strip()
    plain = [response, first, last, both]
    return plain + [v.replace("*", "") for v in plain]


def _run(instruction: Instruction, response: str, args: Any, prompt: str) -> tuple[bool, str]:
    if not response.strip():
        return False, "empty response"
    try:
        ok, reason = instruction.check(response, args, prompt)
    except Exception as exc:  # a crash is a fail with its reason, never a pass
        return False, f"check failed: {type(exc).__name__}: {exc}"
    return bool(ok), reason


def check_instruction(
    response: str, instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str
) -> InstructionVerdict:
    """Whether `response` follows one IFEval instruction, strictly and loosely, with the strict check's reason.

    `kwargs` are the instruction's arguments as in IFEval's data (`None` values are dropped, as in the Hugging
    Face copy that lists every argument name); `prompt` is the user prompt (`combination:repeat_prompt` falls
    back on it when `prompt_to_repeat` is absent).

    >>> check_instruction("Hello there. No commas here.", "punctuation:no_comma", {}, "")
    InstructionVerdict(strict=True, loose=True, reason='no comma')
    >>> check_instruction("* Intro\\nP.P.S. bye", "detectable_content:postscript", {"postscript_marker": "P.S."}, "")
    InstructionVerdict(strict=False, loose=False, reason='P.S. missing')
    """
    instruction = REGISTRY.get(instruction_id)
    if instruction is None:
        return InstructionVerdict(False, False, f"unknown instruction {instruction_id!r}")
    if not isinstance(response, str):
        return InstructionVerdict(False, False, f"response is {type(response).__name__}, not text")
    try:
        args = instruction.args.model_validate({k: v for k, v in (kwargs or {}).items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        return InstructionVerdict(False, False, f"bad kwargs: {'.'.join(map(str, first['loc']))}: {first['msg']}")
    strict, reason = _run(instruction, response, args, prompt)
    loose = strict or any(_run(instruction, v, args, prompt)[0] for v in loose_variants(response)[1:])
    return InstructionVerdict(strict, loose, reason)


def check_prompt(
    response: str,
    instruction_ids: Sequence[str],
    kwargs_list: Sequence[Mapping[str, Any] | None] | None,
    prompt: str,
) -> PromptVerdict:
    """Every instruction of a prompt; `kwargs_list` aligned with `instruction_ids` (None: no arguments).

    A prompt without instructions follows nothing (strict and loose False)."""
    kw: Sequence[Mapping[str, Any] | None] = kwargs_list if kwargs_list is not None else [None] * len(instruction_ids)
    if len(kw) != len(instruction_ids):
        bad = InstructionVerdict(False, False, "kwargs list and instruction list differ in length")
        return PromptVerdict(False, False, tuple(bad for _ in instruction_ids))
    verdicts = tuple(check_instruction(response, i, k, prompt) for i, k in zip(instruction_ids, kw, strict=True))
    return PromptVerdict(
        bool(verdicts) and all(v.strict for v in verdicts), bool(verdicts) and all(v.loose for v in verdicts), verdicts
    )
