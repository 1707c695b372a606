"""The 25 IFEval instruction types, one declaration each: arguments (a pydantic model), the check, the words a
generated prompt uses to ask for it, and how a generated prompt draws its arguments.

A check is `check(response, args, prompt) -> (followed, reason)` on the response as given (strict scoring;
`rlvr.verify.ifeval.score` runs the loose variants). Each follows IFEval's reference checker
(instructions.py in google-research, copied by lm-eval) except where docs/instructions.md, "Constraint rules",
says otherwise; the differences are marked "rlvr:" below.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from rlvr.verify.ifeval.language import check_language
from rlvr.verify.ifeval.text import count_keyword, count_sentences, count_words

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


# keywords -------------------------------------------------------------------------------------------------


class KeywordsArgs(Args):
    keywords: list[str] = Field(min_length=1)


def _existence(r: str, a: KeywordsArgs, p: str) -> tuple[bool, str]:
    missing = [k for k in a.keywords if not count_keyword(r, k)]  # rlvr: whole words, not substrings
    return not missing, f"missing {missing}" if missing else "all keywords present"


declare(
    Instruction(
        "keywords:existence",
        KeywordsArgs,
        _existence,
        lambda a: f"Work each of these words into your reply somewhere: {', '.join(a.keywords)}.",
        lambda rng: {"keywords": rng.sample(VOCAB, rng.randint(1, 3))},
        "keywords",
    )
)


class FrequencyArgs(Args):
    keyword: str = Field(min_length=1)
    frequency: int = Field(ge=0)
    relation: Relation


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _sample_frequency(rng: random.Random) -> dict[str, Any]:
    relation = _rel(rng)
    return {
        "keyword": rng.choice(VOCAB),
        "frequency": rng.randint(1 if relation == "at least" else 2, 4),
        "relation": relation,
    }


def _frequency(r: str, a: FrequencyArgs, p: str) -> tuple[bool, str]:
    return _compare(count_keyword(r, a.keyword), a.relation, a.frequency, f"uses of {a.keyword!r}")


declare(
    Instruction(
        "keywords:frequency",
        FrequencyArgs,
        _frequency,
        lambda a: f'The word "{a.keyword}" has to show up {_rel_words(a.relation)} {_times(a.frequency)} in your text.',
        _sample_frequency,
        "keywords",
    )
)


class ForbiddenArgs(Args):
    forbidden_words: list[str] = Field(min_length=1)


def _forbidden(r: str, a: ForbiddenArgs, p: str) -> tuple[bool, str]:
    used = [w for w in a.forbidden_words if count_keyword(r, w)]
    return not used, f"uses {used}" if used else "no forbidden word"


declare(
    Instruction(
        "keywords:forbidden_words",
        ForbiddenArgs,
        _forbidden,
        lambda a: f"Stay away from these words entirely: {', '.join(a.forbidden_words)}.",
        lambda rng: {"forbidden_words": rng.sample(["very", "really", "good", "thing", "like", "just", "the"], 2)},
        "keywords",
    )
)


class LetterArgs(Args):
    letter: str = Field(min_length=1, max_length=1)
    let_frequency: int = Field(ge=0)
    let_relation: Relation


def _sample_letter(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"letter": rng.choice(RARE_LETTERS), "let_frequency": rng.randint(2, 6), "let_relation": "less than"}
    return {"letter": rng.choice(COMMON_LETTERS), "let_frequency": rng.randint(3, 15), "let_relation": "at least"}


def _letter(r: str, a: LetterArgs, p: str) -> tuple[bool, str]:
    # rlvr: any character is counted as itself (IFEval swaps a non a-z letter for a random one)
    return _compare(r.lower().count(a.letter.lower()), a.let_relation, a.let_frequency, f"{a.letter!r}s")


declare(
    Instruction(
        "keywords:letter_frequency",
        LetterArgs,
        _letter,
        lambda a: (
            f"Count your letters: '{a.letter}' must occur {_rel_words(a.let_relation)} {_times(a.let_frequency)}."
        ),
        _sample_letter,
        "keywords",
    )
)


# language and case ------------------------------------------------------------------------------------------


class LanguageArgs(Args):
    language: str = Field(min_length=2)


def _language(r: str, a: LanguageArgs, p: str) -> tuple[bool, str]:
    return check_language(r, a.language)  # rlvr: a failed detection fails (IFEval passes it)


declare(
    Instruction(
        "language:response_language",
        LanguageArgs,
        _language,
        lambda a: f"Reply only in {LANGUAGES.get(a.language, a.language)}; do not mix in any other language.",
        lambda rng: {"language": rng.choice(sorted(LANGUAGES))},
        "case",
    )
)


def _english_capital(r: str, a: Args, p: str) -> tuple[bool, str]:
    if not r.isupper():
        return False, "not all capitals"
    return check_language(r, "en")  # rlvr: the identifier reads lower-cased text, so all-caps English is English


def _english_lowercase(r: str, a: Args, p: str) -> tuple[bool, str]:
    if not r.islower():
        return False, "not all lower case"
    return check_language(r, "en")


declare(
    Instruction(
        "change_case:english_capital",
        Args,
        _english_capital,
        lambda a: "Type your whole reply in English using CAPITAL letters only.",
        lambda rng: {},
        "case",
    )
)
declare(
    Instruction(
        "change_case:english_lowercase",
        Args,
        _english_lowercase,
        lambda a: "Type your whole reply in English using small letters only, with no capitals at all.",
        lambda rng: {},
        "case",
    )
)


class CapitalArgs(Args):
    capital_frequency: int = Field(ge=0)
    capital_relation: Relation


# Treebank-like tokens, as IFEval's nltk.word_tokenize makes them for this count: whitespace-separated, with
# contractions split off ("DON'T" -> "DO", "N'T"); hyphens and inner periods stay ("WELL-KNOWN", "U.S.A.").
_CONTRACTION = re.compile(r"(?i)(n't|'s|'m|'d|'ll|'re|'ve)$")


def capital_words(text: str) -> list[str]:
    """The tokens that are all capitals (at least one cased letter, none lower case), as IFEval counts them."""
    out = []
    for token in text.split():
        m = _CONTRACTION.search(token.rstrip(".,;:!?)]\"'*"))
        parts = [token[: m.start()], token[m.start() :]] if m and m.start() > 0 else [token]
        out += [p for p in parts if p.isupper()]
    return out


def _capital_words(r: str, a: CapitalArgs, p: str) -> tuple[bool, str]:
    return _compare(len(capital_words(r)), a.capital_relation, a.capital_frequency, "all-capital words")


declare(
    Instruction(
        "change_case:capital_word_frequency",
        CapitalArgs,
        _capital_words,
        lambda a: f"Write {_rel_words(a.capital_relation)} {a.capital_frequency} words fully in CAPITALS.",
        lambda rng: {"capital_frequency": rng.randint(2, 10), "capital_relation": _rel(rng)},
        "case",
    )
)


# length ----------------------------------------------------------------------------------------------------


class SentencesArgs(Args):
    num_sentences: int = Field(ge=0)
    relation: Relation


def _sentences(r: str, a: SentencesArgs, p: str) -> tuple[bool, str]:
    return _compare(count_sentences(r), a.relation, a.num_sentences, "sentences")


declare(
    Instruction(
        "length_constraints:number_sentences",
        SentencesArgs,
        _sentences,
        lambda a: f"Keep it to {_rel_words(a.relation)} {a.num_sentences} sentences.",
        lambda rng: {"num_sentences": rng.randint(2, 12), "relation": _rel(rng)},
        "length",
    )
)


class WordsArgs(Args):
    num_words: int = Field(ge=0)
    relation: Relation


def _words(r: str, a: WordsArgs, p: str) -> tuple[bool, str]:
    return _compare(count_words(r), a.relation, a.num_words, "words")


declare(
    Instruction(
        "length_constraints:number_words",
        WordsArgs,
        _words,
        lambda a: f"Your reply should run {_rel_words(a.relation)} {a.num_words} words.",
        lambda rng: {"num_words": rng.choice([30, 50, 80, 100, 150, 200, 300]), "relation": _rel(rng)},
        "length",
    )
)


class ParagraphsArgs(Args):
    num_paragraphs: int = Field(ge=1)


_DIVIDER = re.compile(r"\s?\*\*\*\s?")


def _paragraphs(r: str, a: ParagraphsArgs, p: str) -> tuple[bool, str]:
    parts = _DIVIDER.split(r)
    n = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i in (0, len(parts) - 1):
                n -= 1
            else:
                return False, "an empty paragraph between two *** dividers"
    return n == a.num_paragraphs, f"{n} paragraphs, needs {a.num_paragraphs}"


declare(
    Instruction(
        "length_constraints:number_paragraphs",
        ParagraphsArgs,
        _paragraphs,
        lambda a: f"Split the reply into {a.num_paragraphs} paragraphs, putting a line with *** between neighbours.",
        lambda rng: {"num_paragraphs": rng.randint(2, 5)},
        "length",
    )
)


class NthParagraphArgs(Args):
    num_paragraphs: int = Field(ge=1)
    nth_paragraph: int = Field(ge=1)
    first_word: str = Field(min_length=1)


def _first_word(paragraph: str) -> str:
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    out = ""
    for ch in word:
        if ch in ".,?!'\"":
            break
        out += ch.lower()
    return out


def _nth_paragraph(r: str, a: NthParagraphArgs, p: str) -> tuple[bool, str]:
    paragraphs = [x for x in re.split(r"\n\n", r) if x.strip()]  # rlvr: the nth non-empty paragraph
    if len(paragraphs) != a.num_paragraphs:
        return False, f"{len(paragraphs)} paragraphs, needs {a.num_paragraphs}"
    if a.nth_paragraph > len(paragraphs):
        return False, f"no paragraph {a.nth_paragraph}"
    word = _first_word(paragraphs[a.nth_paragraph - 1])
    ok = word == a.first_word.strip().lower()
    return ok, f"paragraph {a.nth_paragraph} starts with {word!r}, needs {a.first_word!r}"


declare(
    Instruction(
        "length_constraints:nth_paragraph_first_word",
        NthParagraphArgs,
        _nth_paragraph,
        lambda a: (
            f"Give {a.num_paragraphs} paragraphs separated by blank lines (two line breaks), and open paragraph "
            f'number {a.nth_paragraph} with the word "{a.first_word}".'
        ),
        lambda rng: (
            lambda n: {"num_paragraphs": n, "nth_paragraph": rng.randint(1, n), "first_word": rng.choice(VOCAB)}
        )(rng.randint(2, 4)),
        "length",
    )
)


# detectable content and format ---------------------------------------------------------------------------


class PlaceholdersArgs(Args):
    num_placeholders: int = Field(ge=0)


def _placeholders(r: str, a: PlaceholdersArgs, p: str) -> tuple[bool, str]:
    # IFEval's `\[.*?\]` counts the same (one per "]" closing a "[" on its line) in quadratic time
    n = len(re.findall(r"\[[^\[\]\n]*\]", r))
    return n >= a.num_placeholders, f"{n} [placeholders], needs at least {a.num_placeholders}"


declare(
    Instruction(
        "detectable_content:number_placeholders",
        PlaceholdersArgs,
        _placeholders,
        lambda a: f"Leave {a.num_placeholders} or more fill-in slots written in square brackets, like [city].",
        lambda rng: {"num_placeholders": rng.randint(1, 4)},
        "format",
    )
)


class PostscriptArgs(Args):
    postscript_marker: str = Field(min_length=1)


def _postscript_pattern(marker: str) -> re.Pattern[str]:
    squashed = re.sub(r"[\s.]", "", marker).lower()
    if squashed == "pps":
        return re.compile(r"p\.\s?p\.\s?s.*$", re.MULTILINE)
    if squashed == "ps":
        # rlvr: "P.P.S." is not "P.S.": the p may not follow a letter, a dot or "p. "
        return re.compile(r"(?<![\w.])(?<!p\.\s)p\.\s?s\..*$", re.MULTILINE)
    return re.compile(re.escape(marker.lower()) + r".*$", re.MULTILINE)


def _postscript(r: str, a: PostscriptArgs, p: str) -> tuple[bool, str]:
    found = _postscript_pattern(a.postscript_marker).search(r.lower())
    return found is not None, f"{a.postscript_marker} {'found' if found else 'missing'}"


declare(
    Instruction(
        "detectable_content:postscript",
        PostscriptArgs,
        _postscript,
        lambda a: f"Close with an afterthought that begins with {a.postscript_marker}",
        lambda rng: {"postscript_marker": rng.choice(["P.S.", "P.P.S"])},
        "format",
    )
)


class BulletsArgs(Args):
    num_bullets: int = Field(ge=0)


_RULE_LINE = re.compile(r"[\s*_-]*")


def _bullets(r: str, a: BulletsArgs, p: str) -> tuple[bool, str]:
    n = 0
    for line in r.split("\n"):
        if _RULE_LINE.fullmatch(line):
            continue  # rlvr: "---" and "* * *" are rules, not bullets
        if re.match(r"\s*\*[^*]", line) or re.match(r"\s*-", line):
            n += 1
    return n == a.num_bullets, f"{n} bullets, needs exactly {a.num_bullets}"


declare(
    Instruction(
        "detectable_format:number_bullet_lists",
        BulletsArgs,
        _bullets,
        lambda a: f"Lay it out as exactly {a.num_bullets} markdown bullets, each line opening with '* '.",
        lambda rng: {"num_bullets": rng.randint(2, 6)},
        "format",
    )
)

OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _constrained(r: str, a: Args, p: str) -> tuple[bool, str]:
    found = [o for o in OPTIONS if o in r.strip()]
    if len(found) != 1:  # rlvr: two different options are no choice
        return False, f"{len(found)} of the options present"
    return True, f"chose {found[0]!r}"


declare(
    Instruction(
        "detectable_format:constrained_response",
        Args,
        _constrained,
        lambda a: "Reply with exactly one of three set phrases, either " + " or else ".join(f"'{o}'" for o in OPTIONS),
        lambda rng: {},
        "whole",
        solo=True,
    )
)


class HighlightsArgs(Args):
    num_highlights: int = Field(ge=0)


# rlvr: markdown emphasis: the opening * is not followed by a space, the closing one not preceded by one
_SINGLE = re.compile(r"(?<!\*)\*(?![\s*])[^\n*]*(?<![\s*])\*(?!\*)")
_DOUBLE = re.compile(r"\*\*(?![\s*])[^\n*]*(?<![\s*])\*\*")


def _highlights(r: str, a: HighlightsArgs, p: str) -> tuple[bool, str]:
    n = sum(1 for m in _SINGLE.findall(r) if m.strip("*").strip())
    n += sum(1 for m in _DOUBLE.findall(r) if m[2:-2].strip())
    return n >= a.num_highlights, f"{n} highlights, needs at least {a.num_highlights}"


declare(
    Instruction(
        "detectable_format:number_highlighted_sections",
        HighlightsArgs,
        _highlights,
        lambda a: f"Mark {a.num_highlights} or more parts in markdown italics, as in *a marked part*.",
        lambda rng: {"num_highlights": rng.randint(1, 4)},
        "format",
    )
)


class SectionsArgs(Args):
    section_spliter: str = Field(min_length=1)
    num_sections: int = Field(ge=0)


def _sections(r: str, a: SectionsArgs, p: str) -> tuple[bool, str]:
    n = len(re.split(r"\s?" + re.escape(a.section_spliter.strip()) + r"\s?\d+\s?", r)) - 1
    return n >= a.num_sections, f"{n} sections marked {a.section_spliter!r}, needs at least {a.num_sections}"


declare(
    Instruction(
        "detectable_format:multiple_sections",
        SectionsArgs,
        _sections,
        lambda a: (
            f"Organise it in {a.num_sections} parts, heading each one {a.section_spliter} 1, "
            f"{a.section_spliter} 2 and so on."
        ),
        lambda rng: {
            "section_spliter": rng.choice(["SECTION", "Section", "PART", "Part"]),
            "num_sections": rng.randint(2, 4),
        },
        "format",
    )
)


def _strip_fence(r: str) -> str:
    s = r.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        s = s.removeprefix(prefix)
    return s.removesuffix("```").strip()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json(r: str, a: Args, p: str) -> tuple[bool, str]:
    try:
        json.loads(_strip_fence(r), parse_constant=_no_constant)  # rlvr: NaN and Infinity are not JSON
    except (ValueError, RecursionError) as exc:
        return False, f"not JSON: {str(exc)[:60]}"
    return True, "valid JSON"


declare(
    Instruction(
        "detectable_format:json_format",
        Args,
        _json,
        lambda a: "Return the reply as one JSON document (a markdown code fence around it is fine).",
        lambda rng: {},
        "whole",
        solo=True,
    )
)


def _title(r: str, a: Args, p: str) -> tuple[bool, str]:
    ok = any(t.strip() for t in re.findall(r"<<([^\n<>]+)>>", r))  # IFEval: <<[^\n]+>>, quadratic on "<<<<..."
    return ok, "title found" if ok else "no <<title>>"


declare(
    Instruction(
        "detectable_format:title",
        Args,
        _title,
        lambda a: "Give it a heading wrapped in double angle brackets, for example <<a heading>>.",
        lambda rng: {},
        "format",
    )
)


# combinations, start/end, punctuation ---------------------------------------------------------------------


def _two_responses(r: str, a: Args, p: str) -> tuple[bool, str]:
    parts = r.split("******")
    valid = []
    for i, part in enumerate(parts):
        if not part.strip():
            if i not in (0, len(parts) - 1):
                return False, "an empty response between separators"
        else:
            valid.append(part)
    if len(valid) != 2:
        return False, f"{len(valid)} responses, needs 2"
    return valid[0].strip() != valid[1].strip(), "two different responses"


declare(
    Instruction(
        "combination:two_responses",
        Args,
        _two_responses,
        lambda a: "Write two distinct versions of the reply with a line of six asterisks (******) between them.",
        lambda rng: {},
        "whole",
        solo=True,
    )
)


class RepeatArgs(Args):
    prompt_to_repeat: str | None = None


def _repeat(r: str, a: RepeatArgs, p: str) -> tuple[bool, str]:
    target = a.prompt_to_repeat if a.prompt_to_repeat else p
    if not target.strip():
        return False, "nothing to repeat"
    ok = r.strip().lower().startswith(target.strip().lower())
    return ok, "starts with the request" if ok else "does not start with the request verbatim"


declare(
    Instruction(
        "combination:repeat_prompt",
        RepeatArgs,
        _repeat,
        lambda a: "Before answering, copy the request above word for word, then give the answer.",
        lambda rng: {},
        "whole",
        solo=True,
    )
)


class EndArgs(Args):
    end_phrase: str = Field(min_length=1)


def _end(r: str, a: EndArgs, p: str) -> tuple[bool, str]:
    ok = r.strip().strip('"').lower().endswith(a.end_phrase.strip().lower())
    return ok, f"{'ends' if ok else 'does not end'} with {a.end_phrase!r}"


declare(
    Instruction(
        "startend:end_checker",
        EndArgs,
        _end,
        lambda a: f"The very last words of the reply must be: {a.end_phrase}",
        lambda rng: {
            "end_phrase": rng.choice(["Any other questions?", "That is the whole story.", "Thanks for reading."])
        },
        "end",
    )
)


def _quotation(r: str, a: Args, p: str) -> tuple[bool, str]:
    s = r.strip()
    ok = len(s) > 1 and s[0] == '"' and s[-1] == '"'
    return ok, "wrapped in double quotes" if ok else "not wrapped in double quotes"


declare(
    Instruction(
        "startend:quotation",
        Args,
        _quotation,
        lambda a: "Enclose everything you write between a pair of double quote marks.",
        lambda rng: {},
        "end",
    )
)

# rlvr: full-width, Arabic, ideographic and small-form commas are commas too
COMMAS = ",\uff0c\u060c\u3001\ufe50\ufe51\ufe10\ufe11"


def _no_comma(r: str, a: Args, p: str) -> tuple[bool, str]:
    found = [c for c in COMMAS if c in r]
    return not found, f"has commas {found}" if found else "no comma"


declare(
    Instruction(
        "punctuation:no_comma",
        Args,
        _no_comma,
        lambda a: "Do not put a single comma anywhere in the reply.",
        lambda rng: {},
        "punct",
    )
)
