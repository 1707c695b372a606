"""Typed records of an evaluation folder: `eval.json` (`EvalResult`: metrics with n, k, token budget and
CI, per-problem results, fidelity, by difficulty), its `samples.jsonl` rows as `rlvr eval` writes them
(`EvalSample`), and the LLM judge's `judge.json` (`JudgeSummary`) and `judge.jsonl` rows (`JudgedSample`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator

from rlvr.runs.io import RunFileError
from rlvr.runs.records import Record, _file, read_record

__all__ = [
    "DifficultyResult",
    "EvalResult",
    "EvalSample",
    "Fidelity",
    "FidelityBlock",
    "JudgeSummary",
    "JudgedSample",
    "Metric",
    "ProblemResult",
    "read_eval",
    "read_judge",
]


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _expect(ok: Callable[[Any], bool], what: str) -> BeforeValidator:
    """A check of a field's raw value: `what` and the value as its error."""

    def check(v: Any) -> Any:
        if not ok(v):
            raise ValueError(f"{what}, got {v!r}")
        return v

    return BeforeValidator(check)


class Metric(Record):
    """One metric of an evaluation: its value, 95% CI, k, samples per problem and token budget."""

    value: float | None = None
    ci: list[float | None] | None = None
    k: int | None = None
    n: int | None = None
    tokens_per_problem: float | None = None


class ProblemResult(Record):
    """One problem of an evaluation: `correct` of `n` samples, mean tokens, greedy correctness."""

    id: Annotated[str, _expect(lambda v: isinstance(v, str), "missing or not a string")]
    n: Annotated[int, _expect(lambda v: _count(v) and v >= 1, "expected a sample count >= 1")]
    correct: int
    tokens: Annotated[float, _expect(lambda v: _count(v) or isinstance(v, float), "missing or not a number")]
    greedy: Annotated[bool | None, _expect(lambda v: v is None or isinstance(v, bool), "expected true or false")] = None
    n_steps: int | None = None

    @field_validator("correct", mode="before")
    @classmethod
    def _correct(cls, v: Any, info: ValidationInfo) -> Any:
        n = info.data.get("n")
        if not _count(v) or not 0 <= v <= (n if isinstance(n, int) else v):
            raise ValueError(f"expected a count of correct samples in 0..{n}, got {v!r}")
        return v


class DifficultyResult(Record):
    """The problems of one gold step count in an evaluation: how many, sampled pass@1, greedy accuracy."""

    n_problems: int
    pass_at_1: float = Field(alias="pass@1")
    greedy: float | None = None  # unset without greedy decoding


class FidelityBlock(Record):
    """Reasoning fidelity of a set of completions (`rlvr.evaluate.fidelity`): each a mean over the
    completions; None (null in the file) where it is undefined (`valid_given_correct` with none correct)."""

    n_completions: int
    cot_pass_at_1: float | None = Field(alias="cot_pass@1")
    trace_validity: float | None
    chain_length_deviation: float | None
    process_step_ratio: float | None
    valid_given_correct: float | None


class Fidelity(Record):
    """`fidelity` of eval.json: over all completions, and by the gold solution's step count."""

    overall: FidelityBlock | None = None
    by_steps: dict[str, FidelityBlock] = {}


class EvalResult(Record):
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
    # the whole `sampling:` record the evaluation ran with (prompt_format resolved), stop strings and
    # system prompt included: what the audit's matched-settings check compares; {} in older files
    sampling: dict[str, Any] = {}
    engine: str | None = None
    truncated_frac: float | None = None
    greedy_truncated_frac: float | None = None
    tokens_per_sample: float | None = None
    env_tokens_per_sample: float | None = None  # with an environment: its tools' tokens per conversation
    # the sampled completions' verdicts by status (correct, wrong, unparseable_answer, timeout, ...);
    # {} in older files. A timeout or infra_error is no verdict: counted here, never as a wrong answer's 0
    statuses: dict[str, int] = {}
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
        """A sampling setting (from the `sampling` record, else the top-level field of older files) or
        another top-level field by name (None when absent)."""
        return self.sampling[name] if name in self.sampling else getattr(self, name, None)


class EvalSample(Record):
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
    status: str | None = None  # the verdict's status (rlvr.verify.STATUSES); None in older files
    tokens: int  # the model's tokens (with an environment, its tools' are `env_tokens`)
    truncated: bool
    # with an environment only (left out of the file otherwise): the conversation after the prompt, its tools' tokens
    messages: list[dict[str, Any]] | None = Field(None, exclude_if=lambda v: v is None)
    env_tokens: int | None = Field(None, exclude_if=lambda v: v is None)


class JudgeSummary(Record):
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


class JudgedSample(Record):
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
