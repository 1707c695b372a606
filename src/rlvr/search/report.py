"""Write `search_report.html` (`write_report`, `render_html`): one self-contained page (inline CSS,
plots as base64 PNG, no script, no external resource) that explains a finished search from its
`SearchResults` (sections: docs/search.md, "Output"). Any part may be missing (a failed control, no
ensembles): the page shows "n/a" or a sentence in its place. The template reads the records with their
derived columns (`_context`); the plots are drawn from the record itself."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeGuard

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend is chosen first
from matplotlib.figure import Figure  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from rlvr.runs import clean  # noqa: E402
from rlvr.search.records import (  # noqa: E402
    CandidateResult,
    DevScores,
    FinalComparison,
    SearchResults,
    SeedsResult,
)

__all__ = ["render_html", "write_report"]

_TEMPLATES = Path(__file__).parent / "templates"
_CONTROL, _CAND, _BEST = "#7f7f7f", "#1f77b4", "#d62728"


# ---------------------------------------------------------------------------------------- formatting
def _ok(x: object) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _num(x: object, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if _ok(x) else "n/a"


def _signed(x: object) -> str:
    return f"{x:+.3f}" if _ok(x) else "n/a"


def _ci(x: object) -> str:
    if isinstance(x, list | tuple) and len(x) == 2 and all(_ok(v) for v in x):
        return f"[{x[0]:.3f}, {x[1]:.3f}]"
    return ""


def _pvalue(x: object) -> str:
    if not _ok(x):
        return "n/a"
    return "< 0.001" if x < 1e-3 else f"{x:.3f}"


def _duration(seconds: object) -> str:
    if not _ok(seconds):
        return "n/a"
    s = int(round(seconds))
    h, m = s // 3600, s % 3600 // 60
    return f"{h} h {m:02d} min" if h else f"{m} min {s % 60:02d} s" if m else f"{s} s"


# ---------------------------------------------------------------------------------------- plots
def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _f1(scores: DevScores | None) -> tuple[float | None, list[float] | None]:
    if scores is None or not _ok(scores.f1):
        return None, None
    ci = scores.f1_ci
    return scores.f1, ci if _ci(ci) else None


def _err(value: float, ci: list[float] | None) -> list[list[float]] | None:
    """Error-bar lengths below and above `value` (never negative, should the interval not hold it)."""
    return [[max(0.0, value - ci[0])], [max(0.0, ci[1] - value)]] if ci is not None and _ci(ci) else None


def _round_numbers(results: SearchResults) -> list[int]:
    """Every round of the search: those summarised and those a candidate was proposed in."""
    return sorted({r.round for r in results.rounds} | {c.round for c in results.candidates if c.round is not None})


def _trajectory(results: SearchResults) -> Figure | None:
    """Dev F1 of each screened candidate by round (with its CI), the control line and band, best so far."""
    pts: list[tuple[int, float, list[float] | None, int | None]] = []
    for c in results.candidates:
        f1, ci = _f1(c.scores)
        if f1 is not None and c.round is not None:
            pts.append((c.round, f1, ci, c.steps))
    ctrl, ctrl_ci = _f1(results.control.scores)
    if not pts and ctrl is None:
        return None
    rounds = _round_numbers(results) or [1]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    if ctrl is not None:
        ax.axhline(ctrl, color=_CONTROL, linestyle="--", linewidth=1.2, label=f"control {ctrl:.3f}")
        if ctrl_ci:
            ax.axhspan(ctrl_ci[0], ctrl_ci[1], color=_CONTROL, alpha=0.15, label="control 95% CI")
    full = max((p[3] for p in pts if _ok(p[3])), default=None)
    seen: dict[int, int] = {}
    for rnd, f1, ci, steps in pts:
        k = seen[rnd] = seen.get(rnd, 0) + 1
        x = rnd + 0.06 * ((k // 2) * (1 if k % 2 else -1))  # fan the points of one round out a little
        err = _err(f1, ci)
        hollow = full is not None and _ok(steps) and steps < full
        ax.errorbar(
            [x],
            [f1],
            yerr=err,
            fmt="o",
            color=_CAND,
            mfc="white" if hollow else _CAND,
            ms=5,
            elinewidth=0.8,
            alpha=0.85,
            capsize=2,
        )
    best, line = -math.inf, []
    for rnd in rounds:
        best = max([best] + [p[1] for p in pts if p[0] == rnd])
        line.append((rnd, best if math.isfinite(best) else math.nan))
    if any(math.isfinite(y) for _, y in line):
        ax.plot(*zip(*line, strict=True), "-", drawstyle="steps-post", color=_BEST, linewidth=1.5, label="best so far")
    ax.plot([], [], "o", color=_CAND, label="candidate, 95% CI (hollow: cut at an earlier rung)")
    ax.set_xticks(rounds, [str(r) for r in rounds])
    ax.set(xlabel="round", ylabel="dev F1", title="screened candidates by round")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _final(results: SearchResults) -> Figure | None:
    """Test pass@1 with its 95% CI for each configuration."""
    scores = results.final.scores if results.final is not None else {}
    rows = [(name, s.accuracy, s.accuracy_ci) for name, s in scores.items() if _ok(s.accuracy)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    for y, (name, acc, ci) in zip(ys, rows, strict=True):
        err = _err(acc, ci)
        ax.barh([y], [acc], xerr=err, color=_CONTROL if name == "control" else _CAND, capsize=3, height=0.6)
        ax.text(acc + (err[1][0] if err else 0.0), y, f"  {acc:.3f}", va="center", ha="left", fontsize=8)
    ax.set_yticks(ys, [r[0] for r in rows])
    ax.set(xlabel="test pass@1 (95% CI)", title="final test comparison")
    ax.set_xlim(0, min(1.0, max(r[1] for r in rows) * 1.25 + 0.05))
    ax.grid(alpha=0.3, axis="x")
    return fig


def _calibration(results: SearchResults) -> Figure | None:
    """Short-screen F1 against the full run's F1, one point per calibration candidate."""
    cal = results.calibration
    rows = cal.rows if cal is not None else []
    pts = [(r.short_f1, r.full_f1) for r in rows if _ok(r.short_f1) and _ok(r.full_f1)]
    if cal is None or not pts:
        return None
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=_CAND, s=18)
    lo, hi = min(min(p) for p in pts), max(max(p) for p in pts)
    ax.plot([lo, hi], [lo, hi], ":", color=_CONTROL, linewidth=1)
    ax.set(
        xlabel=f"dev F1 after {cal.short_steps} steps",
        ylabel=f"dev F1 after {cal.full_steps} steps",
        title="short screen vs full run",
    )
    ax.grid(alpha=0.3)
    return fig


