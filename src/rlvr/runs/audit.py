"""Typed records of `audit.json`, the readiness audit's verdicts: `AuditReport` (the file), one
`CheckRecord` per check with the check's typed evidence, and the measurements the checks share
(a paired base -> trained change, drift trends, contamination reports, reward shares).

The audit computes these records (rlvr.audit), writes them through `AuditReport.to_json`, and its
plots and reports draw from them; `read_audit` reads the file back with the same types, naming the
file and field on bad input. Floats that JSON writes as null (NaN: nothing to measure) read back as
NaN, so a record read from disk compares and formats as the one that was written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_serializer, model_validator

from rlvr.runs.records import RewardAudit, read_record
from rlvr.runs.review import ReviewSummary

__all__ = [
    "SCHEMA",
    "Alarm",
    "AnyCheck",
    "AuditReport",
    "CheckRecord",
    "ComputePair",
    "Construction",
    "ContaminationEvidence",
    "ContaminationReport",
    "DriftReport",
    "EVIDENCE",
    "Evidence",
    "EvalRead",
    "Example",
    "FormCount",
    "GreedyChange",
    "Guard",
    "Hacking",
    "HeldOutTrend",
    "HoldoutEvidence",
    "HumanEvidence",
    "KindShare",
    "MatchedComputeEvidence",
    "PairedChange",
    "ProbeFailure",
    "Real",
    "RewardShare",
    "RewardShares",
    "SecondExample",
    "SecondVerifier",
    "SeparationEvidence",
    "Series",
    "SetEntry",
    "SetExample",
    "Status",
    "StructureGroup",
    "StructureStats",
    "Table",
    "Trend",
    "VerifierEvidence",
    "read_audit",
]

SCHEMA = "rlvr.audit/1"
Status = Literal["pass", "warn", "fail"]


def _nan_if_null(v: Any) -> Any:
    return math.nan if v is None else v


Real = Annotated[float, BeforeValidator(_nan_if_null)]
"""A float that is NaN when there was nothing to measure; written as null, read back as NaN."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# ------------------------------------------------------------------ shared measurements
@dataclass(frozen=True)
class Table:
    """A table of the report: its title, column names and rows of cells."""

    title: str
    columns: list[str]
    rows: list[list[Any]]


@dataclass(frozen=True)
class EvalRead:
    """An evaluation the audit read, as the report lists it."""

    name: str
    path: str
    role: str  # trained, base, ablation or other
    split: str
    task: str
    judge: str = ""  # the LLM judge's error categories, when it was judged


@dataclass(frozen=True)
class GreedyChange:
    base: Real
    trained: Real
    pvalue: Real  # McNemar


@dataclass(frozen=True)
class PairedChange:
    """Base -> trained on the problems both evaluated: sampled pass@1 with its paired bootstrap CI, and
    greedy accuracy with McNemar's p when both evaluations decoded greedily."""

    source: str
    split: str
    n_problems: int
    base: Real
    trained: Real
    gain: Real
    ci: tuple[Real, Real]
    greedy: GreedyChange | None = None


@dataclass(frozen=True)
class Alarm:
    alarm: str
    level: str  # warn | fail
    message: str


@dataclass(frozen=True)
class Trend:
    """The mean of the first and the last 20% of logged steps, and late / early."""

    early: Real
    late: Real
    ratio: Real | None = None


@dataclass(frozen=True)
class HeldOutTrend:
    """Dev accuracy logged during training: its early and late window means and the gain."""

    source: str
    points: int
    early: Real
    late: Real
    gain: Real


@dataclass(frozen=True)
class Hacking:
    """Did the training reward rise while held-out accuracy did not?"""

    reward_early: Real
    reward_late: Real
    reward_rise: Real  # per unit of total reward weight
    heldout: HeldOutTrend | PairedChange | None
    note: str | None = None


@dataclass(frozen=True)
class Series:
    steps: list[int]
    values: list[Real]


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


@dataclass(frozen=True)
class Construction:
    """Whether a synthetic task's split rule holds for an evaluation set (arith: test/dev questions
    hash into their own split; holdout questions use templates training never uses)."""

    rule: str
    ok: bool
    violations: list[str] = field(default_factory=list)
    templates: list[str] | None = None  # holdout: its templates and training's
    train_templates: list[str] | None = None


@dataclass
class RewardShare:
    """One configured reward over training: its weighted mass, share of the total and gain."""

    reward: str  # the metrics name
    kind: str  # correctness | format | other
    weight: float
    steps: int
    mass: float  # sum over steps of |weight * mean reward|
    early: Real
    late: Real
    gain: Real
    share: Real = math.nan


@dataclass
class KindShare:
    share: Real
    gain: float
    rewards: list[str]
    gain_share: Real = math.nan


@dataclass
class RewardShares:
    rewards: list[RewardShare]
    kinds: dict[str, KindShare]  # correctness, format, other
    total_mass: float
    series: dict[str, Series]  # per reward: steps and weighted values


