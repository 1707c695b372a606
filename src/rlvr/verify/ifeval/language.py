"""Which language a response is in: a response is in language L only when the whole of it clearly is.

Identifier: CLD2 (`pycld2`), chosen on measurement (docs/instructions.md, "Language identification"):
deterministic (no random state), about 0.01 ms per response, a 10 MB wheel, and it knows all 22 of IFEval's
languages (lingua lacks Kannada and Nepali). Rules, in order; the first that fails decides:

1. the response has letters (digits, emoji and punctuation alone are in no language);
2. at least 80% of its letters are in the script of L (mixed scripts fail; a brand name may pass);
3. CLD2 on the lower-cased text (so all-caps English reads as English) is reliable, names L first and no
   other language for 10% of the text or more (for a text of 2 words and 6 letters or more that CLD2 finds
   too short to call, its best-effort guess);
4. every clause of 4 or more words (text between punctuation, quotes, brackets and line breaks) that CLD2
   identifies reliably, with L as its hint, is L (this catches a German sentence followed by an English one,
   or an English sentence around a Vietnamese quote, which CLD2 would otherwise fold into the majority).

A single word is too little text for CLD2 to call reliably, so it fails (rule 3).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rlvr.verify.ifeval.text import words

# The script each IFEval language (ISO 639-1) is written in, as the first word of Unicode character names.
SCRIPTS: dict[str, str] = {
    "en": "LATIN", "de": "LATIN", "it": "LATIN", "pt": "LATIN", "fi": "LATIN", "sw": "LATIN", "vi": "LATIN",
    "es": "LATIN", "fr": "LATIN", "nl": "LATIN", "tr": "LATIN", "pl": "LATIN", "id": "LATIN", "sv": "LATIN",
    "ru": "CYRILLIC", "bg": "CYRILLIC", "uk": "CYRILLIC", "sr": "CYRILLIC",
    "ar": "ARABIC", "fa": "ARABIC", "ur": "ARABIC",
    "hi": "DEVANAGARI", "mr": "DEVANAGARI", "ne": "DEVANAGARI",
    "bn": "BENGALI", "pa": "GURMUKHI", "gu": "GUJARATI", "ta": "TAMIL", "te": "TELUGU", "kn": "KANNADA",
    "th": "THAI", "ko": "HANGUL", "ja": "CJK", "zh": "CJK", "el": "GREEK", "he": "HEBREW",
}  # fmt: skip
SCRIPT_SHARE = 0.8
TEXT_SHARE = 90
MIN_BEST_EFFORT_WORDS = 2
MIN_BEST_EFFORT_LETTERS = 6
MIN_CLAUSE_WORDS = 4
# clause boundaries: sentence and clause punctuation, quotes, brackets, line breaks, spaced dashes
_CLAUSE = re.compile(r"[.!?;:,\"\u201c\u201d\u00ab\u00bb()\[\]\n\u3002\u0964\u06d4\u060c\uff0c]+|\s[-\u2013\u2014]\s")


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    first = name.split(" ", 1)[0]
    if first in {"HIRAGANA", "KATAKANA"}:
        return "CJK"
    if first == "ARABIC" or name.startswith("EXTENDED ARABIC"):
        return "ARABIC"
    return first


def _is_letter(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LM"


@lru_cache(maxsize=1)
def _cld2():  # type: ignore[no-untyped-def]
    import pycld2  # a runtime dependency; importing it touches nothing outside the process

    return pycld2


def _detect(text: str, best_effort: bool = False, hint: str = "") -> tuple[bool, list[tuple[str, int]]]:
    """CLD2's (reliable, [(code, percent), ...]) on `text`; raises on text CLD2 cannot read."""
    extra = {"hintLanguage": hint} if hint else {}
    reliable, _, details = _cld2().detect(text.lower(), bestEffort=best_effort, **extra)
    return bool(reliable), [(code.split("-")[0], int(pct)) for _, code, pct, _ in details if code != "un"]


def _code(language: str) -> str:
    lang = language.strip().lower().replace("_", "-").split("-")[0]
    return {"iw": "he", "jw": "jv", "zh-cn": "zh", "zh-tw": "zh"}.get(lang, lang)


def check_language(text: str, language: str) -> tuple[bool, str]:
    """(whether the whole of `text` is clearly in `language`, the reason). Never raises."""
    target = _code(language)
    letters = [ch for ch in text if _is_letter(ch)]
    if not letters:
        return False, "no letters"
    script = SCRIPTS.get(target)
    if script is not None:
        share = sum(_script(ch) == script for ch in letters) / len(letters)
        if share < SCRIPT_SHARE:
            return False, f"only {share:.0%} of the letters are in the {script.lower()} script"
    try:
        reliable, found = _detect(text)
        if not reliable and len(words(text)) >= MIN_BEST_EFFORT_WORDS and len(letters) >= MIN_BEST_EFFORT_LETTERS:
            reliable, found = _detect(text, best_effort=True)  # a short sentence: CLD2's best guess
    except Exception as exc:  # CLD2 rejects some byte sequences: a failed detection is a fail
        return False, f"language detection failed ({type(exc).__name__})"
    if not reliable or not found:
        return False, "language not identified reliably"
    code, pct = found[0]
    if code != target:
        return False, f"identified as {code}, not {target}"
    others = [(c, p) for c, p in found[1:] if p >= 100 - TEXT_SHARE]
    if others or pct < 50:
        return False, f"only {pct}% of the text is {target} ({', '.join(f'{c} {p}%' for c, p in found[1:])})"
    for clause in _CLAUSE.split(text):
        if len(words(clause)) < MIN_CLAUSE_WORDS:
            continue
        try:
            ok, parts = _detect(clause, hint=target)  # the hint keeps a short clause from reading as Interlingua
        except Exception:
            return False, "language detection failed on a clause"
        if ok and parts and parts[0][0] != target:
            return False, f"a part is in {parts[0][0]}: {clause.strip()[:40]!r}"
    return True, f"in {target}"
