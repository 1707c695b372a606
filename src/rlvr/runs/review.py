"""Typed files of a review folder (schemas in docs/review.md): `export.json` (`rlvr review export`: where
the slice came from) and `stats.json` (`rlvr review stats`: what the audit's check 7 reads). Keys as
written (`pass@1`) are the fields' aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, ValidationError

from rlvr.runs.io import RunFileError, read_json
from rlvr.runs.records import Record, read_record, validation_line

__all__ = [
    "Agreement",
    "AgreementPair",
    "DifficultyBasis",
    "ClassifierStats",
    "Estimate",
    "Headline",
    "Pass1Headline",
    "ReviewStats",
    "ReviewSummary",
    "ReviewedEval",
    "SliceExport",
    "StratumAgreement",
    "StrictHeadline",
    "Verifiers",
    "read_review_stats",
    "read_reviewed_eval",
    "read_slice_export",
]


DifficultyBasis = Literal["pass_rate", "n_steps"]  # what a slice's `difficulty` stratum was computed from


class ReviewedEval(Record):
    """The evaluation a slice was drawn from, as its `eval.json` recorded it (None where it did not);
    `export.json` and `stats.json` carry it as `eval`."""

    model: str | None = None
    task: str | None = None
    split: str | None = None
    n_samples: int | None = None
    temperature: float | None = None
    metrics: dict[str, JsonValue] | None = None  # copied as written: the review reads none of them


class SliceExport(Record):
    """`export.json`: the evaluation and seed a slice came from, its size, the verifier's count of
    correct completions over the whole evaluation (for the corrected pass@1) and the strata tallies."""

    schema_: str = Field("rlvr.review.slice/1", alias="schema")
    eval_dir: str
    eval: ReviewedEval = ReviewedEval()
    seed: int
    n_requested: int
    n: int
    n_population: int
    population_correct: int
    difficulty_basis: DifficultyBasis
    strata_population: dict[str, dict[str, int]]  # dimension -> value -> completions
    strata_slice: dict[str, dict[str, int]]
    samples_sha256: str


class Estimate(Record):
    """A number and its 95% CI; both None where undefined (nothing labelled)."""

    value: float | None = None
    ci: list[float] | None = None


class AgreementPair(Record):
    """Two reviewers (sorted names) on the items both labelled: raw agreement and Cohen's kappa."""

    a: str
    b: str
    n: int
    answer_agreement: float | None = None
    answer_kappa: float | None = None
    reasoning_agreement: float | None = None
    reasoning_kappa: float | None = None


class ClassifierStats(Record):
    """A binary judge against people (positive = correct): confusion counts and rates."""

    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None = None
    recall: float | None = None
    accuracy: float | None = None
    kappa: float | None = None


class Agreement(Record):
    pairs: list[AgreementPair] = []
    answer_kappa_min: float | None = None
    items_multiply_labelled: int = 0


class Verifiers(Record):
    """The verifier (and a second verifier, and the process score vs reasoning validity, when the
    samples have them) against the consensus labels."""

    verifier: ClassifierStats
    verifier2: ClassifierStats | None = None
    process: ClassifierStats | None = None


class Pass1Headline(Record):
    n: int
    verifier: Estimate = Estimate()
    human: Estimate = Estimate()
    human_minus_verifier: Estimate = Estimate()
    corrected: Estimate = Estimate()  # population pass@1 re-estimated with the human labels
    population_verifier: float | None = None  # the verifier's pass@1 over the whole evaluation


class StrictHeadline(Record):
    n: int
    human: Estimate = Estimate()


class Headline(Record):
    pass_at_1: Pass1Headline = Field(alias="pass@1")
    strict_at_1: StrictHeadline = Field(alias="strict@1")


class ReviewSummary(Record):
    """The flat numbers the readiness audit (check 7) reads."""

    n_labelled: int = 0
    n_reviewers: int = 0
    answer_kappa_min: float | None = None
    verifier_precision: float | None = None
    verifier_recall: float | None = None
    pass_at_1_verifier: float | None = Field(None, alias="pass@1_verifier")
    pass_at_1_corrected: float | None = Field(None, alias="pass@1_corrected")
    pass_at_1_corrected_ci: list[float] | None = Field(None, alias="pass@1_corrected_ci")
    verifier_in_corrected_ci: bool | None = Field(None, alias="verifier_pass@1_in_corrected_ci")


class StratumAgreement(Record):
    n: int
    verifier_agrees: float


class ReviewStats(Record):
    """`stats.json`: agreement, verifiers against people, the headline pass@1 with its human
    correction, error categories and agreement by stratum."""

    schema_version: int = 1
    schema_: str = Field("rlvr.review.stats/1", alias="schema")
    review_dir: str
    eval: ReviewedEval | None = None  # as export.json recorded it; None when the folder has no export.json
    seed: int
    n_items: int
    n_labelled: int
    coverage: float
    reviewers: dict[str, int] = {}
    summary: ReviewSummary
    agreement: Agreement
    verifiers: Verifiers
    headline: Headline
    errors: dict[str, int] = {}
    by_stratum: dict[str, dict[str, StratumAgreement]] = {}

    def to_json(self) -> dict[str, JsonValue]:
        """The file's contents (keys as written; a verifier the samples lack is left out)."""
        out = self.model_dump(mode="json", by_alias=True)
        out["verifiers"] = {k: v for k, v in out["verifiers"].items() if v is not None}
        return out


def read_review_stats(path: str | Path) -> ReviewStats:
    """The `stats.json` of a review folder (or the file itself), validated."""
    return read_record(ReviewStats, path, "stats.json")


def read_slice_export(path: str | Path) -> SliceExport:
    """The `export.json` of a review folder (or the file itself), validated."""
    return read_record(SliceExport, path, "export.json")


def read_reviewed_eval(path: str | Path) -> ReviewedEval:
    """The fields of an `eval.json` (the file itself) that a review records; the others are neither
    kept nor checked, so an evaluation folder of any rlvr version can be reviewed."""
    file = Path(path)
    raw = read_json(file)
    try:
        return ReviewedEval.model_validate({k: raw[k] for k in ReviewedEval.model_fields if k in raw})
    except ValidationError as e:
        raise RunFileError(validation_line(file, e)) from None
