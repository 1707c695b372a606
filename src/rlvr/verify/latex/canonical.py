"""Canonicalise a LaTeX answer string before it is tokenized: layout, wrappers, units, degrees, percent,
currency and thousands separators removed; repeating decimals, e-notation, `{a \\over b}`, unicode and
hedge words (`or`, `and`) rewritten. Pure regex work over at most `parse.MAX_ANSWER` characters."""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["NOT_A_UNIT", "canonical"]

_SEP = r"(?:,\\!\s*|\{,\}|\\,\s*|\\!\s*|\\ |~| (?=[0-9]{3}(?![0-9]))|,(?=[0-9]{3}(?![0-9])))"
_THOUSANDS = re.compile(r"(?<![0-9.])[0-9]{1,3}(?:" + _SEP + r"[0-9]{3}(?![0-9]))+(?!\.[0-9]*,)")
_UNIT_WORDS = (
    "units?|square units|sq units|cm|centimeters?|m|meters?|km|kilometers?|mm|inch(?:es)?|in|feet|foot|ft|yards?"
    "|miles?|mph|seconds?|sec|s|minutes?|min|hours?|hrs?|days?|weeks?|months?|years?|degrees?|deg|cents?|dollars?"
    "|pounds?|lbs?|ounces?|oz|grams?|g|kg|liters?|l|ml|gallons?|people|students|ways|points|sq\\.? ?(?:ft|in|cm|m)"
)
_UNIT_TEXT = re.compile(
    r"\s*\\(?:text|mbox|mathrm|textrm|textnormal)\s*\{\s*(?:" + _UNIT_WORDS + r")\s*\}(?:\s*\^\s*\{?\s*[23]\s*\}?)?\s*$"
)
NOT_A_UNIT = frozenset(
    "or and not no maybe perhaps possibly either wrong incorrect false true approximately about roughly nearly"
    " almost around unknown undefined none impossible".split()
)
_TEXT_TAIL = re.compile(r"\s*\\text\s*\{\s*([A-Za-z][A-Za-z .'\-]*)\}(?:\s*\^\s*\{?\s*[23]\s*\}?)?\s*$")
_WORDS_TAIL = re.compile(r"(?<=[0-9}])\s+((?:[A-Za-z]{3,}\.?\s*)+)$")
_ANSWERISH = re.compile(r"[0-9}]\s*$|\\pi\s*$")
_UNIT_BARE = re.compile(r"(?<=[0-9}.\s])\s*(?:" + _UNIT_WORDS + r")(?:\s*\^\s*\{?\s*[23]\s*\}?)?\s*\.?\s*$")
_DROP = re.compile(
    r"\\(?:left|right)\s*\.|\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg|displaystyle|textstyle|scriptstyle"
    r"|limits|nolimits|mathstrut|strut)(?![a-zA-Z])"
    r"|(?<!\\)\\[,;:!> ]|\\q?quad(?![a-zA-Z])|~|\\(?:hfill|allowbreak|nonumber)(?![a-zA-Z])"
)
_EMPTY_TEXT = re.compile(r"\\text\s*\{[\s.,;:]*\}")
_OVER = re.compile(r"\{([^{}]*)\\over(?![a-zA-Z])([^{}]*)\}")  # TeX's {a \over b}
_DEGREE = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|°|\^\s*\{\s*\}")
_INF_WORD = re.compile(
    r"\\(?:text|mathrm)\s*\{\s*(?:infinity|inf|\\infty)\s*\}|(?<![A-Za-z\\])(?:infinity|inf|oo)(?![A-Za-z])"
)
_PERCENT = re.compile(r"\\%|%")
_DOLLAR = re.compile(r"\\\$|\$|\\textdollar|\\dollar")
_FRAC = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
_WRAP = re.compile(
    r"\\(?:mathrm|mathbf|mathit|mathsf|boldsymbol|bm|operatorname\*?|textbf|textit|textrm|mathnormal)\s*\{"
)
_OR_WORD = re.compile(r"\\text\s*\{\s*(or|and)\s*\}|(?<=[\s}$0-9])(or|and)(?=[\s\\$0-9(-])")
_UNICODE = str.maketrans({"−": "-", "–": "-", "×": "*", "·": "*", "÷": "/", "≤": "<=", "≥": ">=", "≠": "!="})
_UNICODE_CMD = {"π": "\\pi ", "∞": "\\infty ", "√": "\\sqrt ", "∪": "\\cup ", "∈": "\\in "}