def _figures(results: SearchResults) -> dict[str, str]:
    """Each figure that can be drawn, as base64 PNG by name."""
    out = {}
    for name, draw in (("trajectory", _trajectory), ("final", _final), ("calibration", _calibration)):
        try:
            fig = draw(results)
        except Exception:  # noqa: BLE001 - a figure that cannot be drawn is left out, never fatal
            plt.close("all")
            fig = None
        if fig is not None:
            out[name] = _png(fig)
    return out


# ---------------------------------------------------------------------------------------- the view
# What the template reads: the records themselves, each with its derived columns filled in and its
# missing parts made explicit (`_scores`: a run without scores shows "n/a" in every cell).
_NO_SCORES = SimpleNamespace(f1=None, f1_ci=None, accuracy=None, accuracy_ci=None, answered=None, greedy=None)
# The header's settings, as written in results.json's config ("n/a" when absent).
_SETUP = (
    "rounds",
    "candidates",
    "screen_steps",
    "dev_n",
    "dev_samples",
    "test_n",
    "test_samples",
    "seed",
    "task",
    "preset",
    "ensemble_size",
)


def _scores(s: DevScores | None) -> DevScores | SimpleNamespace:
    return _NO_SCORES if s is None else s


def _with(record: BaseModel, **derived: Any) -> SimpleNamespace:
    """The record's fields for the template, with the derived ones replaced or added."""
    return SimpleNamespace(**{**dict(record), **derived})


def _candidate(c: CandidateResult) -> SimpleNamespace:
    """A leaderboard row, and the candidate's source with its validation in words."""
    status = c.status or "not screened"
    if status == "rejected":
        detail = f"at {c.stage or '?'}: {c.reason or 'no reason given'}"
    elif status == "failed":
        detail = c.error or "no error recorded"
    else:
        detail = ""
    if c.accepted is None:
        validation = "not validated"
    elif c.accepted:
        validation = "accepted (static, load, namespace and probe checks passed)"
    else:
        validation = f"rejected {detail}"
    return _with(
        c,
        name=c.name or "?",
        status=status,
        detail=detail,
        validation=validation,
        scores=_scores(c.scores),
        audit=c.reward_audit,
    )


