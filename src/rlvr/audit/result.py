"""A readiness check declared once (`Check`, by `@check`), its verdict (`CheckResult`), the audit's
result (`AuditResult`, whose `to_json` is audit.json) and small formatting helpers. Adding a check:
docs/audit.md."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_jsonable_python

from rlvr.audit.context import AuditContext, finite
from rlvr.runs.records import Record  # evidence floats may be NaN (nothing to measure): written as null

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "SCHEMA",
    "AuditResult",
    "Check",
    "CheckResult",
    "EvalRead",
    "Record",
    "Status",
    "Table",
    "check",
    "fmt",
    "worst",
]

SCHEMA = "rlvr.audit/1"
Status = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Table:
    """A table of the report: its title, column names and rows of cells."""

    title: str
    columns: list[str]
    rows: list[list[Any]]


@dataclass(frozen=True)
class EvalRead:
    """An evaluation the audit read, as the report lists it."""

    name: str
    path: str
    role: str  # trained, base, ablation or other
    split: str
    task: str
    judge: str = ""  # the LLM judge's error categories, when it was judged


@dataclass
class CheckResult:
    """One check's verdict, its typed evidence (written to audit.json as it is), examples and report
    tables; `title` and `about` come from the check's declaration."""

    name: str
    status: Status
    summary: str
    evidence: Record
    examples: Sequence[Record] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    title: str = ""
    about: str = ""

    def record(self) -> dict[str, Any]:
        """As audit.json keeps it."""
        keys = ("title", "about", "name", "status", "summary", "evidence", "examples", "tables")
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class Check:
    """A readiness check, declared once beside its function: `check(ctx)` runs it and returns its
    verdict under the declared title. `evidence` is the record it writes (every one has `error`, set
    when the check could not run); `plot` draws that record for the report (None: no figure)."""

    name: str
    title: str
    about: str
    evidence: type[Record]
    run: Callable[[AuditContext], CheckResult]
    plot: Callable[[Any], Figure | None] | None = None

    def __call__(self, ctx: AuditContext) -> CheckResult:
        return replace(self.run(ctx), title=self.title, about=self.about)

    def crashed(self, e: Exception) -> CheckResult:
        """The verdict of a check that raised: a failure naming the error."""
        ev = self.evidence(error=repr(e))  # type: ignore[call-arg]
        summary = f"the check could not run: {type(e).__name__}: {e}"
        return CheckResult(self.name, "fail", summary, ev, title=self.title, about=self.about)


def check(
    name: str, title: str, about: str, evidence: type[Record], plot: Callable[[Any], Figure | None] | None = None
) -> Callable[[Callable[[AuditContext], CheckResult]], Check]:
    """Declare the decorated function as the check `name` (see `Check`)."""
    return lambda run: Check(name, title, about, evidence, run, plot)


def worst(statuses: Sequence[str]) -> Status:
    """The most severe status (pass < warn < fail); pass for none."""
    return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"


def fmt(x: Any, spec: str = ".3f") -> str:
    return format(x, spec) if finite(x) else "n/a"


@dataclass
class AuditResult:
    """The verdicts, the overall status and where the report files went."""

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

    def to_json(self) -> dict[str, Any]:
        """audit.json's contents (NaN still NaN: `runs.write_json` writes it as null)."""
        return to_jsonable_python(
            {
                "schema": SCHEMA,
                "created": self.created,
                "run_dir": str(self.run_dir),
                "status": self.status,
                "counts": self.counts,
                "strict": self.strict,
                "evaluations": self.evals,
                "ablations": self.ablations,
                "checks": [c.record() for c in self.checks],
            },
            by_alias=True,
        )
