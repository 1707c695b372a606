"""Typed results of a reward search (`rlvr search`, docs/search.md): one screening run's result as the
screen returns it and the store keeps it, and the search folder's `results.json` and
`calibration.json`. The report and `--resume` read these, never the raw JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from rlvr.runs.records import Record, RewardAudit, read_record

__all__ = [
    "Calibration",
    "CalibrationPoint",
    "CalibrationRow",
    "CandidateResult",
    "ControlResult",
    "DevScores",
    "EnsembleResult",
    "FinalComparison",
    "FinalTest",
    "PerProblem",
    "RoundSummary",
    "ScreenResult",
    "SearchResults",
    "SeedRun",
    "SeedsResult",
    "TrainSummary",
    "read_search_results",
]


class PerProblem(Record):
    """Per problem: correct and answered samples, greedy correctness (0/1); kept for paired tests."""

    ids: list[str]
    correct: list[int]
    answered: list[int]
    greedy: list[int]


class DevScores(Record):
    """A model on a split: sampled accuracy (pass@1) and F1 with 95% bootstrap CIs, greedy accuracy."""

    accuracy: float
    accuracy_ci: list[float] | None = None
    f1: float
    f1_ci: list[float] | None = None
    answered: float | None = None
    n_problems: int
    n_samples: int
    split: str | None = None
    greedy: float | None = None
    per_problem: PerProblem | None = None

    def short(self) -> DevScores:
        """The scores without the per-problem lists (what results.json keeps)."""
        return self.model_copy(update={"per_problem": None})


class TrainSummary(Record):
    """The screening run's training, from its metrics.jsonl."""

    accuracy_last10: float | None = None
    reward_last10: float | None = None
    candidate_errors: int = 0
    candidate_none_frac: float | None = 0.0
    candidate_last_errors: list[str] = []
    steps_run: int = 0


class ScreenResult(Record):
    """One screening run: train with the job's rewards, then score on the dev split. A failed run is a
    result too (`status: failed` with its error); `retryable` marks a worker that died."""

    key: str
    status: Literal["done", "failed"] = "failed"
    kind: str | None = None
    members: list[str] = []
    steps: int | None = None
    seed: int | None = None
    run_dir: str | None = None
    scores: DevScores | None = None
    train: TrainSummary | None = None
    reward_audit: RewardAudit | None = None
    error: str | None = None
    traceback: str | None = None
    retryable: bool = False
    seconds: float | None = None

    @property
    def done(self) -> bool:
        return self.status == "done" and self.scores is not None


class ControlResult(Record):
    status: str | None = None
    scores: DevScores | None = None
    error: str | None = None


class CandidateResult(Record):
    """A proposed candidate: its validation, and its best screening result (rank among the screened)."""

    rank: int | None = None
    name: str
    round: int | None = None
    description: str = ""
    parents: list[str] = []
    source: str = ""
    accepted: bool | None = None
    stage: str | None = None
    reason: str | None = None
    status: str = "not screened"  # rejected | done | failed | not screened
    error: str | None = None
    steps: int | None = None
    scores: DevScores | None = None
    train: TrainSummary | None = None
    reward_audit: RewardAudit | None = None


class RoundSummary(Record):
    round: int
    proposed: int
    accepted: int
    f1: list[float] = []
    best_f1: float | None = None


class EnsembleResult(Record):
    kind: str
    members: list[str]
    status: str | None = None
    error: str | None = None
    scores: DevScores | None = None
    reward_audit: RewardAudit | None = None


class SeedRun(Record):
    seed: int | None = None
    status: str | None = None
    scores: DevScores | None = None  # dev
    test: DevScores | None = None


class SeedsResult(Record):
    """The best ensemble retrained with more seeds: dev F1 and test pass@1 per seed, mean and sd."""

    ensemble: str
    runs: list[SeedRun]
    f1_mean: float | None = None
    f1_sd: float | None = None
    test_mean: float | None = None
    test_sd: float | None = None


class FinalTest(Record):
    """McNemar on greedy correctness and the paired pass@1 difference, `b` against `a` (the control)."""

    a: str
    b: str
    b01: int
    b10: int
    pvalue: float
    greedy_diff: float
    pass1_diff: float
    pass1_diff_ci: list[float]
    p_adjusted: float | None = None
    significant: bool | None = None


class FinalComparison(Record):
    split: str = "test"
    n_problems: int
    n_samples: int
    correction: str
    scores: dict[str, DevScores] = {}
    tests: list[FinalTest] = []


class CalibrationRow(Record):
    name: str
    short_f1: float | None = None
    full_f1: float | None = None
    full_f1_seed2: float | None = None


class CalibrationPoint(Record):
    """One screen length of the cost curve: every calibrated candidate screened with two seeds."""

    steps: int
    f1: list[float | None]  # per candidate, in the order of `Calibration.rows`
    f1_seed2: list[float | None]
    tau_seeds: float | None = None
    p_seeds: float | None = None
    seconds: float | None = None  # mean wall seconds of one screen at this length


class Calibration(Record):
    """`calibration.json` (`rlvr search calibrate`): does the short screen rank like the full run,
    and (with `--lengths`) how long must a screen be before two seeds agree on the ranking?"""

    short_steps: int
    full_steps: int
    n: int
    pick: Literal["top", "spread"] = "top"
    rows: list[CalibrationRow] = []
    tau_short_full: float | None = None
    p_short_full: float | None = None
    tau_seeds: float | None = None
    p_seeds: float | None = None
    curve: list[CalibrationPoint] = []


class SearchResults(Record):
    """`results.json`: the config, the control, every round and candidate, the ensembles, the seeds
    check, the final test comparison and (after `rlvr search calibrate`) the calibration."""

    schema_version: int = 1
    config: dict[str, Any] = {}  # the resolved SearchConfig as written
    base_model: str = ""
    wall_s: float | None = None
    control: ControlResult = ControlResult()
    rounds: list[RoundSummary] = []
    candidates: list[CandidateResult] = []
    ensembles: list[EnsembleResult] = []
    seeds: SeedsResult | None = None
    final: FinalComparison | None = None
    calibration: Calibration | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def read_search_results(path: str | Path) -> SearchResults:
    """The `results.json` of a search folder (or the file itself), validated."""
    return read_record(SearchResults, path, "results.json")
