"""Write the audit's three files from one `AuditResult`: report.html (self-contained), report.md and
audit.json (docs/audit.md, "Outputs"); each check's figure is drawn by the function its declaration
names."""

from __future__ import annotations

import math
from pathlib import Path

import jinja2
from pydantic import BaseModel

from rlvr.audit.checks import CHECKS
from rlvr.audit.checks.data import ContaminationEvidence
from rlvr.audit.plots import plt, png
from rlvr.audit.result import SCHEMA, AuditResult, CheckResult
from rlvr.runs import write_json

__all__ = ["figures", "render_html", "write_reports"]

_TEMPLATES = Path(__file__).parent / "templates"
_ICON = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def _na(x: object) -> object:
    """A cell as the report shows it: None and NaN (nothing measured) are "n/a"."""
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def figures(checks: list[CheckResult]) -> dict[str, str]:
    """`{check name: base64 PNG}` for the checks whose declaration draws something from their evidence."""
    out = {}
    for c in checks:
        draw = CHECKS[c.name].plot if c.name in CHECKS else None
        try:
            fig = draw(c.evidence) if draw else None
        except Exception:  # noqa: BLE001 - a figure that cannot be drawn is left out, never fatal
            plt.close("all")
            fig = None
        if fig is not None:
            out[c.name] = png(fig)
    return out


def _explain(report: AuditResult) -> dict[str, str]:
    """Per check, the note the report prints under its summary (contamination: why a templated task
    is judged on whole items)."""
    return {
        c.name: (c.evidence.explanation or "") if isinstance(c.evidence, ContaminationEvidence) else ""
        for c in report.checks
    }


def render_html(r: AuditResult, plots: dict[str, str] | None = None) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["na"] = _na
    return env.get_template("report.html.j2").render(
        run_name=Path(r.run_dir).name,
        run_dir=str(r.run_dir),
        created=r.created,
        schema=SCHEMA,
        status=r.status,
        counts=r.counts,
        strict=r.strict,
        evaluations=r.evals,
        ablations=r.ablations,
        checks=r.checks,
        explain=_explain(r),
        plots=plots or {},
    )


def _md_cell(x: object) -> str:
    return str(_na(x)).replace("|", "\\|").replace("\n", " ")


def _md_table(columns: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(_md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    return out + ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in rows]


def _md_example(ex: BaseModel) -> list[str]:
    lines = []
    for k, v in ex.model_dump().items():
        if isinstance(v, str) and ("\n" in v or len(v) > 60):
            lines += [f"- {k}:", "", "  ```", *(f"  {x}" for x in v.splitlines() or [""]), "  ```"]
        else:
            lines.append(f"- {k}: {_md_cell(v)}")
    return lines


def render_markdown(r: AuditResult) -> str:
    explain = _explain(r)
    lines = [
        f"# Readiness audit: {Path(r.run_dir).name}",
        "",
        f"**{_ICON[r.status]}**: {r.counts['pass']} pass, {r.counts['warn']} warn, {r.counts['fail']} fail"
        f" ({r.run_dir}, {r.created}). Plots: report.html.",
        "",
        *_md_table(
            ["#", "check", "status", "evidence"],
            [[i + 1, c.title, _ICON[c.status], c.summary] for i, c in enumerate(r.checks)],
        ),
        "",
    ]
    if r.evals:
        rows: list[list[object]] = [[e.name, e.role, e.task, e.split, e.path, e.judge or "-"] for e in r.evals]
        cols = ["evaluation", "model", "task", "split", "folder", "error categories (LLM judge)"]
        lines += ["Evaluations read:", "", *_md_table(cols, rows), ""]
    for i, c in enumerate(r.checks, 1):
        lines += [f"## {i}. {c.title}: {_ICON[c.status]}", "", f"_{c.about}_", "", c.summary, ""]
        if explain[c.name]:
            lines += [explain[c.name], ""]
        for t in c.tables:
            lines += [f"**{t.title}**", "", *_md_table(t.columns, t.rows), ""]
        if c.examples:
            lines += ["**Examples**", ""]
            for ex in c.examples:
                lines += [*_md_example(ex), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_reports(result: AuditResult, plots: bool = True) -> dict[str, Path]:
    """Write report.html, report.md and audit.json into `result.out_dir`; returns their paths."""
    out = Path(result.out_dir)
    files = {"html": out / "report.html", "md": out / "report.md", "json": out / "audit.json"}
    write_json(files["json"], result.to_json())
    files["md"].write_text(render_markdown(result), encoding="utf-8")
    files["html"].write_text(render_html(result, figures(result.checks) if plots else {}), encoding="utf-8")
    return files
