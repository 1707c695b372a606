"""Typed records of the run-folder files that cross module boundaries: `eval.json` (an evaluation's
metrics and per-problem results) and `manifest.json` (what reproduces a run).

Readers validate once, at the file, and name the file and field on bad input; everything after works
with attributes a type checker follows. Unknown extra keys are kept (`extra="allow"`): a newer rlvr
may add fields without breaking an older reader of the same schema version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from rlvr.runs.io import RunFileError, iter_jsonl, read_json

__all__ = [
    "DataRef",
    "DemoAudit",
    "DemoSplit",
    "DemoSummary",
    "DemoTest",
    "DifficultyResult",
    "EvalResult",
    "EvalSample",
    "Fidelity",
    "FidelityBlock",
    "Host",
    "JudgedSample",
    "JudgeSummary",
    "Manifest",
    "Metric",
    "ModelInfo",
    "ModelPaths",
    "Paths",
    "ProblemResult",
    "RewardAudit",
    "Sample",
    "Spread",
    "StudyComparison",
    "StudyCondition",
    "StudyJobResult",
    "StudyPooled",
    "StudyResult",
    "StudyRun",
    "TrainSample",
    "read_eval",
    "read_judge",
    "read_manifest",
    "read_record",
    "read_samples",
    "read_study",
    "validation_line",
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class Metric(_Record):
    """One metric of an evaluation: its value, 95% CI, k, samples per problem and token budget."""

    value: float | None = None
    ci: list[float | None] | None = None
    k: int | None = None
    n: int | None = None
    tokens_per_problem: float | None = None


class ProblemResult(_Record):
    """One problem of an evaluation: `correct` of `n` samples, mean tokens, greedy correctness."""

    id: str
    n: int
    correct: int
    tokens: float
    greedy: bool | None = None
    n_steps: int | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        if not isinstance(v, str):
            raise ValueError(f"missing or not a string, got {v!r}")
        return v

    @field_validator("n", mode="before")
    @classmethod
    def _n(cls, v: Any) -> Any:
        if not _count(v) or v < 1:
            raise ValueError(f"expected a sample count >= 1, got {v!r}")
        return v

    @field_validator("correct", mode="before")
    @classmethod
    def _correct(cls, v: Any, info: ValidationInfo) -> Any:
        n = info.data.get("n")
        if not _count(v) or not 0 <= v <= (n if isinstance(n, int) else v):
            raise ValueError(f"expected a count of correct samples in 0..{n}, got {v!r}")
        return v

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"missing or not a number, got {v!r}")
        return v

    @field_validator("greedy", mode="before")
    @classmethod
    def _greedy(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, bool):
            raise ValueError(f"expected true or false, got {v!r}")
        return v


class DifficultyResult(_Record):
    """The problems of one gold step count in an evaluation: how many, sampled pass@1, greedy accuracy."""

    n_problems: int
    pass_at_1: float = Field(alias="pass@1")
    greedy: float | None = None  # unset without greedy decoding


class FidelityBlock(_Record):
    """Reasoning fidelity of a set of completions (`rlvr.evaluate.fidelity`): each a mean over the
    completions; None (null in the file) where it is undefined (`valid_given_correct` with none correct)."""

    n_completions: int
    cot_pass_at_1: float | None = Field(alias="cot_pass@1")
    trace_validity: float | None
    chain_length_deviation: float | None
    process_step_ratio: float | None
    valid_given_correct: float | None


class Fidelity(_Record):
    """`fidelity` of eval.json: over all completions, and by the gold solution's step count."""

    overall: FidelityBlock | None = None
    by_steps: dict[str, FidelityBlock] = {}


class EvalResult(_Record):
    """`eval.json`: what was evaluated, how (sampling settings, budget), every metric and every problem.
    Written by `rlvr eval` (`rlvr.evaluate.evaluation`); docs/evaluation.md lists the fields."""

    schema_version: int = 1
    model: str = ""
    task: str
    preset: str | None = None
    split: str
    data_hash: str | None = None
    n_problems: int | None = None
    n_samples: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_new_tokens: int | None = None
    prompt_format: str | None = None
    engine: str | None = None
    truncated_frac: float | None = None
    greedy_truncated_frac: float | None = None
    tokens_per_sample: float | None = None
    metrics: dict[str, Metric]
    by_difficulty: dict[str, DifficultyResult] = {}
    per_problem: list[ProblemResult]
    fidelity: Fidelity = Field(default_factory=Fidelity)
    seconds: float | None = None

    def metric(self, name: str) -> Metric | None:
        """The metric `name` when it has a value."""
        m = self.metrics.get(name)
        return m if m is not None and m.value is not None else None

    def setting(self, name: str) -> Any:
        """A sampling setting or other top-level field by name (None when absent)."""
        return getattr(self, name, None)


