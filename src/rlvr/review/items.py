"""Read an evaluation's `samples.jsonl` and a review folder's `slice.jsonl`, validated row by row; every
problem is a `ReviewError` naming the file, line and field, which the CLI prints and exits 2 on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from annotated_types import Len
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from rlvr import runs
from rlvr.runs.review import ReviewedEval, SliceExport, read_reviewed_eval, read_slice_export

__all__ = [
    "EXPORT_META",
    "SLICE_FILE",
    "ReviewError",
    "ReviewSample",
    "SliceItem",
    "item_id",
    "load_eval",
    "load_slice",
    "read_jsonl",
    "resolve_review_dir",
]

SLICE_FILE = "slice.jsonl"
EXPORT_META = "export.json"


R = TypeVar("R", bound=BaseModel)


class ReviewError(ValueError):
    """Bad input to a review command: the message is one line naming the file, line and field."""


def item_id(problem_id: str, sample: int) -> str:
    """The stable id of one completion: the same problem and sample index give the same id in
    every export, whatever the seed or the slice size.

    >>> item_id("gsm8k-test-0007", 3)
    'gsm8k-test-0007:3'
    """
    return f"{problem_id}:{sample}"


Step = Annotated[list[str], Len(2, 2)]  # [expr, result]


class ReviewSample(BaseModel):
    """One `samples.jsonl` row as the review reads it. Types are strict (a `"yes"` is not a bool); the
    fields after `correct` may be missing and take these defaults; `n_steps` defaults to the number of
    gold steps. Other keys are kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    problem_id: str
    question: str
    gold: str
    completion: str
    correct: bool
    sample: int = 0
    gold_solution: str = ""
    gold_steps: list[Step] = []
    n_steps: int | None = None
    temperature: float | None = None
    parsed: str | None = None
    reason: str = ""
    tokens: int = 0
    truncated: bool = False
    process_score: float | None = None
    rewards: dict[str, float | None] | None = None
    verifier2_correct: bool | None = None
    messages: list[dict[str, Any]] | None = None  # an environment's conversation, tool turns included

    @model_validator(mode="after")
    def _steps(self) -> ReviewSample:
        if self.n_steps is None:
            self.n_steps = len(self.gold_steps)
        return self


class SliceItem(ReviewSample):
    """One `slice.jsonl` row: a sample with its id, its place in the slice and its strata."""

    item_id: str  # the id the labels are keyed by (`item_id(problem_id, sample)` when exported)
    index: int = 0
    strata: dict[str, str]


def _row(model: type[R], path: Path, no: int, raw: dict[str, Any]) -> R:
    """`raw` validated as `model`, or a ReviewError naming the file, line and field."""
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        if err["type"] == "missing":
            raise ReviewError(f"{path}:{no}: missing field '{field}'") from None
        got = repr(err.get("input"))[:60]
        raise ReviewError(f"{path}:{no}: field '{field}': {err['msg'].lower()}, got {got}") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line_number, object)` for each non-blank line; a line that is not a JSON object is an error."""
    try:
        yield from runs.iter_jsonl(path)
    except runs.RunFileError as e:
        raise ReviewError(str(e)) from None


def load_eval(eval_dir: Path) -> tuple[ReviewedEval, list[ReviewSample]]:
    """`(the evaluation's model, task, split, ... from eval.json, validated samples sorted by
    (problem_id, sample))` of an evaluation folder.

    A missing `eval.json` is allowed (every field None); a missing or empty `samples.jsonl`, a bad row
    or two rows with the same `(problem_id, sample)` are errors.
    """
    meta = ReviewedEval()
    meta_path = eval_dir / "eval.json"
    if meta_path.exists():
        try:
            meta = read_reviewed_eval(meta_path)
        except runs.RunFileError as e:
            raise ReviewError(str(e)) from None
    path = eval_dir / "samples.jsonl"
    if not path.exists():
        raise ReviewError(f"{path}: not found (is {eval_dir} an evaluation folder?)")
    rows: list[ReviewSample] = []
    seen: dict[str, int] = {}
    for no, raw in read_jsonl(path):
        row = _row(ReviewSample, path, no, raw)
        key = item_id(row.problem_id, row.sample)
        if key in seen:
            raise ReviewError(f"{path}:{no}: duplicate problem_id/sample {key!r} (first on line {seen[key]})")
        seen[key] = no
        rows.append(row)
    if not rows:
        raise ReviewError(f"{path}: no samples")
    rows.sort(key=lambda r: (r.problem_id, r.sample))
    return meta, rows


def resolve_review_dir(path: Path) -> Path:
    """The review folder for `path`: `path` itself if it holds `slice.jsonl`, else `path/review`."""
    for cand in (path, path / "review"):
        if (cand / SLICE_FILE).is_file():
            return cand
    raise ReviewError(f"{path}: no {SLICE_FILE} here or in {path / 'review'} (run `rlvr review export` first)")


def load_slice(review_dir: Path) -> tuple[SliceExport | None, list[SliceItem]]:
    """`(export.json, slice items in review order)` of a review folder; None for a folder without
    `export.json` (a slice not written by `rlvr review export`)."""
    path = review_dir / SLICE_FILE
    items = [_row(SliceItem, path, no, row) for no, row in read_jsonl(path)]
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise ReviewError(f"{path}: duplicate item_id")
    if not items:
        raise ReviewError(f"{path}: empty slice")
    meta_path = review_dir / EXPORT_META
    try:
        meta = read_slice_export(meta_path) if meta_path.exists() else None
    except runs.RunFileError as e:
        raise ReviewError(str(e)) from None
    return meta, items
