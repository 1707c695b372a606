"""Human labels in `labels.db`, an SQLite database in the review folder: each label committed in its own
transaction, every write kept in `history`, optimistic `version`s (a stale write is a `Conflict`). Schema
and guarantees: docs/review.md, "labels.db" and "JSON API"."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, astuple, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "DB_FILE",
    "Conflict",
    "Label",
    "LabelError",
    "LabelStore",
    "StoredLabel",
    "parse_label",
]

DB_FILE = "labels.db"
SCHEMA_VERSION = 1
CATEGORIES = ("derivation", "calculation", "missing_step", "contradiction", "other")
_REVIEWER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,39}$")
_MAX_NOTE = 4000

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS labels (
    item_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    answer_correct INTEGER NOT NULL CHECK (answer_correct IN (0, 1)),
    reasoning_valid INTEGER NOT NULL CHECK (reasoning_valid IN (0, 1)),
    error_category TEXT CHECK (error_category IS NULL OR error_category IN {CATEGORIES}),
    note TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (item_id, reviewer)
);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    answer_correct INTEGER NOT NULL,
    reasoning_valid INTEGER NOT NULL,
    error_category TEXT,
    note TEXT NOT NULL,
    source TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class LabelError(ValueError):
    """A malformed label; `field` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field = field


class Conflict(Exception):
    """The label changed since the writer last saw it."""


@dataclass(frozen=True)
class Label:
    """One reviewer's judgement of one item."""

    item_id: str
    reviewer: str
    answer_correct: bool
    reasoning_valid: bool
    error_category: str | None = None
    note: str = ""


@dataclass(frozen=True)
class StoredLabel(Label):
    """A label as stored: `version` counts its writes, `source` is `web` or `import:<file>`."""

    version: int = 0
    source: str = "web"
    updated_at: str = ""

    def label(self) -> Label:
        """The judgement alone, without its version and source."""
        return Label(
            self.item_id, self.reviewer, self.answer_correct, self.reasoning_valid, self.error_category, self.note
        )


_TRUE = {"true", "1", "yes", "y"}
_FALSE = {"false", "0", "no", "n"}


def _as_bool(obj: Mapping[str, Any], name: str, strings: bool) -> bool:
    if name not in obj or obj[name] is None or obj[name] == "":
        raise LabelError(name, "is required (true or false)")
    v = obj[name]
    if isinstance(v, bool):
        return v
    if strings and isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    raise LabelError(name, f"must be true or false, got {v!r:.40}")


def parse_label(obj: Any, known_ids: Collection[str], strings: bool = False) -> Label:
    """Validate a label object (from JSON, or a CSV row when `strings`) against the slice's item ids
    (the rules: docs/review.md, "JSON API")."""
    if not isinstance(obj, Mapping):
        raise LabelError("label", f"must be an object, got {type(obj).__name__}")
    iid = obj.get("item_id")
    if not isinstance(iid, str) or not iid:
        raise LabelError("item_id", "is required (a string)")
    if iid not in known_ids:
        raise LabelError("item_id", f"unknown item {iid!r:.80} (not in this slice)")
    reviewer = obj.get("reviewer")
    if not isinstance(reviewer, str) or not _REVIEWER.match(reviewer):
        raise LabelError("reviewer", f"must be 1-40 letters, digits or _.@- (got {reviewer!r:.40})")
    answer, reasoning = _as_bool(obj, "answer_correct", strings), _as_bool(obj, "reasoning_valid", strings)
    category = obj.get("error_category") or None
    if category is not None and category not in CATEGORIES:
        raise LabelError("error_category", f"must be one of {', '.join(CATEGORIES)} or empty, got {category!r:.40}")
    if category is not None and answer and reasoning:
        raise LabelError("error_category", "must be empty when the answer is correct and the reasoning valid")
    note = obj.get("note") or ""
    if not isinstance(note, str) or len(note) > _MAX_NOTE:
        raise LabelError("note", f"must be a string of at most {_MAX_NOTE} characters")
    return Label(iid, reviewer, answer, reasoning, category, note)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _row_to_label(row: sqlite3.Row) -> StoredLabel:
    flags = {"answer_correct": bool(row["answer_correct"]), "reasoning_valid": bool(row["reasoning_valid"])}
    return StoredLabel(**{**dict(row), **flags})


class LabelStore:
    """Labels of one review folder. Opens a short-lived connection per operation (thread-safe)."""

    def __init__(self, path: Path, timeout_s: float = 5.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        try:
            with self._connect() as conn:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as e:  # a file that is not a database, or a damaged one
            from rlvr.review.items import ReviewError

            raise ReviewError(f"{path}: not a review label store ({e})") from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA synchronous=FULL")
            yield conn
        finally:
            conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One immediate transaction: the write lock is taken up front, so concurrent writers queue."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _get(self, conn: sqlite3.Connection, item_id: str, reviewer: str) -> StoredLabel | None:
        row = conn.execute("SELECT * FROM labels WHERE item_id = ? AND reviewer = ?", (item_id, reviewer)).fetchone()
        return None if row is None else _row_to_label(row)

    def _upsert(self, conn: sqlite3.Connection, label: Label, version: int, source: str) -> StoredLabel:
        stored = StoredLabel(**asdict(label), version=version, source=source, updated_at=_now())
        values = (*astuple(label), source, version, stored.updated_at)  # sqlite stores the two bools as 0/1
        conn.execute("INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        conn.execute(
            "INSERT INTO history (item_id, reviewer, answer_correct, reasoning_valid, error_category, note,"
            " source, version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
        return stored

    def put(self, label: Label, expected_version: int, source: str = "web") -> StoredLabel:
        """Store `label` if its current version is `expected_version` (0 = no label yet), else Conflict."""
        with self._write() as conn:
            current = self._get(conn, label.item_id, label.reviewer)
            have = 0 if current is None else current.version
            if have != expected_version:
                raise Conflict(
                    f"label of {label.item_id!r} by {label.reviewer!r} is at version {have}, "
                    f"you edited version {expected_version}: reload the item"
                )
            return self._upsert(conn, label, have + 1, source)

    def import_labels(self, labels: Sequence[Label], source: str, overwrite: bool = False) -> dict[str, int]:
        """Add labels in one transaction (all or nothing): `{"added", "updated", "unchanged"}` counts.

        A different existing label by the same reviewer is a Conflict unless `overwrite`.
        """
        counts = {"added": 0, "updated": 0, "unchanged": 0}
        with self._write() as conn:
            for label in labels:
                current = self._get(conn, label.item_id, label.reviewer)
                if current is not None and current.label() == label:
                    counts["unchanged"] += 1
                    continue
                if current is not None and not overwrite:
                    raise Conflict(
                        f"{label.reviewer!r} already labelled {label.item_id!r} differently (use --overwrite)"
                    )
                self._upsert(conn, label, 1 if current is None else current.version + 1, source)
                counts["added" if current is None else "updated"] += 1
        return counts

    def get(self, item_id: str, reviewer: str) -> StoredLabel | None:
        with self._connect() as conn:
            return self._get(conn, item_id, reviewer)

    def labels(self, reviewer: str | None = None) -> list[StoredLabel]:
        """Current labels, of one reviewer or all, ordered by reviewer then item id."""
        with self._connect() as conn:
            if reviewer is None:
                rows = conn.execute("SELECT * FROM labels ORDER BY reviewer, item_id").fetchall()
            else:
                rows = conn.execute("SELECT * FROM labels WHERE reviewer = ? ORDER BY item_id", (reviewer,)).fetchall()
        return [_row_to_label(r) for r in rows]

    def history_count(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM history").fetchone()[0])