class DataRef(_Record):
    """One data split a run used: task, number of problems and the problems' hash."""

    task: str | None = None
    n: int | None = None
    hash: str | None = None
    skipped_long_prompts: list[str] = []  # train: ids left out because their prompt was too long


class Host(_Record):
    """The machine a run ran on."""

    platform: str | None = None
    cpus: int | None = None


class ModelPaths(_Record):
    """Where a run's model input was: its absolute path and its path relative to the run folder (so
    a moved or copied group of run folders still finds it)."""

    absolute: str | None = None
    from_run: str | None = None


class Paths(_Record):
    """The inputs a run read from disk (`manifest.json` `paths`)."""

    model: ModelPaths | None = None
    base: str | None = None  # a study's base model


class ModelInfo(_Record):
    """The model a command loaded: its path and number of parameters."""

    path: str | None = None
    parameters: int | None = None


class Manifest(_Record):
    """`manifest.json`: the command, its argv, seeds, data hashes, package versions, git commit, host,
    the resolved config, where the model input was, and whether the run finished."""

    schema_version: int = 1
    command: str | None = None
    argv: list[str] = []
    created: str | None = None
    git_commit: str | None = None
    versions: dict[str, str] = {}
    host: Host = Field(default_factory=Host)
    seeds: dict[str, int | list[int]] = {}  # what each seed drives (train, sampling, ...) -> seed(s)
    data: dict[str, DataRef] = {}
    config: dict[str, Any] | None = None  # the command's resolved config (its config.yaml), as values
    paths: Paths = Field(default_factory=Paths)
    resumed_from: str | None = None  # when the run was resumed: the first start's `created`
    model: ModelInfo | None = None
    objective: dict[str, str | int | float | bool | None] | None = None  # train: the resolved objective's settings
    prompt_format: str | None = None
    world_size: int | None = None  # train: data-parallel ranks
    reward_files: dict[str, str] = {}  # train: each reward file's sha256
    base_model: str | None = None  # search: the base every screen trains from
    finished: bool = False
    wall_s: float | None = None
    steps_done: int | None = None  # sft: steps run (fewer than asked when a time budget ran out)
    failed: list[str] = []  # study: the jobs that failed

    @field_validator("data", mode="before")
    @classmethod
    def _legacy_skipped(cls, v: Any) -> Any:
        """Manifests written before 2026-12-02 kept `data.skipped_long_prompts` beside the splits."""
        if isinstance(v, dict) and isinstance(v.get("skipped_long_prompts"), list):
            v = dict(v)
            skipped = v.pop("skipped_long_prompts")
            if isinstance(v.get("train"), dict):
                v["train"] = {**v["train"], "skipped_long_prompts": skipped}
        return v

    def data_hash(self, split: str) -> str | None:
        """The hash of the problems the run used for `split` (train, dev, test, holdout), if recorded."""
        ref = self.data.get(split)
        return ref.hash if ref is not None else None


class Sample(_Record):
    """One completion of `samples.jsonl` (an evaluation) or `samples/train.jsonl` (training); fields
    either file lacks are None (docs/outputs.md lists both)."""

    problem_id: str | None = None
    completion: str | None = None
    correct: bool | None = None
    tokens: int | None = None
    truncated: bool | None = None
    rewards: dict[str, float | None] = {}  # training: each reward's value
    step: int | None = None  # training
    group: int | None = None  # training
    total: float | None = None  # training
    advantage: float | None = None  # training
    sample: int | None = None  # evaluation: the sample's index for its problem
    question: str | None = None  # evaluation
    gold: str | None = None  # evaluation
    gold_solution: str | None = None  # evaluation
    parsed: str | None = None  # evaluation
    reason: str | None = None  # evaluation: the verifier's reason


class TrainSample(_Record):
    """One row of `samples/train.jsonl` as the GRPO trainer writes it: a completion of a sampled group
    with each reward's value, the total (None: unscorable), its advantage and the verifier's verdict.
    `Sample` reads it back (with the evaluation samples' fields)."""

    step: int
    problem_id: str
    group: int  # the group's index within the step
    completion: str
    tokens: int
    truncated: bool
    rewards: dict[str, float | None]
    total: float | None
    advantage: float
    correct: bool


