"""What an IFEval instruction declaration is (`Instruction`, `declare`, `REGISTRY`) and the helpers the
declarations share; the declarations live in `words` (keywords, language, case, length) and `formats`
(content, format, combinations, start/end, punctuation), and `instructions` collects them.

A check is `check(response, args, prompt) -> (followed, reason)` on the response as given (strict scoring;
`rlvr.verify.ifeval.score` runs the loose variants). Each follows IFEval's reference checker
(instructions.py in google-research, copied by lm-eval) except where docs/instructions.md, "Constraint rules",
says otherwise; the differences are marked "rlvr:" below.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

Relation = Annotated[
    Literal["less than", "at least"],
    BeforeValidator(lambda v: " ".join(v.lower().split()) if isinstance(v, str) else v),  # "Less  than" too
]
Check = Callable[[str, Any, str], tuple[bool, str]]


class Args(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


@dataclass(frozen=True)
class Instruction:
    """One instruction type. `group` and `solo` keep generated prompts satisfiable: at most one instruction per
    group (two for `keywords` and `format`), and a `solo` one only beside keywords and language."""

    id: str
    args: type[Args]
    check: Check
    describe: Callable[[Any], str]
    sample: Callable[[random.Random], dict[str, Any]]
    group: str
    solo: bool = False


REGISTRY: dict[str, Instruction] = {}


def declare(instruction: Instruction) -> None:
    REGISTRY[instruction.id] = instruction


def _compare(actual: int, relation: str, n: int, unit: str) -> tuple[bool, str]:
    ok = actual < n if relation == "less than" else actual >= n
    return ok, f"{actual} {unit}, needs {relation} {n}"


def _rel(rng: random.Random) -> Relation:
    return rng.choice(["less than", "at least"])


def _rel_words(relation: str) -> str:
    return "fewer than" if relation == "less than" else "no fewer than"


# Words a generated prompt may ask for or forbid (rlvr's own list).
VOCAB = (
    "balance bridge candle harbor lantern meadow orbit pattern ribbon signal timber velvet whisper anchor breeze "
    "compass crystal echo festival garden horizon journey kettle ladder marble needle ocean pepper quilt river "
    "saddle thunder umbrella village window yellow zebra copper forest island jungle mirror planet rocket shadow "
    "silver sunrise tunnel valley wonder blossom canyon desert engine feather glacier hammer"
).split()
COMMON_LETTERS = "abcdeghiklmnoprstuwy"  # asked for "at least" N times
RARE_LETTERS = "jqxz"  # asked for "less than" N times, so that a real answer can comply
LANGUAGES = {
    "de": "German", "it": "Italian", "pt": "Portuguese", "fi": "Finnish", "sw": "Swahili", "vi": "Vietnamese",
    "ru": "Russian", "bg": "Bulgarian", "ar": "Arabic", "fa": "Persian", "ur": "Urdu", "hi": "Hindi",
    "mr": "Marathi", "ne": "Nepali", "bn": "Bengali", "pa": "Punjabi", "gu": "Gujarati", "ta": "Tamil",
    "te": "Telugu", "kn": "Kannada", "th": "Thai", "ko": "Korean", "es": "Spanish", "fr": "French",
}  # fmt: skip


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