# ------------------------------------------------------------------ 1. matched compute
MetricRow = tuple[str, float | None, float | None, float | None, float | None, float | None]
"""`[metric, base value, base tokens/problem, trained value, trained tokens/problem, token ratio]`."""


class ComputePair(_Record):
    """A base and a trained evaluation of one split, metric by metric with their token budgets."""

    split: str
    base: str
    trained: str
    multi_sample: list[str]
    token_ratio: float | None
    settings_differ: list[str]
    truncated_frac: dict[str, float]  # base, trained
    metrics: list[MetricRow]
    change: PairedChange | None = None


class MatchedComputeEvidence(_Record):
    pairs: list[ComputePair] = []
    evaluations: dict[str, str] = {}  # evaluation name -> role
    error: str | None = None  # the check could not run (or, where said, what it could not read)


# ------------------------------------------------------------------ 2. verifier
class FormCount(_Record):
    kind: str
    form: str
    n: int
    failed: int


class ProbeFailure(_Record):
    """A probe the verifier judged wrongly (an example of the report)."""

    kind: str
    form: str
    completion: str
    gold: str
    accepted: bool
    reason: str


class SecondExample(_Record):
    """A probe on which the second verifier disagrees with ours; its verdict sits under its own name
    (e.g. `math_verify`), kept as an extra field."""

    form: str
    completion: str
    gold: str
    rlvr: bool
    right: str


class Disagreement(_Record):
    form: str
    n: int
    rlvr_right: int


class SecondVerifier(_Record):
    name: str
    n: int
    disagreement: float | None
    rlvr_right: int
    second_right: int
    second_accuracy: float | None
    by_form: list[Disagreement] = []
    examples: list[SecondExample] = []


class VerifierEvidence(_Record):
    """The verifier alone on probes built from gold answers (see rlvr.audit.verifier_audit)."""

    n_golds: int = 0
    n_probes: int = 0
    recall: float | None = None
    specificity: float | None = None
    rejection: float | None = None
    counts: dict[str, int] = {}
    by_form: list[FormCount] = []
    failures: list[ProbeFailure] = []
    second: SecondVerifier | None = None
    source: str = ""
    thresholds: dict[str, tuple[float, float]] = {}
    error: str | None = None  # the check could not run (or, where said, what it could not read)


# ------------------------------------------------------------------ 3. reward separation
class SeparationEvidence(_Record):
    shares: RewardShares | None = None
    # the audited run and each ablation: run, kind, rewards, train_accuracy, dev_pass@1, <split>_pass@1
    ablations: list[dict[str, str | float | None]] = []
    thresholds: dict[str, float] = {}
    hint: str | None = None
    error: str | None = None  # the check could not run (or, where said, what it could not read)


# ------------------------------------------------------------------ 4. contamination
_REPORT_FIELDS = tuple(ContaminationReport.__dataclass_fields__)


