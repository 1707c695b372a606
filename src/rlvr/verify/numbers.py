"""Exact reading of the numbers in a short answer: "$1,000.00", "36/2", "\\frac{36}{2}", "1.8e1", "eighteen".

Every value is a `fractions.Fraction`; nothing here compares floats or calls `eval`. Each function reads
at most `MAX_REGION` characters, so its cost is bounded whatever the caller passes. The notation read
(signs, currency, thousands separators, LaTeX): docs/rewards.md, rule 4.
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction
from typing import NamedTuple

__all__ = [
    "MAX_REGION",
    "Reading",
    "Token",
    "format_number",
    "has_non_ascii_digit",
    "normalise",
    "parse_number",
    "read_number",
    "starts_with_number",
    "tokens",
]

MAX_REGION = 256  # characters of answer text that are ever looked at
_MAX_DIGITS = 400  # a longer digit string is outside float range (or absurdly precise): "non-finite"
_MAX_EXP = 400  # |exponent| beyond this is outside float range: "non-finite"
_FLOAT_MAX = Fraction(sys.float_info.max)

# Reasons a reading can give; "ok" means `value` holds the number.
OK = "ok"
NO_NUMBER = "no number"
HEDGED = "hedged answer"
NON_FINITE = "non-finite"
NON_ASCII = "non-ascii digits"

# One sentinel for "a non-finite value was written here" (inf, nan, 1e999, 18/0).
_INF = "inf"

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
        " sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9}
_WORDS = {**_UNITS, **_TENS, **_SCALES}
_WORD_ALT = "|".join(sorted(_WORDS, key=len, reverse=True))

# LaTeX fractions become "a/b" (with parentheses when a part is not a bare number).
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]{0,40})\}\s*\{([^{}]{0,40})\}")
_FRAC_SHORT = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_BARE = re.compile(r"\s*-?\s*\d[\d,]*(?:\.\d+)?\s*", re.ASCII)

# Everything else normalisation does, as one pass: the group that matched picks the replacement.
# `approx` also takes the arrows that state a result (`3*4 \Rightarrow 12` reads like `3*4 = 12`);
# `delim`: math delimiters `\( \) \[ \]` become spaces (so `\(3\)\(4\)` stays two numbers);
# `gone` drops currency (symbols, `US$`-style prefixes), `%` and markdown.
_MONEY = "$€£¥₹₩₽₺₦₱฿₫₪₴¢%"
_CLEAN = re.compile(
    r"(?P<comma>\{,\})|(?P<times>\\(?:times|cdot)(?![a-zA-Z])|·)"
    r"|(?P<approx>\\(?:approx|simeq|sim|Rightarrow|rightarrow|implies|Longrightarrow)(?![a-zA-Z])|[≈→⇒⟹])"
    r"|(?P<pm>\\(?:pm|mp)(?![a-zA-Z])|±|\+/-)|(?P<inf>\\infty|∞)"
    r"|(?P<delim>\\[()\[\]])"
    rf"|(?P<gone>\\[$€£%,;:! ]|\b[A-Z]{{1,3}}\$|[{_MONEY}]|\*\*|__)"
    r"|(?P<cmd>\\[a-zA-Z]+)|(?P<sup>\^\s*\{)|(?P<space>[{}\u00a0\u2009\u202f])|(?P<minus>−)|(?P<dash>[–—])"
)
_CLEAN_NEEDED = re.compile(f"[\\\\{{}}{_MONEY}*_·≈→⇒⟹±∞^\u00a0\u2009\u202f−–—+]")
_CLEAN_TO = {
    "comma": ",",
    "times": " × ",
    "approx": " = ",
    "pm": " ± ",
    "inf": " inf ",
    "delim": " ",
    "gone": "",
    "cmd": " ",
    "sup": "^",
    "space": " ",
    "minus": "-",
    "dash": " - ",
}

_INT = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)"  # "1,0000" is not a thousands separator: 1 and 0
_NUM = re.compile(
    rf"""
    (?<![\w.])(?P<neg>-)?
    (?P<mant>{_INT}(?:\.\d+)?|\.\d+)
    (?:
        /(?P<den>{_INT}(?:\.\d+)?)
      | [eE](?P<exp>[-+]?\d+)
      | \s*(?:×|x|\*)\s*10\s*\^\s*\(?(?P<exp10>[-+]?\d+)
      | \s*\^\s*(?P<pow>\d+)
      | \s+(?P<scale>(?i:thousand|million|billion))\b
    )?
    """,
    re.VERBOSE | re.ASCII,
)
_NUM_GROUPS = ("neg", "mant", "den", "exp", "exp10", "pow", "scale")
_WORD_NUM = re.compile(
    rf"(?i)\b(?P<neg>(?:negative|minus)\s+)?(?P<words>(?:{_WORD_ALT})\b(?:(?:\s+and\s+|\s+|-)(?:{_WORD_ALT})\b)*)"
)
_NON_FINITE_WORD = re.compile(r"(?i)(?<![a-z])(?:inf|infinity|infinite|nan)(?![a-z])")
_HEDGE_WORD = re.compile(r"(?i)\b(?:or|either)\b|±")
# An operation between two numbers (`3 * 3`, `3 × 3`, `9 + 9`, `18 - 18`, `36 / 2`), not the `× 10^`
# of scientific notation: unevaluated arithmetic, even when its operands are one repeated value.
_OPERATION = re.compile(r"\d\s*(?:[*×](?!\s*10\s*\^)|\+|\s[-/]\s)\s*\(?\s*-?\.?\d")
_PLAIN = re.compile(r"\s*(?P<sign>[-+])?(?P<digits>\d+(?:\.\d+)?)\s*", re.ASCII)
_OTHER_STARTS = ("inf", "infinity", "nan", "negative", "minus")
# ISO 4217 codes (and rupee/rupiah abbreviations) that may stand before a number: `#### USD 20`.
# A list, not any three capitals, so a heading such as `#### FAQ 2` still holds no answer.
_CODES = (
    "USD EUR GBP JPY CNY RMB INR CAD AUD NZD CHF HKD SGD SEK NOK DKK PLN CZK HUF RUB TRY ZAR BRL MXN ARS"
    " CLP COP PEN KRW IDR MYR PHP THB VND PKR BDT NGN KES EGP AED SAR ILS TWD UAH Rs Rp"
).split()
_STARTS = re.compile(rf"[\s(]*[-+]?\s*(?:(?:{'|'.join(_CODES)})\b\.?\s*[-+]?\s*)?(?:\d|\.\d|(?P<word>[a-zA-Z]+))")


class Reading(NamedTuple):
    """What a short piece of answer text says: `value` when `reason == "ok"`, else why not.

    (Tuples, not frozen dataclasses, because these are built on the hot path of every verification.)
    """

    value: Fraction | None
    reason: str


class Token(NamedTuple):
    """One number written in normalised text: its span and value (`"inf"` for a non-finite one)."""

    start: int
    end: int
    value: Fraction | str
    neg: bool


def normalise(text: str) -> str:
    """Rewrite LaTeX, currency, markdown and dashes so the tokeniser sees plain numbers.

    >>> normalise(r"\\boxed{\\$\\frac{36}{2}}")
    '  36/2 '
    """
    text = text[:MAX_REGION]
    if "frac" in text:
        text = _FRAC_SHORT.sub(r"\1/\2", _FRAC.sub(_frac_to_slash, text))
    if _CLEAN_NEEDED.search(text) is None:  # most answers: nothing to rewrite, skip the slow pass
        return text
    return _CLEAN.sub(lambda m: _CLEAN_TO[m.lastgroup or "space"], text)


def _frac_to_slash(m: re.Match[str]) -> str:
    num, den = m.group(1), m.group(2)
    if _BARE.fullmatch(num) and _BARE.fullmatch(den):
        return f"{num.replace(' ', '')}/{den.replace(' ', '')}"
    return f"({num})/({den})"


def _fraction(digits: str) -> int | Fraction | str:
    """Exact value of unsigned digits like "1,000", "2.5" or ".5"; an int when there is no point.

    Integers stay `int` on the hot path (they hash and compare equal to the same `Fraction`);
    `Fraction(str)` would be several times slower.
    """
    if "," in digits:
        digits = digits.replace(",", "")
    if len(digits) > _MAX_DIGITS:
        return _INF
    if "." not in digits:
        return int(digits)
    whole, _, decimals = digits.partition(".")
    return Fraction(int(whole + decimals), 10 ** len(decimals))


def _digit_value(m: re.Match[str]) -> int | Fraction | str:
    neg, mant, den_text, exp, exp10, pow_text, scale = m.group(*_NUM_GROUPS)
    whole = _fraction(mant)
    if isinstance(whole, str):
        return whole
    if den_text is None and exp is None and exp10 is None and pow_text is None and scale is None:
        if len(mant) > 300 and abs(Fraction(whole)) > _FLOAT_MAX:
            return _INF
        return -whole if neg else whole
    value = Fraction(whole)
    exp_text = exp or exp10
    if den_text is not None:
        den = _fraction(den_text)
        if isinstance(den, str) or den == 0:
            return _INF
        value /= den
    elif exp_text is not None:
        power10 = int(exp_text) if len(exp_text) <= 5 else _MAX_EXP + 1
        if abs(power10) > _MAX_EXP:
            return _INF
        value *= Fraction(10) ** power10
    elif pow_text is not None:
        power = int(pow_text) if len(pow_text) <= 4 else 10**4
        base_digits = len(str(abs(value.numerator))) + len(str(value.denominator))
        if value != 0 and base_digits * power > _MAX_DIGITS:  # bound the result before computing it
            return _INF
        value **= power
    elif scale is not None:
        value *= _SCALES[scale.lower()]
    if abs(value) > _FLOAT_MAX:
        return _INF
    return -value if neg else value


def _word_values(words: str) -> list[int]:
    """Values of a run of English number words; a run that cannot be one number splits in several.

    >>> _word_values("one hundred and five"), _word_values("twenty-one"), _word_values("eighteen nineteen")
    ([105], [21], [18, 19])
    """
    values: list[int] = []
    total = current = 0
    prev = ""  # class of the previous word: "unit" (0-19), "tens", "hundred", "scale", or "" at a start
    for word in re.split(r"[\s-]+", words.lower()):
        if word == "and" or not word:
            continue
        if word in _SCALES:
            if word == "hundred":
                if current >= 100:  # "two hundred three hundred": two numbers
                    values.append(total + current)
                    total = current = 0
                current = (current or 1) * 100
                prev = "hundred"
            else:
                total += (current or 1) * _SCALES[word]
                current, prev = 0, "scale"
            continue
        value = _WORDS[word]
        if prev == "unit" or (prev == "tens" and (value >= 10 or value == 0)):
            values.append(total + current)
            total = current = 0
        current += value
        prev = "tens" if value >= 20 else "unit"
    values.append(total + current)
    return values


def tokens(text: str, words: bool = True) -> list[Token]:
    """The numbers written in already-normalised text, in order (number words only when `words`).

    >>> [(t.value, t.neg) for t in tokens("16-3 is 1,000 or twenty-one")]
    [(Fraction(16, 1), False), (Fraction(3, 1), False), (Fraction(1000, 1), False), (Fraction(21, 1), False)]
    """
    found = []
    for m in _NUM.finditer(text):
        value = _digit_value(m)
        found.append(Token(m.start(), m.end(), value if isinstance(value, str) else Fraction(value), bool(m["neg"])))
    n_digits = len(found)
    if words:
        for m in _WORD_NUM.finditer(text):
            sign = -1 if m["neg"] else 1
            for v in _word_values(m["words"]):
                found.append(Token(m.start(), m.end(), Fraction(sign * v), sign < 0))
    if _has_non_finite_word(text):
        found.extend(Token(m.start(), m.end(), _INF, False) for m in _NON_FINITE_WORD.finditer(text))
    if len(found) > n_digits:
        found.sort(key=lambda t: t.start)
    return found


def _values(text: str, words: bool) -> set[int | Fraction | str]:
    """The distinct values written in normalised text (`tokens` without positions, for speed)."""
    values = {_digit_value(m) for m in _NUM.finditer(text)}
    if words:
        for m in _WORD_NUM.finditer(text):
            sign = -1 if m["neg"] else 1
            values.update(sign * v for v in _word_values(m["words"]))
    if _has_non_finite_word(text):
        values.add(_INF)
    return values


def _has_non_finite_word(text: str) -> bool:
    lower = text.lower()
    return ("inf" in lower or "nan" in lower) and _NON_FINITE_WORD.search(text) is not None


def has_non_ascii_digit(text: str) -> bool:
    """Whether `text` writes a digit outside ASCII (Arabic-Indic, fullwidth, ...).

    >>> has_non_ascii_digit("１８"), has_non_ascii_digit("18")
    (True, False)
    """
    return not text.isascii() and any(c.isdecimal() and not c.isascii() for c in text)


def starts_with_number(text: str) -> bool:
    """Whether normalised text begins with a number (digits, a number word, inf/nan), after a sign
    and a currency code.

    >>> starts_with_number(" -18 apples"), starts_with_number("Step 1"), starts_with_number("eighteen")
    (True, False, True)
    >>> starts_with_number("+18"), starts_with_number("USD 18"), starts_with_number("FAQ 2")
    (True, True, False)
    """
    m = _STARTS.match(text)
    if m is None:
        return bool(text.strip()) and text.strip()[0].isdecimal()  # a non-ASCII digit counts as a start
    word = m["word"]
    return word is None or word.lower() in _WORDS or word.lower() in _OTHER_STARTS


def read_number(text: str) -> Reading:
    """Read the one number a short answer gives, or say why it does not give exactly one.

    Only the first `MAX_REGION` characters are read; a number that runs past them is non-finite.

    After normalising, an `=` keeps only what follows the last one (`9 * 2 = 18` reads 18); the rest
    must hold one value, possibly repeated. Two values (`18 or 19`, `4, 6`, `4; 6`, `18-19`, `9 * 2`)
    are a hedge, and so is an unevaluated operation on a repeated value (`3 * 3`): arithmetic is never
    computed here. `inf`, `nan` and values outside float range are non-finite. Digits win over
    number words, but a number word next to `or`/`either` still counts as a second value.

    >>> read_number("x = 9 * 2 = $18.00 dollars.")
    Reading(value=Fraction(18, 1), reason='ok')
    >>> read_number("either 18 or 19").reason, read_number("3 * 3").reason
    ('hedged answer', 'hedged answer')
    """
    raw = text[:MAX_REGION]
    if len(text) > MAX_REGION and raw[-1].isdecimal() and text[MAX_REGION].isdecimal():
        return Reading(None, NON_FINITE)  # a number too long to read whole
    plain = _PLAIN.fullmatch(raw)
    if plain is not None:  # fast path for the common "18", "-3", "2.5 "
        value = _fraction(plain["digits"])
        if isinstance(value, str):
            return Reading(None, NON_FINITE)
        return Reading(Fraction(-value if plain["sign"] == "-" else value), OK)
    if has_non_ascii_digit(raw):
        return Reading(None, NON_ASCII)
    norm = normalise(raw)
    if _HEDGE_WORD.search(norm):  # "18 or 19", "either eighteen or 19": count words as well
        everything = _values(norm, words=False)
        if len(everything) > 1 or len(everything | _values(norm, words=True)) > 1:
            return Reading(None, HEDGED)
    tail = norm.rpartition("=")[2]
    values = _values(tail, words=False) or _values(tail, words=True)
    if not values:
        return Reading(None, NO_NUMBER)
    if len(values) > 1 or _OPERATION.search(tail) is not None:
        return Reading(None, HEDGED)
    value = values.pop()
    if isinstance(value, str):
        return Reading(None, NON_FINITE)
    return Reading(Fraction(value), OK)


def parse_number(text: str) -> Fraction | None:
    """The exact value of a text that states one number, else None (hedged, non-finite, too long, none).

    Texts longer than `MAX_REGION` characters are not numbers.

    >>> parse_number("$1,000"), parse_number("\\\\frac{36}{2}"), parse_number("1.8e1"), parse_number("-2.5")
    (Fraction(1000, 1), Fraction(18, 1), Fraction(18, 1), Fraction(-5, 2))
    >>> parse_number("twenty-one apples"), parse_number("18 or 19"), parse_number("1e999")
    (Fraction(21, 1), None, None)
    """
    if len(text) > MAX_REGION:
        return None
    return read_number(text).value


def format_number(value: Fraction) -> str:
    """The canonical string of a value: an integer, a terminating decimal, or `p/q`.

    >>> format_number(Fraction(18)), format_number(Fraction(-5, 2)), format_number(Fraction(7, 3))
    ('18', '-2.5', '7/3')
    """
    num, den = value.numerator, value.denominator
    if den == 1:
        return str(num)
    rest, twos, fives = den, 0, 0
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return f"{num}/{den}"
    places = max(twos, fives)
    digits = str(abs(num) * 10**places // den).rjust(places + 1, "0")
    sign = "-" if num < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}".rstrip("0")
