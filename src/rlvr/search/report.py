"""Write `search_report.html`: one self-contained page (inline CSS, plots as base64 PNG, no script,
no external resource) that explains a finished reward search from its `results.json` data.

Sections, in order:

1. header: output folder, base model, wall time, proposer, rounds x candidates, step budgets, split
   sizes, and how to read the numbers;
2. the round-by-round trajectory: every screened candidate's dev F1 by round against the control
   (base rewards only) and the best so far, with a table per round;
3. the leaderboard: rank, what each candidate measures, dev F1 and accuracy with 95% bootstrap
   intervals, answered share, reward-audit flags and why a candidate was rejected or failed;
4. ensembles (top, diverse, random) against the control, and the seed study;
5. the final test-split comparison (read once) with McNemar's tests against the control;
6. the reward-hacking audit of the winners (best single candidate and the ensembles);
7. the calibration of short screens against full runs, when `results.calibration` is present;
8. every candidate's source code (HTML-escaped) and its validation result.

Any part may be missing or None (a failed control, no ensembles, no test comparisons): the page
renders with "n/a" or a sentence in their place. Run by `rlvr search` (see rlvr.search.run), or by
hand: `write_report(read_search_results("OUT"), Path("OUT/search_report.html"))`.
"""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from typing import Any

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend is chosen first
from matplotlib.figure import Figure  # noqa: E402

from rlvr.runs import clean  # noqa: E402
from rlvr.runs.search import SearchResults  # noqa: E402

__all__ = ["render_html", "write_report"]

_TEMPLATES = Path(__file__).parent / "templates"
_CONTROL, _CAND, _BEST = "#7f7f7f", "#1f77b4", "#d62728"
_TEST_KEYS = "a b b01 b10 pvalue p_adjusted significant greedy_diff pass1_diff pass1_diff_ci".split()