class SetEntry(_Record):
    """One evaluation set compared with training (`report` None: nothing to compare). audit.json keeps
    the report's fields beside the set's, as it always has."""

    set: str
    source: str
    eval: str | None = None
    task: str | None = None
    report: ContaminationReport | None = None
    construction: Construction | None = None

    @model_validator(mode="before")
    @classmethod
    def _nest_report(cls, data: Any) -> Any:
        if isinstance(data, dict) and "report" not in data and "n_items" in data:
            report = {k: v for k, v in data.items() if k in _REPORT_FIELDS}
            data = {k: v for k, v in data.items() if k not in _REPORT_FIELDS} | {"report": report}
        return data

    @model_serializer(mode="wrap")
    def _flat_report(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        report = out.pop("report", None)
        construction = out.pop("construction", None)
        if report is None:
            out = {"set": out["set"], "source": out["source"]}
        else:
            out = {"set": out["set"], "eval": out["eval"], "task": out["task"], "source": out["source"], **report}
        if construction is not None:
            out["construction"] = construction
        return out

    def summary(self) -> str:
        if self.report is None:
            return f"{self.set}: not compared"
        r = self.report
        text = f"{self.set}: {r.exact_items} of {r.n_items} items in training, {r.ngram_share:.0%} n-gram flagged"
        if self.construction is not None:
            text += " (disjoint by construction: verified)" if self.construction.ok else " (construction violated)"
        return text


class SetExample(_Record):
    """A contamination example of the report: the set it came from and the item beside training's."""

    set: str
    id: str
    question: str
    overlap: float
    exact_duplicate: bool
    train_id: str | None
    train_question: str | None


class ContaminationEvidence(_Record):
    n_train: int | None = None
    train_hash_verified: bool | None = None
    sets: list[SetEntry] = []
    notes: list[str] = []
    thresholds: dict[str, float] = {}
    explanation: str | None = None  # why a templated task is judged on whole items
    error: str | None = None  # the training problems could not be re-created, or the check could not run


# ------------------------------------------------------------------ 5. private holdout
class Guard(_Record):
    ok: bool
    detail: str


class HoldoutEvidence(_Record):
    guard: Guard | None = None
    holdout_hashes: dict[str, str | None] = {}
    train_hashes: dict[str, str] = {}
    equal_hashes: list[str] = []
    trained_on_holdout_split: list[str] = []
    train_sample_ids: int = 0
    leaked_ids: list[str] = []
    side_by_side: dict[str, PairedChange] = {}
    error: str | None = None  # the check could not run (or, where said, what it could not read)


# ------------------------------------------------------------------ 6. drift
class StructureGroup(_Record):
    n: int
    lines: float | None = None
    arith_density: float | None = None
    steps: float | None = None
    tokens: float | None = None


class StructureStats(_Record):
    """Mean structure of correct vs incorrect training completions."""

    n_rows: int
    correct: StructureGroup | None = None
    incorrect: StructureGroup | None = None


class DriftReport(_Record):
    """Trend evidence and alarms of a GRPO run (the trends are None when the run is too short), the
    structure of its training completions and whether each reward pays for correctness."""

    n_steps: int = 0
    min_steps: int = 0
    thresholds: dict[str, tuple[float, float]] = {}
    alarms: list[Alarm] = []
    series: dict[str, Series] = {}
    length: dict[str, Trend] = {}  # mean, correct, incorrect
    truncated_frac: Trend | None = None
    entropy: Trend | None = None
    zero_std_frac: Trend | None = None
    hacking: Hacking | None = None
    structure: StructureStats | None = None
    reward_flags: list[RewardAudit] = []
    error: str | None = None  # the check could not run (or, where said, what it could not read)

    def alarm(self, name: str, level: str | None, message: str) -> None:
        if level is not None:
            self.alarms.append(Alarm(name, level, message))


# ------------------------------------------------------------------ 7. human judgment
class HumanEvidence(_Record):
    eval: str | None = None  # the labelled evaluation the verdict is about
    schema_: str | None = Field(None, alias="schema")
    summary: ReviewSummary | None = None
    thresholds: dict[str, float] = {}
    all: list[str] = []  # every evaluation with a labelled slice
    found: list[str] | None = None
    error: str | None = None  # its stats.json could not be read, or the check could not run


# ------------------------------------------------------------------ the file
class CheckRecord(_Record):
    """One check's verdict as audit.json keeps it."""

    title: str
    about: str = ""
    name: str
    status: Status
    summary: str
    evidence: Any
    examples: list[Any] = []
    tables: list[Table] = []


class MatchedComputeCheck(CheckRecord):
    name: Literal["matched_compute"]
    evidence: MatchedComputeEvidence


class VerifierCheck(CheckRecord):
    name: Literal["verifier"]
    evidence: VerifierEvidence
    examples: list[ProbeFailure | SecondExample] = []


class SeparationCheck(CheckRecord):
    name: Literal["reward_separation"]
    evidence: SeparationEvidence


class ContaminationCheck(CheckRecord):
    name: Literal["contamination"]
    evidence: ContaminationEvidence
    examples: list[SetExample] = []


class HoldoutCheck(CheckRecord):
    name: Literal["holdout"]
    evidence: HoldoutEvidence


class DriftCheck(CheckRecord):
    name: Literal["drift"]
    evidence: DriftReport


class HumanCheck(CheckRecord):
    name: Literal["human"]
    evidence: HumanEvidence


Evidence = (
    MatchedComputeEvidence | VerifierEvidence | SeparationEvidence | ContaminationEvidence | HoldoutEvidence
    | DriftReport | HumanEvidence
)  # fmt: skip
"""Any check's evidence record."""

EVIDENCE: dict[str, type[Evidence]] = {
    "matched_compute": MatchedComputeEvidence,
    "verifier": VerifierEvidence,
    "reward_separation": SeparationEvidence,
    "contamination": ContaminationEvidence,
    "holdout": HoldoutEvidence,
    "drift": DriftReport,
    "human": HumanEvidence,
}
"""Each check's evidence type; every one has `error`, set when the check could not run."""

AnyCheck = Annotated[
    MatchedComputeCheck | VerifierCheck | SeparationCheck | ContaminationCheck | HoldoutCheck | DriftCheck | HumanCheck,
    Field(discriminator="name"),
]


class AuditReport(_Record):
    """`audit.json`: the overall status, the evaluations and ablations read, and the seven checks."""

    schema_version: int = 1
    schema_: str = Field(SCHEMA, alias="schema")
    created: str
    run_dir: str
    status: Status
    counts: dict[str, int]
    strict: bool = False
    evaluations: list[EvalRead] = []
    ablations: list[str] = []
    checks: list[AnyCheck] = []

    def check(self, name: str) -> CheckRecord:
        return next(c for c in self.checks if c.name == name)

    def to_json(self) -> dict[str, Any]:
        """The file's contents (NaN still NaN: `runs.write_json` writes it as null)."""
        return self.model_dump(mode="json", by_alias=True, exclude={"schema_version"})


def read_audit(path: str | Path) -> AuditReport:
    """The `audit.json` of an audit folder (or the file itself), validated."""
    return read_record(AuditReport, Path(path), "audit.json")
