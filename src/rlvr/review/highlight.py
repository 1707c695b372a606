"""Cut a completion (or a gold solution) into text segments, marking the arithmetic steps in it.

`rlvr.verify.parse_steps` says which steps a text writes but not where, so each step is found again
in the text, in order: its expression as written, then `= result` (or, for a calculator annotation
`<<expr=result>>`, the whole annotation and the number right after it). A step that cannot be found
again is still listed, just not highlighted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from rlvr.tasks import Step
from rlvr.verify import match_steps, parse_steps

__all__ = ["TextView", "annotate"]


class Segment(BaseModel):
    """A piece of the text: `step` is the index (in `TextView.steps`) of the step it shows, None for
    plain text."""

    text: str
    step: int | None


class StepMark(BaseModel):
    """A step the text writes. `kind` is what the page colours: `invalid` (the arithmetic is wrong),
    `gold` (right, and its value is one the gold solution computes), `valid` (right, not in the gold)."""

    expr: str
    result: str
    valid: bool
    matches_gold: bool
    kind: Literal["invalid", "gold", "valid"]


class TextView(BaseModel):
    """A text cut into segments (joined, they give the text back) and the steps they mark."""

    segments: list[Segment]
    steps: list[StepMark]


_NUM = r"[$€£]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
_PLAIN_RHS = re.compile(rf"\s*=\s*[-−]?\s*{_NUM}")
_AFTER_ANNOT = re.compile(_NUM)
_BRIDGE = r"\s*=\s*[$€£]?\Z"  # between `expr` and the annotation that repeats it


def _annotation_span(text: str, at: int, expr: str) -> tuple[int, int]:
    """`<<expr=result>>` at `at`, plus the number written right after it."""
    close = text.find(">>", at)
    if close < 0:
        return at, at + 2 + len(expr)
    m = _AFTER_ANNOT.match(text, close + 2)
    return at, m.end() if m else close + 2


def _find(text: str, expr: str, cursor: int) -> tuple[int, int] | None:
    plain, annot = text.find(expr, cursor), text.find(f"<<{expr}=", cursor)
    plain_rhs = _PLAIN_RHS.match(text, plain + len(expr)) if plain >= 0 else None
    if annot >= 0:
        start, end = _annotation_span(text, annot, expr)
        lhs = re.search(re.escape(expr) + _BRIDGE, text[cursor:annot])  # GSM8K: `a*b=<<a*b=c>>c`
        start = cursor + lhs.start() if lhs else start
        if plain_rhs is None or plain >= start:
            return start, end
    if plain < 0:
        return None
    return plain, plain_rhs.end() if plain_rhs else plain + len(expr)


def _spans(text: str, exprs: Sequence[str]) -> list[tuple[int, int] | None]:
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for expr in exprs:
        span = _find(text, expr, cursor) if expr else None
        spans.append(span)
        if span is not None:
            cursor = span[1]
    return spans


def _segments(text: str, spans: Sequence[tuple[int, int] | None]) -> list[Segment]:
    segments: list[Segment] = []
    pos = 0
    for k, span in enumerate(spans):
        if span is None:
            continue
        start, end = span
        if start > pos:
            segments.append(Segment(text=text[pos:start], step=None))
        segments.append(Segment(text=text[start:end], step=k))
        pos = end
    if pos < len(text):
        segments.append(Segment(text=text[pos:], step=None))
    return segments


def annotate(text: str, gold_steps: Sequence[Step] | None = None) -> TextView:
    """The text's segments and steps (see `StepMark` for each step's `kind`). Without `gold_steps`,
    `matches_gold` is False and right steps are `valid`.

    >>> out = annotate("So 3 + 4 = 7 and 7 * 2 = 15.", [Step("3+4", "7")])
    >>> [(s.text, s.step) for s in out.segments]
    [('So ', None), ('3 + 4 = 7', 0), (' and ', None), ('7 * 2 = 15', 1), ('.', None)]
    >>> [s.kind for s in out.steps]
    ['gold', 'invalid']
    >>> [s.text for s in annotate("11*2=<<11*2=22>>22 and 5 - 1 = <<5-1=4>>4").segments]
    ['11*2=<<11*2=22>>22', ' and 5 - 1 = ', '<<5-1=4>>4']
    """
    parsed = parse_steps(text)
    matched = match_steps(parsed, gold_steps) if gold_steps else [False] * len(parsed)
    steps = [
        StepMark(
            expr=p.expr,
            result=p.result,
            valid=p.valid,
            matches_gold=m,
            kind="invalid" if not p.valid else "gold" if m else "valid",
        )
        for p, m in zip(parsed, matched, strict=True)
    ]
    return TextView(segments=_segments(text, _spans(text, [p.expr for p in parsed])), steps=steps)
