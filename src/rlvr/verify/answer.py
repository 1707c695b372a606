"""The final-answer verifier: `verify_answer(completion, gold) -> Verdict(correct, parsed, reason)`,
and `extract_answer`, the same extractor for majority voting. The rules (markers, conflicts, hedges,
the last-number rule, number notation, arithmetic) and their cost: docs/rewards.md."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal, get_args

from rlvr.verify.numbers import (
    HEDGED,
    MAX_REGION,
    NO_NUMBER,
    OK,
    Reading,
    Token,
    format_number,
    has_non_ascii_digit,
    normalise,
    parse_number,
    read_number,
    starts_with_number,
    tokens,
)

__all__ = [
    "MAX_MARKERS",
    "STATUSES",
    "Status",
    "UNSCORED",
    "Verdict",
    "extract_answer",
    "parse_number",
    "verify_answer",
]

MAX_MARKERS = 64  # more answer markers than this in one completion is marker spam, not an answer

# One regex per marker kind, each starting with a literal so the scan over a long completion is fast
# (a single alternation of all kinds is ten times slower); `_markers` merges them in text order.
# Each kind comes with a substring it must contain (in the lower-cased text for "answer"), so its
# regex is skipped cheaply on the many completions without it.
_MARKERS = {
    "hash": ("####", re.compile(r"####+")),
    "box": ("\\", re.compile(r"\\(?:boxed|fbox)\s*\{")),
    "tag": ("<", re.compile(r"<(?P<tagname>(?i:solution|answer))\s*>")),
    "answer": (
        "nswer",
        re.compile(
            r"[aA][nN][sS][wW][eE][rR](?:[sS]?(?:\*\*|\s){0,3}:(?:\*\*)?|\s+[iI][sS]\b:?|[sS]\s+[aA][rR][eE]\b:?)"
        ),
    ),
    "qa": ("A:", re.compile(r"\n[ \t]*(?:\*\*)?A:(?:\*\*)?")),
}
_QA_AT_START = re.compile(r"[ \t]*(?:\*\*)?A:(?:\*\*)?")
_LEAD = re.compile(r"[ \t\r\n*:]*")
# Up to a newline or a sentence-ending . ! ? (the dot of `Rs.` ends no sentence).
_SENTENCE = re.compile(r"(?:[^\n.!?]|[.!?](?!\s|$)|(?<=Rs)\.)*")
_MATH_CLOSE = {"\\[": "\\]", "\\(": "\\)", "$$": "$$"}  # display math, which may span lines
# After a marker's region, `or` and another number continue it into a hedge: `\boxed{18} or 19`,
# `The answer is 18. Or 19.`, `#### 18` with `or 19` on the next line.
_OR_AFTER = re.compile(r"[\s.,;:!?)\]}$*]{0,8}\b(?i:or)\s+(?i:(?:maybe|perhaps|possibly)\s+)?")
_CLOSE_TAG = {"solution": re.compile(r"(?i)</\s*solution\s*>"), "answer": re.compile(r"(?i)</\s*answer\s*>")}
_DIGIT = re.compile(r"\d")  # any Unicode decimal digit, so non-ASCII answers are seen (and rejected)
_HEDGE_GAP = re.compile(
    r"(?i)\s*(?:[a-z%]+\s*){0,2}?(?:[,;]\s*(?:or\b|and\b)?|or|to|-|~|and)\s*(?:maybe\s+|perhaps\s+)?"
)
_BETWEEN = re.compile(r"(?i)\bbetween\s*$")
_NUMBER_CHARS = re.compile(r"[\d,.]*")
_WINDOW = 4096  # the no-marker path reads the text backwards in windows of this size


Status = Literal["correct", "wrong", "unparseable_gold", "unparseable_answer", "timeout", "infra_error"]
STATUSES: tuple[Status, ...] = get_args(Status)
UNSCORED: frozenset[str] = frozenset({"timeout", "infra_error"})  # no verdict was reached: reward None


@dataclass(frozen=True)
class Verdict:
    """The verifier's decision on one completion: `parsed` is the final answer in canonical form ("18",
    "-3", "2.5", "7/3") or None when no single answer could be extracted; `reason` is a short phrase
    ("correct", "wrong value", "hedged answer", ...; the list is in docs/rewards.md).

    `status` is one of `STATUSES`, the class the reward, the metrics and the audit read: left out, it
    is "correct" or "wrong" (an unparsed answer: "unparseable_answer"). A verdict whose status is in
    `UNSCORED` (the verifier ran out of time, or its infrastructure failed) is not a judgement of the
    completion: its reward is None, never 0."""

    correct: bool
    parsed: str | None
    reason: str
    status: Status = field(default=None, repr=False)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if self.status is None:
            derived = "correct" if self.correct else ("wrong" if self.parsed is not None else "unparseable_answer")
            object.__setattr__(self, "status", derived)
        elif self.status not in STATUSES:
            raise ValueError(f"unknown verdict status {self.status!r}: use one of {', '.join(STATUSES)}")
        if self.correct != (self.status == "correct"):
            raise ValueError(f"a verdict with status {self.status!r} cannot have correct={self.correct}")

    @property
    def scored(self) -> bool:
        """Whether the verifier reached a judgement (False for a timeout or an infrastructure error)."""
        return self.status not in UNSCORED


def verify_answer(completion: str, gold: str) -> Verdict:
    """Whether a completion's final answer equals the gold answer exactly (rules: docs/rewards.md).

    >>> verify_answer("She makes 9 * 2 = $18 a day.\\n#### 18", "18")
    Verdict(correct=True, parsed='18', reason='correct')
    >>> verify_answer("The answer is $1,000.00.", "1,000")
    Verdict(correct=True, parsed='1000', reason='correct')
    >>> verify_answer("#### 18\\nAnswer: 19", "18")
    Verdict(correct=False, parsed=None, reason='conflicting marked answers')
    >>> verify_answer("Answer: 18 or 19", "18")
    Verdict(correct=False, parsed=None, reason='hedged answer')
    """
    gold_value = _gold_value(gold)
    if gold_value is None:
        return Verdict(False, None, "invalid gold", "unparseable_gold")
    value, reason = _extract(completion)
    if value is None:
        return Verdict(False, None, reason)
    correct = value == gold_value
    return Verdict(correct, format_number(value), "correct" if correct else "wrong value")


@functools.lru_cache(maxsize=4096)
def _gold_value(gold: str) -> Fraction | None:
    """`parse_number` of a gold, memoised: a GRPO group verifies many completions against one gold."""
    return parse_number(gold)


def extract_answer(completion: str) -> tuple[str | None, str]:
    """The canonical final answer of a completion and "ok", or None and the reason there is none.

    Majority voting and the verifier share this extractor, so a vote counts exactly what is scored.

    >>> extract_answer("so 36/2 gives \\\\boxed{18}")
    ('18', 'ok')
    >>> extract_answer("<think>...</think><solution></solution>")
    (None, 'marker without number')
    >>> extract_answer("")
    (None, 'no answer')
    """
    value, reason = _extract(completion)
    return (None, reason) if value is None else (format_number(value), OK)


def _markers(text: str) -> list[tuple[str, re.Match[str]]] | None:
    """All answer markers in text order, or None when there are more than `MAX_MARKERS`."""
    found: list[tuple[int, str, re.Match[str]]] = []
    first = _QA_AT_START.match(text)
    if first is not None:
        found.append((0, "qa", first))
    lower = text.lower()
    for kind, (needle, pattern) in _MARKERS.items():
        if needle not in (lower if kind == "answer" else text):
            continue
        for m in pattern.finditer(text):
            start = m.start()
            if kind == "answer" and start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue  # "reanswer:" is not a marker
            found.append((start, kind, m))
            if len(found) > MAX_MARKERS:
                return None
    if len(found) > 1:
        found.sort(key=lambda marker: marker[0])
    return [(kind, m) for _, kind, m in found]


def _extract(text: str) -> tuple[Fraction | None, str]:
    markers = _markers(text)
    if markers is None:
        return None, "too many marked answers"
    if not markers:
        return _last_number(text)
    readings: list[tuple[str, Reading]] = []
    for i, (kind, m) in enumerate(markers):
        stop = markers[i + 1][1].start() if i + 1 < len(markers) else len(text)
        reading = _read_marker(text, kind, m, stop)
        if reading.reason != NO_NUMBER:
            readings.append((kind, reading))
    if not readings:
        return None, "marker without number"
    final_kind, final = readings[-1]
    if final.value is None:
        return None, final.reason
    for kind, reading in readings[:-1]:
        if reading.value is None:
            return None, reading.reason
        if reading.value != final.value:
            both_boxed = kind == final_kind == "box"
            return None, "conflicting boxes" if both_boxed else "conflicting marked answers"
    return final.value, OK


def _read_marker(text: str, kind: str, m: re.Match[str], stop: int) -> Reading:
    """Read the value a marker of `kind` holds; `stop` is where the next marker starts."""
    end = m.end()
    if kind == "box":
        region = _braced(text, end)
        after = end + len(region) + 1
    elif kind == "tag":
        window = text[end : end + MAX_REGION + 1]
        close = _CLOSE_TAG[m["tagname"].lower()].search(window)
        if close is None:
            region, after = _sentence(text, end, stop)
        elif end + close.start() > stop:  # a marker inside the tag answers for it
            return Reading(None, NO_NUMBER)
        else:
            region, after = window[: close.start()], end + close.end()
    else:
        region, after = _sentence(text, end, stop)
        if kind in ("hash", "qa") and not (region[:1].isdecimal() or starts_with_number(normalise(region))):
            return Reading(None, NO_NUMBER)
    reading = read_number(region)
    if reading.value is not None and _or_after(text, after, stop, reading.value):
        return Reading(None, HEDGED)
    return reading


def _or_after(text: str, pos: int, stop: int, value: Fraction) -> bool:
    """Whether the text after a marker's region goes on with `or` and a different number."""
    m = _OR_AFTER.match(text, pos, stop)
    if m is None:
        return False
    rest = normalise(text[m.end() : min(stop, m.end() + 64)])
    if not starts_with_number(rest):
        return False
    found = tokens(rest)
    return bool(found) and found[0].value != value