class EvalSample(_Record):
    """One row of `samples.jsonl` (`samples_greedy.jsonl`) as `rlvr eval` writes it: the problem, the
    completion and its verdict. `Sample` reads it back (with the training samples' fields)."""

    problem_id: str
    question: str
    prompt: str
    gold: str
    gold_solution: str
    gold_steps: list[tuple[str, str]]  # (expression, result) of each gold step
    n_steps: int
    sample: int  # the sample's index for its problem
    temperature: float
    completion: str
    parsed: str | None
    correct: bool
    reason: str  # the verifier's reason
    tokens: int
    truncated: bool


def read_samples(path: str | Path, *, missing_ok: bool = False) -> list[Sample]:
    """The rows of a samples file, validated; a bad row names the file, line and field."""
    path = Path(path)
    if missing_ok and not path.exists():
        return []
    out = []
    for no, row in iter_jsonl(path):
        try:
            out.append(Sample.model_validate(row))
        except ValidationError as e:
            raise RunFileError(validation_line(Path(f"{path}:{no}"), e)) from None
    return out


class JudgeSummary(_Record):
    """`judge.json` in an evaluation folder (`rlvr judge`): the LLM judge's error categories of the
    judged completions (counts and shares), and its request, cache and failure counts."""

    schema_version: int = 1
    model: str | None = None
    base_url: str | None = None
    prompt_version: str | None = None
    only_incorrect: bool = True
    n_judged: int = 0
    categories: dict[str, int] = {}
    fractions: dict[str, float] = {}
    n_parse_errors: int = 0
    n_errors: int = 0
    n_cached: int = 0
    n_requests: int = 0

    def brief(self) -> str:
        """`calculation_error 12, missing_step 5 (20 judged by M)`, largest first.

        >>> JudgeSummary(model="m", n_judged=3, categories={"other": 1, "missing_step": 2}).brief()
        'missing_step 2, other 1 (3 judged by m)'
        """
        cats = sorted(((c, k) for c, k in self.categories.items() if k), key=lambda ck: (-ck[1], ck[0]))
        return f"{', '.join(f'{c} {k}' for c, k in cats) or 'none'} ({self.n_judged} judged by {self.model})"


class JudgedSample(_Record):
    """One row of `judge.jsonl` (`rlvr judge`): the judged completion's sample and the judge's verdict;
    `cached` when the verdict came from the judge's cache, `error` when the request failed."""

    problem_id: str | None
    sample: int | None
    correct: bool | None
    parsed: str | None
    gold: str | None
    category: str
    explanation: str
    raw: str
    parse_error: str | None
    error: str | None
    cached: bool


class RewardAudit(_Record):
    """Does a reward pay for correctness? One reward over a run's training samples: its mean on correct
    and incorrect completions, its correlation with correctness and with length, and what is wrong with it
    (`flags`). Written by the audit's drift check (`rlvr.audit.drift.reward_flags`) and the search's screens."""

    reward: str
    kind: str
    n: int
    mean: float | None = None
    std: float | None = None
    mean_correct: float | None = None
    mean_incorrect: float | None = None
    corr_correct: float | None = None
    corr_length: float | None = None
    flags: list[str] = []
    note: str | None = None


class DemoTest(_Record):
    """One paired test of the demo's GRPO model against its SFT base (`evaluate.compare.PairedTest`)."""

    a: str
    b: str
    metric: str
    n_problems: int
    value_a: float
    value_b: float
    diff: float
    ci: list[float]
    test: str
    pvalue: float
    pvalue_adj: float | None = None


class DemoSplit(_Record):
    tests: list[DemoTest]
    metrics: dict[str, dict[str, Metric]]  # base / grpo -> metric name -> metric


class DemoAudit(_Record):
    status: str
    checks: dict[str, str]  # check -> pass / warn / fail


class DemoSummary(_Record):
    """`summary.json` of `rlvr demo`: the plan, per split the paired tests and both models' metrics,
    the audit's verdicts, and where each run and the report are."""

    schema_version: int = 1
    plan: dict[str, int]
    splits: dict[str, DemoSplit]
    audit: DemoAudit
    report: str
    runs: dict[str, str]


class Spread(_Record):
    """A number over seeds: mean, sample sd (None for one seed), min and max."""

    mean: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None


class StudyRun(_Record):
    """One condition x seed of a study: its folders, status and evaluation numbers."""

    seed: int
    status: str
    run_dir: str | None = None
    eval_dir: str | None = None
    train_seconds: float | None = None
    steps_done: int | None = None
    error: str | None = None
    pass_at_1: float | None = Field(None, alias="pass@1")
    greedy: float | None = None
    fidelity: dict[str, float | None] = {}
    judge: dict[str, int] | None = None


