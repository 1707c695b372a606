"""Pick the slice of an evaluation that a person will label (`rlvr review export`): `strata_of`, `select`
and `export_slice`. The strata, the pick and the files: docs/review.md, "export"."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rlvr.review.items import EXPORT_META, SLICE_FILE, ReviewError, ReviewSample, SliceItem, item_id, load_eval
from rlvr.runs import RunFolderError, check_side_out
from rlvr.runs.review import DifficultyBasis, SliceExport

__all__ = ["DIMENSIONS", "export_slice", "select", "strata_of"]

DIMENSIONS = ("verdict", "reward", "length", "disagreement", "difficulty")
# the keys of a slice.jsonl line, in order: a sample's other keys are left out
_SLICE_KEYS = tuple(
    "item_id index strata problem_id sample question gold gold_solution gold_steps n_steps completion parsed correct"
    " reason tokens truncated temperature process_score rewards verifier2_correct messages".split()
)


def _verdict(row: ReviewSample) -> str:
    if row.correct:
        return "correct"
    return "unparsed" if row.parsed is None else "incorrect"


def _reward_total(row: ReviewSample) -> float | None:
    values = [v for v in (row.rewards or {}).values() if v is not None]
    return float(sum(values)) if values else None


def _reward_buckets(rows: Sequence[ReviewSample]) -> list[str]:
    totals = [_reward_total(r) for r in rows]
    known = [t for t in totals if t is not None]
    if not known:
        return ["none"] * len(rows)
    lo, hi = min(known), max(known)
    names = ("low", "mid", "high")
    out = []
    for t in totals:
        if t is None:
            out.append("none")
        elif hi == lo:
            out.append("mid")
        else:
            out.append(names[min(2, int(3 * (t - lo) / (hi - lo)))])
    return out


def _length_buckets(rows: Sequence[ReviewSample]) -> list[str]:
    tokens = np.array([r.tokens for r in rows], dtype=np.float64)
    edges = np.quantile(tokens, [0.25, 0.5, 0.75])
    quart = np.searchsorted(edges, tokens, side="left")  # tokens <= q25 -> q1, ...
    return ["truncated" if r.truncated else f"q{int(q) + 1}" for r, q in zip(rows, quart, strict=True)]


def _disagreement(row: ReviewSample) -> str:
    v2, ps = row.verifier2_correct, row.process_score
    if v2 is None and ps is None:
        return "n/a"
    d2 = v2 is not None and v2 != row.correct
    dp = ps is not None and (ps >= 0.5) != row.correct
    return "both" if d2 and dp else "verifier2" if d2 else "process" if dp else "agree"


def _difficulty(rows: Sequence[ReviewSample]) -> tuple[list[str], DifficultyBasis]:
    """Per-row difficulty and its basis: `pass_rate` or `n_steps`."""
    by_problem: dict[str, list[bool]] = {}
    steps: dict[str, int] = {}
    for r in rows:
        by_problem.setdefault(r.problem_id, []).append(r.correct)
        steps[r.problem_id] = int(r.n_steps or 0)
    if max(len(v) for v in by_problem.values()) >= 2:
        rate = {p: sum(v) / len(v) for p, v in by_problem.items()}
        label = {p: "easy" if x > 2 / 3 else "hard" if x < 1 / 3 else "medium" for p, x in rate.items()}
        return [label[r.problem_id] for r in rows], "pass_rate"
    counts = np.array(list(steps.values()), dtype=np.float64)
    lo, hi = np.quantile(counts, [1 / 3, 2 / 3])
    label = {p: "easy" if s <= lo else "hard" if s > hi else "medium" for p, s in steps.items()}
    if lo == hi:  # too few distinct step counts to split in three
        label = {p: "easy" if s < lo else "hard" if s > lo else "medium" for p, s in steps.items()}
    return [label[r.problem_id] for r in rows], "n_steps"


def strata_of(rows: Sequence[ReviewSample]) -> tuple[list[dict[str, str]], DifficultyBasis]:
    """The five strata of each row (docs/review.md) and the difficulty basis."""
    rewards, lengths = _reward_buckets(rows), _length_buckets(rows)
    difficulty, basis = _difficulty(rows)
    strata = [
        {
            "verdict": _verdict(r),
            "reward": rewards[i],
            "length": lengths[i],
            "disagreement": _disagreement(r),
            "difficulty": difficulty[i],
        }
        for i, r in enumerate(rows)
    ]
    return strata, basis


def select(strata: Sequence[dict[str, str]], groups: Sequence[str], n: int, seed: int = 0) -> list[int]:
    """Indices of `n` rows (all rows if fewer) in pick order, balancing each stratum's values: each pick is
    the row furthest below its values' shares `n / k`, then one of a group (problem) not yet picked, then
    the lowest seeded random rank (docs/review.md).

    >>> s = [{"verdict": v} for v in ["correct"] * 8 + ["incorrect"] * 2]
    >>> sorted(s[i]["verdict"] for i in select(s, [str(i) for i in range(10)], 4, seed=0))
    ['correct', 'correct', 'incorrect', 'incorrect']
    """
    n_rows = len(strata)
    n = min(n, n_rows)
    dims = list(strata[0]) if strata else []
    codes = np.zeros((n_rows, len(dims)), dtype=np.int64)
    targets, counts = [], []
    for j, d in enumerate(dims):
        values = sorted({s[d] for s in strata})
        codes[:, j] = [values.index(s[d]) for s in strata]
        targets.append(np.full(len(values), n / len(values)))
        counts.append(np.zeros(len(values)))
    group_codes = np.unique(np.asarray(groups), return_inverse=True)[1].reshape(-1)
    group_seen = np.zeros(group_codes.max() + 1 if n_rows else 0, dtype=bool)
    rank = np.random.default_rng(seed).permutation(n_rows) / max(n_rows, 1)
    picked = np.zeros(n_rows, dtype=bool)
    order: list[int] = []
    for _ in range(n):
        score = np.zeros(n_rows)
        for j in range(len(dims)):
            deficit = np.maximum(0.0, targets[j] - counts[j]) / targets[j]
            score += deficit[codes[:, j]]
        score[picked] = -np.inf
        best = score >= score.max() - 1e-9
        if (best & ~group_seen[group_codes]).any():  # among the best, a problem not yet in the slice
            best &= ~group_seen[group_codes]
        i = int(np.argmin(np.where(best, rank, np.inf)))
        picked[i] = True
        group_seen[group_codes[i]] = True
        for j in range(len(dims)):
            counts[j][codes[i, j]] += 1
        order.append(i)
    return order


def _tally(strata: Sequence[dict[str, str]]) -> dict[str, dict[str, int]]:
    return {d: dict(sorted(Counter(s[d] for s in strata).items())) for d in DIMENSIONS}


def _build(eval_dir: Path, n: int, seed: int) -> tuple[list[SliceItem], SliceExport]:
    meta, rows = load_eval(eval_dir)
    strata, basis = strata_of(rows)
    order = select(strata, [r.problem_id for r in rows], n, seed)
    fields = set(ReviewSample.model_fields)  # not a sample's other keys
    items = [
        SliceItem(
            **rows[i].model_dump(include=fields),
            item_id=item_id(rows[i].problem_id, rows[i].sample),
            index=index,
            strata=strata[i],
        )
        for index, i in enumerate(order)
    ]
    export = SliceExport(
        eval_dir=str(eval_dir),
        eval=meta,
        seed=seed,
        n_requested=n,
        n=len(items),
        n_population=len(rows),
        population_correct=sum(r.correct for r in rows),
        difficulty_basis=basis,
        strata_population=_tally(strata),
        strata_slice=_tally([strata[i] for i in order]),
        samples_sha256=hashlib.sha256((eval_dir / "samples.jsonl").read_bytes()).hexdigest(),
    )
    return items, export


def _slice_line(item: SliceItem) -> str:
    row = item.model_dump(mode="json")
    keep = [k for k in _SLICE_KEYS if k != "messages" or row[k] is not None]  # a conversation only when there is one
    return json.dumps({k: row[k] for k in keep}, ensure_ascii=False) + "\n"


def export_slice(eval_dir: Path, n: int = 100, seed: int = 0, out: Path | None = None, force: bool = False) -> Path:
    """Write `slice.jsonl` and `export.json` into `out` (default `EVAL_DIR/review`) and return the folder;
    a different slice over existing labels (which it would orphan) is a ReviewError unless `force`."""
    if n < 1:
        raise ReviewError(f"--items must be >= 1, got {n}")
    review_dir = out if out is not None else eval_dir / "review"
    try:  # never into another command's folder (a run, an evaluation); an earlier slice is handled below
        check_side_out(review_dir, ["slice.jsonl"], "review export", overwrite=True)
    except RunFolderError as e:
        raise ReviewError(str(e)) from None
    items, export = _build(eval_dir, n, seed)
    review_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(_slice_line(it) for it in items)
    slice_path = review_dir / SLICE_FILE
    old = slice_path.read_text(encoding="utf-8") if slice_path.exists() else None
    if old is not None and old != text and (review_dir / "labels.db").exists() and not force:
        raise ReviewError(
            f"{review_dir}: holds labels for a different slice; use --out for a new folder or --force to replace it"
        )
    tmp = slice_path.with_suffix(".jsonl.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(slice_path)
    meta = export.model_dump(mode="json", by_alias=True)
    (review_dir / EXPORT_META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return review_dir
