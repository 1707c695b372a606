"""A check's verdict (`CheckResult`, with the check's typed evidence from `rlvr.runs.audit`), the
whole audit's result (`AuditResult`, what the report renders), the check titles, and small
formatting helpers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from rlvr.audit.context import finite
from rlvr.runs.audit import (
    AnyCheck,
    AuditReport,
    CheckRecord,
    EvalRead,
    Evidence,
    ProbeFailure,
    SecondExample,
    SetExample,
    Status,
    Table,
)

__all__ = ["ABOUT", "TITLES", "AuditResult", "CheckResult", "Evidence", "Status", "Table", "fmt", "table", "worst"]

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


@dataclass
class AuditResult:
    """The seven verdicts, the overall status and where the report files went."""

    run_dir: Path
    out_dir: Path
    checks: list[CheckResult]
    strict: bool = False
    evals: list[EvalRead] = field(default_factory=list)
    ablations: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    @property
    def status(self) -> Status:
        return worst([c.status for c in self.checks])

    @property
    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in ("pass", "warn", "fail")}

    @property
    def exit_code(self) -> int:
        """1 under `strict` when any check failed, else 0."""
        return 1 if self.strict and any(c.status == "fail" for c in self.checks) else 0

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def report(self) -> AuditReport:
        """The audit.json record of this result."""
        return AuditReport(
            created=self.created,
            run_dir=str(self.run_dir),
            status=self.status,
            counts=self.counts,
            strict=self.strict,
            evaluations=self.evals,
            ablations=self.ablations,
            checks=[c.record() for c in self.checks],
        )