class StudyJobResult(_Record):
    """What one study job (an arm x seed) did: its folders, status, training time; a failed job is a
    result too. `rlvr.study.run.run_study_job` returns it; the analysis reads it."""

    key: str
    kind: str
    condition: str
    seed: int
    run_dir: str | None = None
    eval_dir: str
    status: str = "failed"
    reused: bool = False  # finished folders of an earlier (resumed) study
    train_seconds: float | None = None
    steps_done: int | None = None
    error: str | None = None
    traceback: str | None = None
    judge_error: str | None = None
    seconds: float | None = None


class PooledPass(_Record):
    value: float
    ci: list[float]
    seeds: Spread


class StudyPooled(_Record):
    """A condition pooled over its seeds (docs/study.md, "Statistics")."""

    pass_at_1: PooledPass = Field(alias="pass@1")
    greedy: Spread
    fidelity: dict[str, Spread]
    judge: dict[str, int] | None = None
    n_seeds: int


class StudyCondition(_Record):
    name: str
    kind: str
    runs: list[StudyRun]
    pooled: StudyPooled | None = None


class StudyComparison(_Record):
    """A paired test of `condition` against `reference` on the study's shared problems."""

    condition: str
    reference: str
    metric: str
    n_problems: int
    reference_value: float
    value: float
    diff: float
    ci: list[float]
    test: str
    pvalue: float
    pvalue_adj: float | None = None
    seeds: list[int]
    diff_per_seed: list[float]
    pvalue_per_seed: list[float] | None = None


class StudyResult(_Record):
    """`study.json`: the study's config, every condition x seed, the pooled metrics, the paired
    comparisons (Holm-adjusted), learning curves per condition (train accuracy per step by seed)."""

    schema_version: int = 1
    config: dict[str, Any]
    base: str
    split: str
    n_problems: int
    n_samples: int
    seeds: list[int]
    conditions: list[StudyCondition]
    comparisons: list[StudyComparison]
    correction: str = "holm"
    curves: dict[str, dict[str, list[float | None]]] = {}
    notes: list[str] = []
    failed: list[str] = []
    errors: dict[str, str | None] = {}

    def condition(self, name: str) -> StudyCondition:
        return next(c for c in self.conditions if c.name == name)

    def to_json(self) -> dict[str, Any]:
        """The file's contents (keys as written: `pass@1`)."""
        return self.model_dump(mode="json", by_alias=True)


def read_study(path: str | Path) -> StudyResult:
    """The `study.json` of a study folder (or the file itself), validated."""
    return read_record(StudyResult, path, "study.json")


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_line(file: Path, e: ValidationError) -> str:
    """The first error of a record's validation as one line: `FILE: field 'a[0].b': message`."""
    err = e.errors()[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "missing"
    return f"{file}: field '{_loc(tuple(err['loc']))}': {msg}" if err["loc"] else f"{file}: {msg}"


def _file(path: str | Path, name: str) -> Path:
    p = Path(path)
    return p / name if p.is_dir() else p


R = TypeVar("R", bound=BaseModel)


def read_record(model: type[R], path: str | Path, name: str) -> R:
    """The JSON file `name` of a folder (or `path` itself when it is a file), validated as `model`;
    a bad file is a RunFileError naming the file and the field."""
    file = _file(path, name)
    try:
        return model.model_validate(read_json(file))
    except ValidationError as e:
        raise RunFileError(validation_line(file, e)) from None


def read_eval(path: str | Path) -> EvalResult:
    """The `eval.json` of an evaluation folder (or the file itself), validated.

    >>> read_eval("/nonexistent")
    Traceback (most recent call last):
    ...
    rlvr.runs.io.RunFileError: /nonexistent: no eval.json (not an evaluation folder)
    """
    file = _file(path, "eval.json")
    if not file.exists():
        raise RunFileError(f"{path}: no eval.json (not an evaluation folder)")
    return read_record(EvalResult, file, "eval.json")


def read_judge(eval_dir: str | Path) -> JudgeSummary | None:
    """The LLM judge's `judge.json` of an evaluation folder, or None when it was never judged."""
    file = Path(eval_dir) / "judge.json"
    return read_record(JudgeSummary, file, "judge.json") if file.exists() else None


def read_manifest(path: str | Path) -> Manifest:
    """The `manifest.json` of a run folder (or the file itself), validated."""
    return read_record(Manifest, path, "manifest.json")
