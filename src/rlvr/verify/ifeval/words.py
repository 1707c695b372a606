"""IFEval's keyword, language, case and length instructions, one declaration each (docs/instructions.md,
"Constraint rules"; "rlvr:" marks where a check departs from IFEval's reference)."""

from __future__ import annotations

import random
import re
from typing import Any

from pydantic import Field

from rlvr.verify.ifeval.base import (
    COMMON_LETTERS,
    LANGUAGES,
    RARE_LETTERS,
    VOCAB,
    Args,
    Instruction,
    Relation,
    _compare,
    _rel,
    _rel_words,
    _times,
    declare,
)
from rlvr.verify.ifeval.language import check_language
from rlvr.verify.ifeval.text import count_keyword, count_sentences, count_words

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
