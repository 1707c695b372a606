"""Read an evaluation's `samples.jsonl` and a review folder's `slice.jsonl`, validated row by row.

Every problem is reported as a `ReviewError` with a one-line message naming the file, the line and
the field (`samples.jsonl:12: field 'correct' must be a bool, got 'yes'`), which the CLI prints and
turns into exit status 2.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rlvr import runs

__all__ = [
    "EXPORT_META",
    "SLICE_FILE",
    "ReviewError",
    "item_id",
    "load_eval",
    "load_slice",
    "read_jsonl",
    "resolve_review_dir",
]

SLICE_FILE = "slice.jsonl"
EXPORT_META = "export.json"


class ReviewError(ValueError):
    """Bad input to a review command: the message is one line naming the file, line and field."""


def item_id(problem_id: str, sample: int) -> str:
    """The stable id of one completion: the same problem and sample index give the same id in
    every export, whatever the seed or the slice size.

    >>> item_id("gsm8k-test-0007", 3)
    'gsm8k-test-0007:3'
    """
    return f"{problem_id}:{sample}"


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_steps(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(s, list | tuple) and len(s) == 2 and all(isinstance(x, str) for x in s) for s in v
    )


def _is_rewards(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and (x is None or _is_num(x)) for k, x in v.items())


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


_str = lambda v: isinstance(v, str)  # noqa: E731
# field -> (check, description, default when missing; `...` = required)
_SAMPLE_FIELDS: dict[str, tuple[Callable[[Any], bool], str, Any]] = {
    "problem_id": (_str, "a string", ...),
    "question": (_str, "a string", ...),
    "gold": (_str, "a string", ...),
    "completion": (_str, "a string", ...),
    "correct": (_is_bool, "a bool", ...),
    "sample": (_is_int, "an int", 0),
    "gold_solution": (_str, "a string", ""),
    "gold_steps": (_is_steps, "a list of [expr, result] string pairs", []),
    "n_steps": (_opt(_is_int), "an int", None),
    "temperature": (_opt(_is_num), "a number", None),
    "parsed": (_opt(_str), "a string or null", None),
    "reason": (_str, "a string", ""),
    "tokens": (_is_int, "an int", 0),
    "truncated": (_is_bool, "a bool", False),
    "process_score": (_opt(_is_num), "a number or null", None),
    "rewards": (_opt(_is_rewards), "an object of name -> number or null", None),
    "verifier2_correct": (_opt(_is_bool), "a bool or null", None),
}


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line_number, object)` for each non-blank line; a line that is not a JSON object is an error."""
    try:
        yield from runs.iter_jsonl(path)
    except runs.RunFileError as e:
        raise ReviewError(str(e)) from None


def _check_sample(path: Path, no: int, row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for name, (check, what, default) in _SAMPLE_FIELDS.items():
        if name not in row:
            if default is ...:
                raise ReviewError(f"{path}:{no}: missing field '{name}'")
            out[name] = list(default) if isinstance(default, list) else default
        elif not check(row[name]):
            raise ReviewError(f"{path}:{no}: field '{name}' must be {what}, got {row[name]!r:.60}")
    if out["n_steps"] is None:
        out["n_steps"] = len(out["gold_steps"])
    return out


def load_eval(eval_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`(eval.json contents, validated samples sorted by (problem_id, sample))` of an evaluation folder.

    A missing `eval.json` is allowed (metadata `{}`); a missing or empty `samples.jsonl`, a bad row or
    two rows with the same `(problem_id, sample)` are errors.
    """
    meta: dict[str, Any] = {}
    meta_path = eval_dir / "eval.json"
    if meta_path.exists():
        try:
            meta = runs.read_json(meta_path)
        except runs.RunFileError as e:
            raise ReviewError(str(e)) from None
    path = eval_dir / "samples.jsonl"
    if not path.exists():
        raise ReviewError(f"{path}: not found (is {eval_dir} an evaluation folder?)")
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for no, raw in read_jsonl(path):
        row = _check_sample(path, no, raw)
        key = item_id(row["problem_id"], row["sample"])
        if key in seen:
            raise ReviewError(f"{path}:{no}: duplicate problem_id/sample {key!r} (first on line {seen[key]})")
        seen[key] = no
        rows.append(row)
    if not rows:
        raise ReviewError(f"{path}: no samples")
    rows.sort(key=lambda r: (r["problem_id"], r["sample"]))
    return meta, rows


def resolve_review_dir(path: Path) -> Path:
    """The review folder for `path`: `path` itself if it holds `slice.jsonl`, else `path/review`."""
    for cand in (path, path / "review"):
        if (cand / SLICE_FILE).is_file():
            return cand
    raise ReviewError(f"{path}: no {SLICE_FILE} here or in {path / 'review'} (run `rlvr review export` first)")


def load_slice(review_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`(export.json contents, slice items in review order)` of a review folder."""
    path = review_dir / SLICE_FILE
    items = []
    for no, row in read_jsonl(path):
        for name in ("item_id", "question", "completion", "correct", "strata"):
            if name not in row:
                raise ReviewError(f"{path}:{no}: missing field '{name}'")
        items.append(row)
    ids = [it["item_id"] for it in items]
    if len(set(ids)) != len(ids):
        raise ReviewError(f"{path}: duplicate item_id")
    if not items:
        raise ReviewError(f"{path}: empty slice")
    meta_path = review_dir / EXPORT_META
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    return meta, items
