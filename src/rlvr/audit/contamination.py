"""Overlap between training and evaluation questions (check 4): word 8-gram overlap, exact and
templated duplicates (`build_index`, `contamination_report`). The measures, why exact n-gram sets
rather than MinHash, and templated data: docs/audit.md, "4. Contamination"."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["ContaminationReport", "TrainIndex", "build_index", "contamination_report", "masked", "words"]


@dataclass(frozen=True)
class Example:
    """An evaluation item next to its identical or closest training question."""

    id: str
    question: str
    overlap: float
    exact_duplicate: bool
    train_id: str | None
    train_question: str | None


@dataclass(frozen=True)
class ContaminationReport:
    """One evaluation set against the training data: n-gram contaminated items (overlap above
    `item_threshold`), exact duplicates, template matches, the raw n-gram overlap, every item's overlap
    (for the histogram) and examples."""

    n_items: int
    n_train: int
    ngram_n: int
    item_threshold: float
    raw_overlap: float
    mean_item_overlap: float
    ngram_items: int
    ngram_share: float
    exact_items: int
    exact_share: float
    template_share: float
    overlaps: list[float]
    examples: list[Example]


_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def words(text: str) -> list[str]:
    """Lower-cased words and numbers, punctuation and thousands separators dropped: `$1,000` reads `1000`."""
    return _WORD.findall(_THOUSANDS.sub("", text.lower()))


def masked(text: str) -> str:
    """The question's words with every number replaced by `#` (its template, for templated data)."""
    return " ".join("#" if w[0].isdigit() else w for w in words(text))


def ngrams(ws: Sequence[str], n: int = 8) -> set[int]:
    """Hashed word n-grams of a word list; a list shorter than n is one n-gram."""
    if len(ws) < n:
        return {hash(" ".join(ws))} if ws else set()
    return {hash(" ".join(ws[i : i + n])) for i in range(len(ws) - n + 1)}


@dataclass
class TrainIndex:
    """The training questions as hashed n-grams, normalised texts and templates."""

    n: int
    ids: list[str]
    questions: list[str]
    doc_grams: list[set[int]]
    grams: set[int] = field(default_factory=set)
    exact: dict[str, int] = field(default_factory=dict)
    templates: set[str] = field(default_factory=set)

    def closest(self, grams: set[int]) -> int | None:
        """Index of the training question sharing the most n-grams with `grams` (None: none shares any)."""
        best, best_i = 0, None
        for i, doc in enumerate(self.doc_grams):
            shared = len(grams & doc)
            if shared > best:
                best, best_i = shared, i
        return best_i


def build_index(train: Sequence[tuple[str, str]], n: int = 8) -> TrainIndex:
    """Index `(id, question)` pairs of the training data."""
    index = TrainIndex(n, [i for i, _ in train], [q for _, q in train], [])
    for j, (_, q) in enumerate(train):
        ws = words(q)
        grams = ngrams(ws, n)
        index.doc_grams.append(grams)
        index.grams |= grams
        index.exact.setdefault(" ".join(ws), j)
        index.templates.add(" ".join("#" if w[0].isdigit() else w for w in ws))
    return index


@dataclass(frozen=True)
class _Item:
    id: str
    question: str
    grams: set[int]  # hashed n-grams
    hits: int
    exact: int | None  # index of the identical training question
    template: bool

    @property
    def overlap(self) -> float:
        return self.hits / len(self.grams) if self.grams else 0.0


def _item(index: TrainIndex, item_id: str, question: str) -> _Item:
    ws = words(question)
    grams = ngrams(ws, index.n)
    exact, template = index.exact.get(" ".join(ws)), masked(question) in index.templates
    return _Item(item_id, question, grams, len(grams & index.grams), exact, template)


def _example(index: TrainIndex, it: _Item) -> Example:
    j = it.exact if it.exact is not None else index.closest(it.grams)
    train_id, train_question = (index.ids[j], index.questions[j]) if j is not None else (None, None)
    return Example(it.id, it.question, round(it.overlap, 3), it.exact is not None, train_id, train_question)


def contamination_report(
    index: TrainIndex,
    items: Sequence[tuple[str, str]],
    *,
    item_threshold: float = 0.5,
    max_examples: int = 5,
) -> ContaminationReport:
    """Overlap of evaluation `(id, question)` items with the indexed training data; examples: exact
    duplicates first, then the most overlapping items, each with its closest training question."""
    rows = [_item(index, i, q) for i, q in items]
    n = len(rows)
    flagged = [r for r in rows if r.overlap > item_threshold]
    exact = [r for r in rows if r.exact is not None]
    ranked = sorted(rows, key=lambda r: (r.exact is None, -r.overlap))
    examples = [_example(index, r) for r in ranked[:max_examples] if r.exact is not None or r.overlap > 0]
    total_grams = sum(len(r.grams) for r in rows)
    return ContaminationReport(
        n_items=n,
        n_train=len(index.ids),
        ngram_n=index.n,
        item_threshold=item_threshold,
        raw_overlap=sum(r.hits for r in rows) / total_grams if total_grams else 0.0,
        mean_item_overlap=sum(r.overlap for r in rows) / n if n else 0.0,
        ngram_items=len(flagged),
        ngram_share=len(flagged) / n if n else 0.0,
        exact_items=len(exact),
        exact_share=len(exact) / n if n else 0.0,
        template_share=sum(r.template for r in rows) / n if n else 0.0,
        overlaps=[round(r.overlap, 4) for r in rows],
        examples=examples,
    )