# ---------------------------------------------------------------------------------------- formatting
def _ok(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _num(x: Any, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if _ok(x) else "n/a"


def _signed(x: Any) -> str:
    return f"{x:+.3f}" if _ok(x) else "n/a"


def _ci(x: Any) -> str:
    if isinstance(x, list | tuple) and len(x) == 2 and all(_ok(v) for v in x):
        return f"[{x[0]:.3f}, {x[1]:.3f}]"
    return ""


def _pvalue(x: Any) -> str:
    if not _ok(x):
        return "n/a"
    return "< 0.001" if x < 1e-3 else f"{x:.3f}"


def _duration(seconds: Any) -> str:
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


def _f1(scores: Any) -> tuple[float | None, list[float] | None]:
    if not isinstance(scores, dict) or not _ok(scores.get("f1")):
        return None, None
    ci = scores.get("f1_ci")
    return scores["f1"], ci if _ci(ci) else None


def _err(value: float, ci: Any) -> list[list[float]] | None:
    """Error-bar lengths below and above `value` (never negative, should the interval not hold it)."""
    return [[max(0.0, value - ci[0])], [max(0.0, ci[1] - value)]] if _ci(ci) else None


def _trajectory(d: dict[str, Any]) -> Figure | None:
    """Dev F1 of each screened candidate by round (with its CI), the control line and band, best so far."""
    pts: list[tuple[int, float, list[float] | None, Any]] = []
    for c in d["candidates"]:
        f1, ci = _f1(c["scores"])
        if f1 is not None and c["round"] is not None:
            pts.append((c["round"], f1, ci, c["steps"]))
    ctrl, ctrl_ci = _f1(d["control"]["scores"])
    if not pts and ctrl is None:
        return None
    rounds = sorted({r["round"] for r in d["rounds"]} | {p[0] for p in pts}) or [1]
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
        ax.errorbar([x], [f1], yerr=err, fmt="o", color=_CAND, mfc="white" if hollow else _CAND, ms=5,
                    elinewidth=0.8, alpha=0.85, capsize=2)  # fmt: skip
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


def _final(d: dict[str, Any]) -> Figure | None:
    """Test pass@1 with its 95% CI for each configuration."""
    rows = [(s["name"], s["accuracy"], s["accuracy_ci"]) for s in d["final"]["scores"] if _ok(s["accuracy"])]
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


def _calibration(d: dict[str, Any]) -> Figure | None:
    """Short-screen F1 against the full run's F1, one point per calibration candidate."""
    cal = d["calibration"]
    rows = (cal or {}).get("rows", [])
    pts = [(r["short_f1"], r["full_f1"]) for r in rows if _ok(r["short_f1"]) and _ok(r["full_f1"])]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=_CAND, s=18)
    lo, hi = min(min(p) for p in pts), max(max(p) for p in pts)
    ax.plot([lo, hi], [lo, hi], ":", color=_CONTROL, linewidth=1)
    ax.set(xlabel=f"dev F1 after {cal['short_steps']} steps", ylabel=f"dev F1 after {cal['full_steps']} steps",
           title="short screen vs full run")  # fmt: skip
    ax.grid(alpha=0.3)
    return fig


def _figures(d: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, draw in (("trajectory", _trajectory), ("final", _final), ("calibration", _calibration)):
        try:
            fig = draw(d)
        except Exception:  # noqa: BLE001 - a figure that cannot be drawn is left out, never fatal
            plt.close("all")
            fig = None
        if fig is not None:
            out[name] = _png(fig)
    return out


# ---------------------------------------------------------------------------------------- the view
def _scores(s: Any) -> dict[str, Any]:
    s = s if isinstance(s, dict) else {}
    keys = ("f1", "f1_ci", "accuracy", "accuracy_ci", "answered", "greedy", "n_problems", "n_samples")
    return {k: s.get(k) for k in keys}


def _audit(a: Any) -> dict[str, Any] | None:
    if not isinstance(a, dict):
        return None
    keys = ("reward", "kind", "n", "mean", "std", "mean_correct", "mean_incorrect", "corr_correct", "corr_length")
    return {**{k: a.get(k) for k in keys}, "flags": [str(f) for f in a.get("flags") or []], "note": a.get("note")}


def _candidate(c: dict[str, Any]) -> dict[str, Any]:
    status = c.get("status") or "not screened"
    if status == "rejected":
        detail = f"at {c.get('stage') or '?'}: {c.get('reason') or 'no reason given'}"
    elif status == "failed":
        detail = c.get("error") or "no error recorded"
    else:
        detail = ""
    if c.get("accepted") is None:
        validation = "not validated"
    elif c["accepted"]:
        validation = "accepted (static, load, namespace and probe checks passed)"
    else:
        validation = f"rejected {detail}"
    return {
        "rank": c.get("rank"), "name": str(c.get("name") or "?"), "round": c.get("round"),
        "accepted": c.get("accepted"), "description": c.get("description") or "",
        "parents": list(c.get("parents") or []),
        "source": c.get("source") or "", "steps": c.get("steps"), "status": status, "detail": detail,
        "validation": validation, "scores": _scores(c.get("scores")), "audit": _audit(c.get("reward_audit")),
    }  # fmt: skip


def _rounds(d: dict[str, Any], cands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    nums = {r.get("round") for r in d.get("rounds") or [] if isinstance(r, dict)} | {c["round"] for c in cands}
    out = []
    for rnd in sorted(r for r in nums if isinstance(r, int)):
        mine = [c for c in cands if c["round"] == rnd]
        done = [c for c in mine if _ok(c["scores"]["f1"])]
        best = max(done, key=lambda c: c["scores"]["f1"], default=None)
        out.append({"round": rnd, "proposed": len(mine), "accepted": sum(bool(c["accepted"]) for c in mine),
                    "screened": len(done), "failed": sum(c["status"] == "failed" for c in mine),
                    "best_f1": best["scores"]["f1"] if best else None,
                    "best": best["name"] if best else None})  # fmt: skip
    return out


def _final_view(f: Any) -> dict[str, Any]:
    f = f if isinstance(f, dict) else {}
    scores = [{"name": str(k), **_scores(v)} for k, v in (f.get("scores") or {}).items()]
    tests = [{k: t.get(k) for k in _TEST_KEYS} for t in f.get("tests") or []]
    keys = ("split", "n_problems", "n_samples", "correction")
    return {**{k: f.get(k) for k in keys}, "scores": scores, "tests": tests}


def _seeds_view(s: Any) -> dict[str, Any] | None:
    if not isinstance(s, dict) or not s.get("runs"):
        return None
    runs = [{"seed": r.get("seed"), "status": r.get("status") or "?", "scores": _scores(r.get("scores"))}
            for r in s["runs"]]  # fmt: skip
    return {"ensemble": s.get("ensemble"), "runs": runs, "f1_mean": s.get("f1_mean"), "f1_sd": s.get("f1_sd")}


def _calibration_view(cal: Any) -> dict[str, Any] | None:
    if not isinstance(cal, dict):
        return None
    keys = ("short_steps", "full_steps", "n", "tau_short_full", "p_short_full", "tau_seeds", "p_seeds")
    rows = [{k: r.get(k) for k in ("name", "short_f1", "full_f1", "full_f1_seed2")} for r in cal.get("rows") or []]
    return {**{k: cal.get(k) for k in keys}, "rows": rows}


def _view(results: SearchResults, path: Path) -> dict[str, Any]:
    """The template's context: the results as plain values, with the derived columns filled in."""
    r = clean(results.to_json())
    cfg = r.get("config") or {}
    cands = [_candidate(c) for c in r.get("candidates") or []]
    ctrl = r.get("control") or {}
    ensembles = [{"kind": str(e.get("kind") or "?"), "members": list(e.get("members") or []),
                  "status": e.get("status") or "?", "error": e.get("error"), "scores": _scores(e.get("scores")),
                  "audit": _audit(e.get("reward_audit"))} for e in r.get("ensembles") or []]  # fmt: skip
    best = min((c for c in cands if c["rank"] is not None), key=lambda c: c["rank"], default=None)
    winners = ([{"label": f"best single ({best['name']})", "audit": best["audit"]}] if best else []) + [
        {"label": f"{e['kind']} ensemble", "audit": e["audit"]} for e in ensembles
    ]
    proposer = cfg.get("proposer") or {}
    halving = cfg.get("halving") or {}
    return {
        "folder": Path(cfg.get("out") or path.parent).name or str(path.parent),
        "base_model": r.get("base_model") or cfg.get("base_model") or "n/a",
        "wall": _duration(r.get("wall_s")),
        "proposer": proposer.get("kind", "n/a") + (f" ({proposer['model']})" if proposer.get("model") else ""),
        "cfg": {k: cfg.get(k, "n/a") for k in ("rounds", "candidates", "screen_steps", "dev_n", "dev_samples",
                                               "test_n", "test_samples", "seed", "task", "preset", "ensemble_size")},
        "final_steps": cfg.get("final_steps") or cfg.get("screen_steps", "n/a"),
        "halving": bool(halving.get("enabled")),
        "base_rewards": [str(b.get("name")) for b in cfg.get("base_rewards") or [] if isinstance(b, dict)],
        "control": {"status": ctrl.get("status") or "?", "error": ctrl.get("error"),
                    "scores": _scores(ctrl.get("scores"))},
        "rounds": _rounds(r, cands),
        "candidates": cands,
        "n_rejected": sum(c["status"] == "rejected" for c in cands),
        "n_failed": sum(c["status"] == "failed" for c in cands),
        "ensembles": ensembles,
        "seeds": _seeds_view(r.get("seeds")),
        "final": _final_view(r.get("final")),
        "winners": winners,
        "calibration": _calibration_view(r.get("calibration")),
    }  # fmt: skip


def render_html(results: SearchResults, path: Path = Path("search_report.html"), plots: bool = True) -> str:
    """The report as a string; `path` only names the output folder when the config does not."""
    d = _view(results, path)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters.update(num=_num, signed=_signed, ci=_ci, pvalue=_pvalue)
    return env.get_template("search_report.html.j2").render(**d, plots=_figures(d) if plots else {})


def write_report(results: SearchResults, path: Path) -> Path:
    """Write the search report to `path` (creating its folder) and return `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(results, path), encoding="utf-8")
    return path
