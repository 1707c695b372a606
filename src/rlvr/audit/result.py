"""A check's verdict (`CheckResult`, with the check's typed evidence from `rlvr.runs.audit`), the
check titles, and small formatting helpers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from rlvr.audit.context import finite
from rlvr.runs.audit import (
    AnyCheck,
    CheckRecord,
    Evidence,
    ProbeFailure,
    SecondExample,
    SetExample,
    Status,
    Table,
)

__all__ = ["ABOUT", "TITLES", "CheckResult", "Evidence", "Status", "Table", "fmt", "table", "worst"]

_RECORD: TypeAdapter[CheckRecord] = TypeAdapter(AnyCheck)

TITLES = {
    "matched_compute": "Matched compute",
    "verifier": "Verifier audit",
    "reward_separation": "Reward separation",
    "contamination": "Contamination",
    "holdout": "Private holdout",
    "drift": "Training drift",
    "human": "Human judgment",
}
ABOUT = {
    "matched_compute": "pass@1 and a multi-sample metric (pass@k or maj@k) of base and trained model on the same "
    "problems, each at a stated token budget, compared at matched budgets.",
    "verifier": "The verifier alone, on rewritings of the evaluation golds (recall), wrong answers (specificity) and "
    "reward hacks (rejection), and against a second verifier when installed.",
    "reward_separation": "How much of the training reward came from correctness and how much from format, and what "
    "correctness-only and format-only ablations reach.",
    "contamination": "Word 8-gram overlap and exact duplicates between the training problems and each evaluation set.",
    "holdout": "The private holdout was never trained or selected on, and its results sit beside the public test's.",
    "drift": "Completion length, entropy, truncation and zero-std groups over training, reward vs held-out accuracy, "
    "and whether any reward pays regardless of correctness.",
    "human": "A human-labelled slice: reviewer agreement, verifier precision/recall against people, and pass@1 "
    "re-estimated from the labels.",
}


@dataclass
class CheckResult:
    """One check's verdict, its typed evidence (written to audit.json as it is), examples and report tables."""

    name: str
    status: Status
    summary: str
    evidence: Evidence
    examples: Sequence[ProbeFailure | SecondExample | SetExample] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)

    @property
    def title(self) -> str:
        return TITLES.get(self.name, self.name)

    def record(self) -> CheckRecord:
        """As audit.json keeps it: the check's record, with its title and what it checks."""
        return _RECORD.validate_python(
            {"title": self.title, "about": ABOUT.get(self.name, ""), "name": self.name, "status": self.status,
             "summary": self.summary, "evidence": self.evidence, "examples": list(self.examples),
             "tables": self.tables}
        )  # fmt: skip


def worst(statuses: Sequence[str]) -> Status:
    """The most severe status (pass < warn < fail); pass for none."""
    return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"


def table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    return Table(title, columns, rows)


def fmt(x: Any, spec: str = ".3f") -> str:
    return format(x, spec) if finite(x) else "n/a"