_REPEATING = re.compile(r"(?<![0-9])([0-9]*)\.([0-9]*)\\overline\s*\{\s*([0-9]{1,20})\s*\}")
_SCIENTIFIC = re.compile(r"(?<![A-Za-z0-9.])([0-9]+\.[0-9]+|[0-9]+(?=[eE][+-]))[eE]([+-]?[0-9]{1,4})(?![A-Za-z0-9])")


def _repeating(m: re.Match[str]) -> str:
    """`0.1\\overline{6}` -> `\\frac{1}{6}` (exact)."""
    whole, fixed, rep = m[1] or "0", m[2], m[3]
    value = Fraction(int(whole + fixed), 10 ** len(fixed)) + Fraction(int(rep), (10 ** len(rep) - 1) * 10 ** len(fixed))
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _join_thousands(m: re.Match[str]) -> str:
    """`32,\\!348` -> 32348; a plain `12,102` inside brackets is a pair, not a number."""
    s = m.string
    plain = "\\" not in m[0] and "{" not in m[0]
    before = s[: m.start()].rstrip()[-1:]
    after = s[m.end() :].lstrip()[:1]
    if plain and (before in ("(", "[", ",") or after in (")", "]", ",")):
        return m[0]
    return re.sub(r"\D", "", m[0])


def _unwrap(text: str) -> str:
    """`\\mathrm{x}` -> `{x}` style wrappers dropped (the braces stay, a group)."""
    return _WRAP.sub("{", text)


def canonical(text: str) -> str:
    """The answer with layout, wrappers, units, degrees, percent, currency and separators removed.

    >>> canonical(r"\\$32,\\!348")
    '32348'
    >>> canonical(r"\\left( 3, \\dfrac{\\pi}{2} \\right)")
    '( 3, \\\\frac{\\\\pi}{2} )'
    >>> canonical(r"864 \\mbox{ inches}^2")
    '864'
    """
    s = text.translate(_UNICODE)
    for k, v in _UNICODE_CMD.items():
        if k in s:
            s = s.replace(k, v)
    s = s.replace("\\mbox", "\\text").replace("\\textnormal", "\\text").replace("\\hbox", "\\text")
    s = _INF_WORD.sub("\\\\infty ", s)
    s = _DEGREE.sub("", s)
    s = _PERCENT.sub("", s)
    s = _DOLLAR.sub("", s)
    s = _THOUSANDS.sub(_join_thousands, s)
    s = _REPEATING.sub(_repeating, s)
    s = _SCIENTIFIC.sub(r"\1\\times 10^{\2}", s)
    s = _DROP.sub(" ", s)
    s = _FRAC.sub("\\\\frac", s)
    s = _EMPTY_TEXT.sub(" ", s)
    if "\\over" in s:
        s = _OVER.sub(r"\\frac{\1}{\2}", s)
    s = _OR_WORD.sub(lambda m: " \\lor ", s)
    for _ in range(2):
        s2 = _UNIT_TEXT.sub("", s)
        tail = _TEXT_TAIL.search(s2)
        if (
            tail
            and not NOT_A_UNIT & set(tail[1].lower().replace(".", " ").split())
            and _ANSWERISH.search(s2[: tail.start()])
        ):
            s2 = s2[: tail.start()]  # `5 \\text{ apples}`: a trailing word after a value is a unit
        s2 = _UNIT_BARE.sub("", s2) if s2.strip() and not re.fullmatch(r"\s*[A-Za-z]+\s*", s2) else s2
        plain = _WORDS_TAIL.search(s2)
        if plain and not NOT_A_UNIT & set(plain[1].lower().replace(".", " ").split()):
            s2 = s2[: plain.start()]  # `120 cubic units`, `28 percent`: plain words after a value
        if not s2.strip() or s2 == s:
            break
        s = s2
    s = _unwrap(s)
    return " ".join(s.split()).rstrip(".").strip()