def _rounds(results: SearchResults, cands: list[SimpleNamespace]) -> list[SimpleNamespace]:
    """One row a round: candidates proposed, accepted, screened and failed, and its best."""
    out = []
    for rnd in _round_numbers(results):
        mine = [c for c in cands if c.round == rnd]
        done = [c for c in mine if _ok(c.scores.f1)]
        best = max(done, key=lambda c: c.scores.f1, default=None)  # every f1 in `done` is a number
        out.append(
            SimpleNamespace(
                round=rnd,
                proposed=len(mine),
                accepted=sum(bool(c.accepted) for c in mine),
                screened=len(done),
                failed=sum(c.status == "failed" for c in mine),
                best_f1=best.scores.f1 if best else None,
                best=best.name if best else None,
            )
        )
    return out


def _final_view(f: FinalComparison | None) -> SimpleNamespace:
    """The final test comparison, its scores as rows; the sizes None and no rows when it was not reached."""
    if f is None:
        return SimpleNamespace(n_problems=None, n_samples=None, correction=None, scores=[], tests=[])
    return _with(f, scores=[SimpleNamespace(name=name, scores=s) for name, s in f.scores.items()])


def _seeds_view(s: SeedsResult | None) -> SimpleNamespace | None:
    if s is None or not s.runs:
        return None
    runs = [_with(r, status=r.status or "?", scores=_scores(r.scores), test=_scores(r.test)) for r in s.runs]
    return _with(s, runs=runs)


def _context(results: SearchResults, path: Path) -> dict[str, Any]:
    """The template's context (besides the plots): the page top to bottom."""
    cfg = clean(results.config)  # the config as written: any field may be absent
    proposer, halving = cfg.get("proposer") or {}, cfg.get("halving") or {}
    cands = [_candidate(c) for c in results.candidates]
    ctrl = results.control
    ensembles = [
        _with(e, kind=e.kind or "?", status=e.status or "?", scores=_scores(e.scores), audit=e.reward_audit)
        for e in results.ensembles
    ]
    best = min((c for c in cands if c.rank is not None), key=lambda c: c.rank, default=None)
    winners = ([SimpleNamespace(label=f"best single ({best.name})", audit=best.audit)] if best else []) + [
        SimpleNamespace(label=f"{e.kind} ensemble", audit=e.audit) for e in ensembles
    ]
    return {
        "folder": Path(cfg.get("out") or path.parent).name or str(path.parent),
        "base_model": results.base_model or cfg.get("base_model") or "n/a",
        "wall": _duration(results.wall_s),
        "proposer": proposer.get("kind", "n/a") + (f" ({proposer['model']})" if proposer.get("model") else ""),
        "cfg": SimpleNamespace(**{k: cfg.get(k, "n/a") for k in _SETUP}),
        "final_steps": cfg.get("final_steps") or cfg.get("screen_steps", "n/a"),
        "halving": bool(halving.get("enabled")),
        "base_rewards": [str(b.get("name")) for b in cfg.get("base_rewards") or [] if isinstance(b, dict)],
        "control": _with(ctrl, status=ctrl.status or "?", scores=_scores(ctrl.scores)),
        "rounds": _rounds(results, cands),
        "candidates": cands,
        "n_rejected": sum(c.status == "rejected" for c in cands),
        "n_failed": sum(c.status == "failed" for c in cands),
        "ensembles": ensembles,
        "seeds": _seeds_view(results.seeds),
        "final": _final_view(results.final),
        "winners": winners,
        "calibration": results.calibration,
    }


def render_html(results: SearchResults, path: Path = Path("search_report.html"), plots: bool = True) -> str:
    """The report as a string; `path` only names the output folder when the config does not."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters.update(num=_num, signed=_signed, ci=_ci, pvalue=_pvalue)
    context = _context(results, path)
    return env.get_template("search_report.html.j2").render(**context, plots=_figures(results) if plots else {})


def write_report(results: SearchResults, path: Path) -> Path:
    """Write the search report to `path` (creating its folder) and return `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(results, path), encoding="utf-8")
    return path
