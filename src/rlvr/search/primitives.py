"""Reward primitives: small pure scoring functions, kept as source text, that the offline proposer
composes into candidate modules. Each defines `p_<name>(text, gold, gold_steps, <params>)` (one
completion, its gold answer or None, its gold `Step`s) returning a float in `value_range`, obeys the
sandbox's static rules (imports from `IMPORTS` only), and carries parameter ranges to sample and mutate."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

__all__ = ["IMPORTS", "PRIMITIVES", "Param", "Primitive", "get_primitive"]

# The import block every composed module starts with (all names are used by some primitive).
IMPORTS = "import re\nfrom rlvr.verify import extract_answer, match_steps, parse_number, parse_steps, verify_answer\n"


@dataclass(frozen=True)
class Param:
    """A tunable constant of a primitive: its range, default, and whether it is an integer."""

    name: str
    lo: float
    hi: float
    default: float
    integer: bool = False
    log: bool = False  # drawn log-uniformly: a scale spanning orders of magnitude (lengths in characters)

    def draw(self, u: float) -> float:
        """The value at quantile `u` of the parameter's sampling distribution, clipped."""
        if self.log:
            return self.clip(math.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo))))
        return self.clip(self.lo + u * (self.hi - self.lo))

    def clip(self, value: float) -> float:
        """The value clamped into [lo, hi], rounded to an int or to 3 significant decimals."""
        v = min(self.hi, max(self.lo, value))
        return float(round(v)) if self.integer else round(v, 3)

    def literal(self, value: float) -> str:
        """The value as a Python literal for the generated source."""
        v = self.clip(value)
        return str(int(v)) if self.integer else repr(v)


@dataclass(frozen=True)
class Primitive:
    """One reward primitive: what it measures, its source, its parameters and its value range."""

    name: str
    description: str
    body: str
    params: tuple[Param, ...] = ()
    value_range: tuple[float, float] = (0.0, 1.0)

    def call(self, values: dict[str, float]) -> str:
        """A call expression with explicit parameter literals, e.g. `p_length(text, gold, gold_steps, limit=400)`."""
        args = "".join(f", {p.name}={p.literal(values.get(p.name, p.default))}" for p in self.params)
        return f"p_{self.name}(text, gold, gold_steps{args})"

    def describe(self, values: dict[str, float]) -> str:
        """The description with the parameter values filled in."""
        shown = {p.name: p.literal(values.get(p.name, p.default)) for p in self.params}
        return self.description.format(**shown) if shown else self.description


def _src(body: str) -> str:
    return textwrap.dedent(body).strip() + "\n"


_PRIMITIVES = [
    Primitive(
        "answer_correct",
        "1 when the final answer equals the gold answer (rlvr.verify.verify_answer), else 0",
        _src("""
            def p_answer_correct(text, gold, gold_steps):
                if gold is None:
                    return 0.0
                return 1.0 if verify_answer(text, str(gold)).correct else 0.0
        """),
    ),
    Primitive(
        "format_marker",
        "1 when exactly one line is a GSM8K answer marker `#### N`, else 0",
        _src("""
            def p_format_marker(text, gold, gold_steps):
                found = re.findall(r"(?m)^\\s*####\\s*-?\\$?[0-9][0-9,]*(?:\\.[0-9]+)?\\s*$", text[:20000])
                return 1.0 if len(found) == 1 else 0.0
        """),
    ),
    Primitive(
        "step_count",
        "1 when the number of worked steps is within {tolerance} of the gold step count, decaying to 0",
        _src("""
            def p_step_count(text, gold, gold_steps, tolerance=1):
                want = len(gold_steps or [])
                if want == 0:
                    return 0.0
                miss = max(0, abs(len(parse_steps(text)) - want) - tolerance)
                return max(0.0, 1.0 - miss / want)
        """),
        (Param("tolerance", 0, 3, 1, integer=True),),
    ),
    Primitive(
        "valid_steps",
        "share of worked steps whose arithmetic is correct (0 with fewer than {min_steps} steps)",
        _src("""
            def p_valid_steps(text, gold, gold_steps, min_steps=1):
                steps = parse_steps(text)
                if len(steps) < max(1, min_steps):
                    return 0.0
                return sum(1 for s in steps if s.valid) / len(steps)
        """),
        (Param("min_steps", 1, 3, 1, integer=True),),
    ),
    Primitive(
        "gold_step_match",
        "share of gold steps whose value the completion computes (valid arithmetic required: {require_valid})",
        _src("""
            def p_gold_step_match(text, gold, gold_steps, require_valid=1):
                gold_steps = list(gold_steps or [])
                if not gold_steps:
                    return 0.0
                steps = parse_steps(text)
                hits = match_steps(steps, gold_steps)
                good = [h and (s.valid or not require_valid) for s, h in zip(steps, hits)]
                return min(1.0, sum(1 for g in good if g) / len(gold_steps))
        """),
        (Param("require_valid", 0, 1, 1, integer=True),),
    ),
    Primitive(
        "answer_closeness",
        "partial credit for a near miss: 1 at the gold number, falling to 0 at a relative error of {scale}",
        _src("""
            def p_answer_closeness(text, gold, gold_steps, scale=0.5):
                if gold is None:
                    return 0.0
                answer, reason = extract_answer(text)
                got, want = parse_number(answer) if answer is not None else None, parse_number(str(gold))
                if got is None or want is None:
                    return 0.0
                rel = abs(got - want) / max(1.0, abs(want))
                return max(0.0, 1.0 - rel / scale)
        """),
        (Param("scale", 0.05, 2.0, 0.5),),
    ),
    Primitive(
        "length_penalty",
        "0 up to {limit} characters, then -1 per {scale} characters beyond (floor -1)",
        _src("""
            def p_length_penalty(text, gold, gold_steps, limit=600, scale=600):
                over = max(0, len(text) - limit)
                return -min(1.0, over / max(1, scale))
        """),
        # tiny-model answers run 8-50 characters, a pretrained model's hundreds: both ends must be reachable
        (Param("limit", 16, 2000, 600, integer=True, log=True), Param("scale", 16, 2000, 600, integer=True, log=True)),
        (-1.0, 0.0),
    ),
    Primitive(
        "no_repeats",
        "minus the share of non-empty lines (at least {min_chars} characters) that repeat an earlier line",
        _src("""
            def p_no_repeats(text, gold, gold_steps, min_chars=4):
                lines = [ln.strip() for ln in text[:50000].splitlines()]
                lines = [ln for ln in lines if len(ln) >= min_chars]
                if not lines:
                    return 0.0
                return -(len(lines) - len(set(lines))) / len(lines)
        """),
        (Param("min_chars", 1, 20, 4, integer=True),),
        (-1.0, 0.0),
    ),
    Primitive(
        "answer_is_last_step",
        "1 when the final answer equals the result of the last worked step (self-consistency), else 0",
        _src("""
            def p_answer_is_last_step(text, gold, gold_steps):
                answer, reason = extract_answer(text)
                steps = parse_steps(text)
                if answer is None or not steps:
                    return 0.0
                last = parse_number(steps[-1].result)
                return 1.0 if last is not None and last == parse_number(answer) else 0.0
        """),
    ),
]

PRIMITIVES: dict[str, Primitive] = {p.name: p for p in _PRIMITIVES}


def get_primitive(name: str) -> Primitive:
    """The primitive called `name`; KeyError naming the known ones otherwise."""
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise KeyError(f"unknown primitive {name!r}; known: {', '.join(PRIMITIVES)}") from None
