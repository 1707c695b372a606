"""The search folder's SQLite store, `search.db`: every candidate, its validation, and every screening
result, written only by the process that drives the search, one commit per finished screen (docs/search.md)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.runs import clean
from rlvr.runs.records import load_record
from rlvr.search.proposer import Candidate
from rlvr.search.records import ScreenResult

__all__ = ["CandidateRow", "Store", "StoredScreen"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    name TEXT PRIMARY KEY,
    round INTEGER NOT NULL,
    position INTEGER NOT NULL,
    source TEXT NOT NULL,
    description TEXT NOT NULL,
    parents TEXT NOT NULL,
    accepted INTEGER,            -- NULL until validated
    stage TEXT,                  -- failing validation stage
    reason TEXT,
    probe TEXT,                  -- JSON: probe outputs as decoded by the host
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS screens (
    key TEXT PRIMARY KEY,        -- e.g. "cand/<name>/s40/seed0"
    kind TEXT NOT NULL,          -- baseline | candidate | ensemble | seed | calibration
    members TEXT NOT NULL,       -- JSON list of candidate names
    steps INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,        -- done | failed
    result TEXT NOT NULL,        -- JSON from rlvr.search.screen.run_screen
    finished REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class StoredScreen:
    """A finished screening run as the store keeps it."""

    key: str
    kind: str
    members: list[str]
    steps: int
    seed: int
    result: ScreenResult


def _result_json(result: ScreenResult) -> str:
    return json.dumps(clean(result.model_dump(mode="json", exclude_none=True)))


@dataclass(frozen=True)
class CandidateRow:
    name: str
    round: int
    source: str
    description: str
    parents: tuple[str, ...]
    accepted: bool | None
    stage: str | None
    reason: str | None


class Store:
    """`Store(path)` opens (creating if needed) the search database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)  # autocommit; `_tx` groups writes
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:  # a file that is not a database, or a damaged one
            self.db.close()
            raise ValueError(f"{self.path}: not a search store ({e})") from None

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    # --- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    # --- candidates ---------------------------------------------------------------------------
    def add_round(self, rnd: int, candidates: list[Candidate]) -> None:
        """Store one round's proposals (all at once, so a round is either proposed or not)."""
        with self._tx() as db:
            for i, c in enumerate(candidates):
                db.execute(
                    "INSERT INTO candidates (name, round, position, source, description, parents, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (c.name, rnd, i, c.source, c.description, json.dumps(list(c.parents)), time.time()),
                )
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"round/{rnd}/proposed", "true"))

    def round_proposed(self, rnd: int) -> bool:
        return bool(self.get_meta(f"round/{rnd}/proposed"))

    def set_validation(self, name: str, accepted: bool, stage: str | None, reason: str, probe: Any) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE candidates SET accepted = ?, stage = ?, reason = ?, probe = ? WHERE name = ?",
                (int(accepted), stage, reason, json.dumps(probe), name),
            )

    def candidates(self, rnd: int | None = None) -> list[CandidateRow]:
        q = "SELECT name, round, source, description, parents, accepted, stage, reason FROM candidates"
        args: tuple[Any, ...] = ()
        if rnd is not None:
            q, args = q + " WHERE round = ?", (rnd,)
        rows = self.db.execute(q + " ORDER BY round, position", args).fetchall()
        return [
            CandidateRow(
                name=r[0],
                round=r[1],
                source=r[2],
                description=r[3],
                parents=tuple(json.loads(r[4])),
                accepted=None if r[5] is None else bool(r[5]),
                stage=r[6],
                reason=r[7],
            )
            for r in rows
        ]

    # --- screens ------------------------------------------------------------------------------
    def add_screen(self, key: str, kind: str, members: list[str], steps: int, seed: int, result: ScreenResult) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO screens VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, kind, json.dumps(members), steps, seed, result.status, _result_json(result), time.time()),
            )

    def screen(self, key: str) -> ScreenResult | None:
        row = self.db.execute("SELECT result FROM screens WHERE key = ?", (key,)).fetchone()
        return None if row is None else load_record(ScreenResult, json.loads(row[0]))

    def screens(self, kind: str | None = None) -> list[StoredScreen]:
        q = "SELECT key, kind, members, steps, seed, result FROM screens"
        args: tuple[str, ...] = ()
        if kind is not None:
            q, args = q + " WHERE kind = ?", (kind,)
        return [
            StoredScreen(key, k, json.loads(members), steps, seed, load_record(ScreenResult, json.loads(result)))
            for key, k, members, steps, seed, result in self.db.execute(q + " ORDER BY finished", args)
        ]
