"""Read another reviewer's labels from a JSONL or CSV file for `rlvr review import` (columns: docs/review.md);
the first bad row stops it with `FILE:LINE: field 'NAME': reason`."""

from __future__ import annotations

import csv
from collections.abc import Collection
from pathlib import Path

from rlvr.review.items import ReviewError, read_jsonl
from rlvr.review.store import Label, LabelError, parse_label

__all__ = ["read_label_file"]


def _csv_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """`(line number, row)` of a CSV file with a header; the cells a short row lacks are left out."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames or "item_id" not in reader.fieldnames:
                raise ReviewError(f"{path}:1: CSV header must name the column 'item_id'")
            rows = []
            for row in reader:
                if None in row:
                    raise ReviewError(f"{path}:{reader.line_num}: more cells than header columns")
                rows.append((reader.line_num, {k: v for k, v in row.items() if v is not None}))
            return rows
    except OSError as e:
        raise ReviewError(f"{path}: cannot read ({e.strerror or e})") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise ReviewError(f"{path}: not a readable CSV file ({e})") from None


def read_label_file(path: Path, known_ids: Collection[str], reviewer: str | None = None) -> list[Label]:
    """Validated labels of a `.csv` file (by suffix) or a JSONL file (anything else)."""
    is_csv = path.suffix.lower() == ".csv"
    rows = _csv_rows(path) if is_csv else list(read_jsonl(path))
    labels: list[Label] = []
    seen: dict[tuple[str, str], int] = {}
    for no, row in rows:
        if reviewer is not None and not row.get("reviewer"):
            row = {**row, "reviewer": reviewer}
        try:
            label = parse_label(row, known_ids, strings=is_csv)
        except LabelError as e:
            raise ReviewError(f"{path}:{no}: {e}") from None
        key = (label.item_id, label.reviewer)
        if key in seen:
            raise ReviewError(f"{path}:{no}: item {key[0]!r} labelled twice by {key[1]!r} (first on line {seen[key]})")
        seen[key] = no
        labels.append(label)
    if not labels:
        raise ReviewError(f"{path}: no labels")
    return labels
