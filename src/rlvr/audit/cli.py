"""The `rlvr audit` command: `audit_command`, a plain function the top-level CLI calls (this module
never imports `rlvr.cli`); flags and exit status: docs/audit.md."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rlvr.audit.readiness import AuditResult, run_audit
from rlvr.audit.runs import AuditInputError

__all__ = ["audit_command"]

_STYLE = {"pass": "bold green", "warn": "bold yellow", "fail": "bold red"}


def print_result(result: AuditResult, console: Console | None = None) -> None:
    """The verdicts as a table, then where the report went."""
    out = console or Console()
    table = Table(title=f"readiness audit: {result.run_dir}", show_lines=False)
    for col in ("#", "check", "status", "evidence"):
        table.add_column(col, overflow="fold")
    for i, c in enumerate(result.checks, 1):
        table.add_row(str(i), c.title, f"[{_STYLE[c.status]}]{c.status}[/]", c.summary)
    out.print(table)
    out.print(
        f"overall: [{_STYLE[result.status]}]{result.status}[/]  report: {result.files.get('html')}", highlight=False
    )


def audit_command(
    run_dir: Path | str,
    eval: Sequence[Path | str] | None = None,  # noqa: A002 - the flag's name
    out: Path | str | None = None,
    strict: bool = False,
    ablation: Sequence[Path | str] | None = None,
    *,
    console: Console | None = None,
) -> int:
    """Run the audit and print its verdicts; returns the exit status (see the module docstring)."""
    err = console or Console(stderr=True)
    try:
        result = run_audit(run_dir, list(eval or []), out, list(ablation or []), strict=strict)
    except AuditInputError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
        return 2
    print_result(result, console)
    return result.exit_code
