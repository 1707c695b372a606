"""Write the audit's three files: `report.html` (self-contained: inline CSS, plots as base64 PNG,
no script), `report.md` (the same verdicts and tables as text) and `audit.json` (every check's
status, summary, evidence and examples; NaN written as null)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from rlvr.audit.plots import figures
from rlvr.runs import clean, write_json

if TYPE_CHECKING:
    from rlvr.audit.readiness import AuditResult

__all__ = ["render_html", "render_markdown", "write_reports"]

_TEMPLATES = Path(__file__).parent / "templates"
_ICON = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def _view(result: AuditResult) -> dict[str, Any]:
    data = clean(result.to_dict())
    for c, raw in zip(data["checks"], result.checks, strict=True):
        c["explain"] = raw.evidence.get("explanation", "")
    data["run_name"] = Path(result.run_dir).name
    return data


def render_html(result: AuditResult, plots: dict[str, str] | None = None) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return env.get_template("report.html.j2").render(**_view(result), plots=plots or {})


def _md_cell(x: Any) -> str:
    return "n/a" if x is None else str(x).replace("|", "\\|").replace("\n", " ")


def _md_table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(_md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    return out + ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in rows]


def _md_example(ex: dict[str, Any]) -> list[str]:
    lines = []
    for k, v in ex.items():
        if isinstance(v, str) and ("\n" in v or len(v) > 60):
            lines += [f"- {k}:", "", "  ```", *(f"  {x}" for x in v.splitlines() or [""]), "  ```"]
        else:
            lines.append(f"- {k}: {_md_cell(v)}")
    return lines


def render_markdown(result: AuditResult) -> str:
    d = _view(result)
    lines = [
        f"# Readiness audit: {d['run_name']}",
        "",
        f"**{_ICON[d['status']]}**: {d['counts']['pass']} pass, {d['counts']['warn']} warn, {d['counts']['fail']} fail"
        f" ({d['run_dir']}, {d['created']}). Plots: report.html.",
        "",
        *_md_table(
            ["#", "check", "status", "evidence"],
            [[i + 1, c["title"], _ICON[c["status"]], c["summary"]] for i, c in enumerate(d["checks"])],
        ),
        "",
    ]
    if d["evaluations"]:
        rows = [
            [e["name"], e["role"], e["task"], e["split"], e["path"], e.get("judge") or "-"] for e in d["evaluations"]
        ]
        cols = ["evaluation", "model", "task", "split", "folder", "error categories (LLM judge)"]
        lines += ["Evaluations read:", "", *_md_table(cols, rows), ""]
    for i, c in enumerate(d["checks"], 1):
        lines += [f"## {i}. {c['title']}: {_ICON[c['status']]}", "", f"_{c['about']}_", "", c["summary"], ""]
        if c["explain"]:
            lines += [c["explain"], ""]
        for t in c["tables"]:
            lines += [f"**{t['title']}**", "", *_md_table(t["columns"], t["rows"]), ""]
        if c["examples"]:
            lines += ["**Examples**", ""]
            for ex in c["examples"]:
                lines += [*_md_example(ex), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_reports(result: AuditResult, plots: bool = True) -> dict[str, Path]:
    """Write report.html, report.md and audit.json into `result.out_dir`; returns their paths."""
    out = Path(result.out_dir)
    files = {"html": out / "report.html", "md": out / "report.md", "json": out / "audit.json"}
    write_json(files["json"], result.to_dict())
    files["md"].write_text(render_markdown(result), encoding="utf-8")
    files["html"].write_text(render_html(result, figures(result.checks) if plots else {}), encoding="utf-8")
    return files