def _braced(text: str, start: int) -> str:
    """The content of a brace group opened just before `start`, cut at `MAX_REGION` characters."""
    depth = 1
    limit = min(len(text), start + MAX_REGION + 1)  # one more, so a reader sees a number cut short
    for i in range(start, limit):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:limit]


def _sentence(text: str, start: int, stop: int) -> tuple[str, int]:
    """The answer sentence after a phrase marker and where it ends: to the end of its line or
    sentence, before `stop`.

    A marker that ends its line answers on the next non-blank one (`The answer is:\\n\\n18`). Display
    math that opens the answer (`\\[`, `\\(`, `$$`) is read to its closing delimiter, across lines.
    """
    lead = _LEAD.match(text, start, min(stop, start + MAX_REGION))
    i = lead.end() if lead else start
    limit = min(stop, i + MAX_REGION + 1)
    j = i
    closer = _MATH_CLOSE.get(text[i : i + 2])
    if closer is not None:
        close = text.find(closer, i + 2, limit)
        if close >= 0:
            j = close + 2
    m = _SENTENCE.match(text, j, limit)
    end = m.end() if m else j
    return text[i:end], end


def _last_number(text: str) -> tuple[Fraction | None, str]:
    """The no-marker rule: the last number in the text, unless a hedge leads into it."""
    pos = _last_digit(text)
    if pos is None:  # no digits at all: a number word near the end may still answer
        norm = normalise(text[-MAX_REGION:])
        found = tokens(norm)
    else:
        if not text[pos].isascii():
            return None, "non-ascii digits"
        start = max(0, pos + 8 - MAX_REGION, text.rfind("\n", max(0, pos - MAX_REGION), pos) + 1)
        if start > 0 and text[start - 1].isdecimal() and _NUMBER_CHARS.fullmatch(text, start, pos + 1):
            return None, "non-finite"  # the last number is longer than we read
        segment = text[start : pos + 8]
        if has_non_ascii_digit(segment[-40:]):  # the last number's other digits
            return None, "non-ascii digits"
        norm = normalise(segment)
        found = tokens(norm, words=False)
    if not found:  # no number, or the digit sat inside something that is not one (e.g. "x2")
        return None, "no answer"
    last = found[-1]
    if isinstance(last.value, str):
        return None, "non-finite"
    if len(found) > 1 and _hedged_into(norm, found[-2].end, last):
        return None, "hedged answer"
    return last.value, OK


def _hedged_into(norm: str, prev_end: int, last: Token) -> bool:
    """Whether the text between the previous number and the last one is a hedge (`or`, `,`, `;`,
    `to`, ...), including the end of a list (`17, 18, or 19`, `17, 18, and 19`)."""
    gap = norm[prev_end : last.start]
    if last.neg and not gap.strip():  # "18 -19": a range written with a sign
        return True
    m = _HEDGE_GAP.fullmatch(gap)
    if m is None:
        return False
    words = gap.strip().lower()
    if words.endswith("and") and not words[:-3].rstrip().endswith((",", ";")):
        before = norm[:prev_end].rstrip("0123456789,. ")  # a bare "and" hedges only in "between 18 and 19"
        return _BETWEEN.search(before) is not None
    return True


def _last_digit(text: str) -> int | None:
    """Index of the last decimal digit in `text` (any script), scanning backwards in windows."""
    end = len(text)
    while end > 0:
        start = max(0, end - _WINDOW)
        m = _DIGIT.search(text[start:end][::-1])
        if m is not None:
            return end - 1 - m.start()
        end = start
    return None
