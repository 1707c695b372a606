"""PNG plots of evaluations (`write_eval_plots`, `write_compare_plots`): pass@k against k, and accuracy
against the token budget. Drawn from eval.json's metrics with matplotlib's Agg canvas directly (no pyplot,
no display, no global state); deterministic: fixed size and dpi, no timestamp or software tag.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from rlvr.runs import EvalResult, Metric, read_eval

__all__ = ["metric_series", "plot_accuracy_vs_tokens", "plot_pass_at_k", "write_compare_plots", "write_eval_plots"]

_METRIC_RE = re.compile(r"^(pass|maj)@(\d+)$")
_FIGSIZE = (6.0, 4.0)  # inches
_DPI = 100
_PNG_METADATA = {"Software": None}  # drop matplotlib's version tag so files depend only on the data

Series = list[tuple[int, float, float, float, float]]  # (k, value, ci_low, ci_high, tokens_per_problem)


def _point(k: int, m: Metric) -> tuple[int, float, float, float, float]:
    ci = m.ci or [None, None]
    return (k, _f(m.value), _f(ci[0]), _f(ci[1]), _f(m.tokens_per_problem))


def _f(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def metric_series(metrics: Mapping[str, Metric], family: str) -> Series:
    """Points of one metric family (`"pass"` or `"maj"`), sorted by k.

    maj@1 is pass@1 (one vote), so the maj series starts from pass@1 when it is present.

    >>> m = {"pass@1": Metric(value=.2, ci=[.1, .3], tokens_per_problem=10.0),
    ...      "maj@2": Metric(value=.25, ci=[.15, .35], tokens_per_problem=20.0)}
    >>> metric_series(m, "maj")
    [(1, 0.2, 0.1, 0.3, 10.0), (2, 0.25, 0.15, 0.35, 20.0)]
    """
    out = []
    for name, m in metrics.items():
        match = _METRIC_RE.match(name)
        if match is None:
            continue
        fam, k = match.group(1), int(match.group(2))
        if fam == family or (family == "maj" and name == "pass@1"):
            out.append(_point(k, m))
    return sorted(out)


def _errorbar(ax: Axes, xs: Sequence[float], s: Series, **kw: Any) -> None:
    ys = [p[1] for p in s]
    yerr = [[max(p[1] - p[2], 0.0) for p in s], [max(p[3] - p[1], 0.0) for p in s]]
    ax.errorbar(xs, ys, yerr=yerr, **{"capsize": 3, "markersize": 5, "linewidth": 1.5, **kw})


def _new_figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=_FIGSIZE, dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _families(metrics: Mapping[str, Metric]) -> Iterator[tuple[str, str, Series]]:
    """(family, line style, points) of pass@k and, when it has two points or more, maj@k."""
    for family, style in (("pass", "-o"), ("maj", "--s")):
        s = metric_series(metrics, family)
        if family == "pass" or len(s) >= 2:
            yield family, style, s


def _save(fig: Figure, path: Path, xlabel: str, title: str) -> Path:
    ax = fig.axes[0]
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    ax.set_ylim(0.0, min(1.02, ax.get_ylim()[1] * 1.1 + 0.02))  # from 0; headroom for labels
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=_DPI, metadata=_PNG_METADATA)
    return path


def _colors(n: int) -> list[str]:
    return [f"C{i % 10}" for i in range(n)]


def plot_pass_at_k(runs: Sequence[tuple[str, EvalResult]], path: Path, title: str | None = None) -> Path:
    """pass@k (solid) and maj@k (dashed) against k on a log2 axis, with 95% CI bars, one colour for each
    `(label, eval.json record)` of `runs`; greedy accuracy is a star just left of k=1."""
    fig, ax = _new_figure()
    ks: set[int] = set()
    for i, ((label, e), color) in enumerate(zip(runs, _colors(len(runs)), strict=True)):
        metrics = e.metrics
        dodge = 2.0 ** (0.04 * (i - (len(runs) - 1) / 2))  # side by side, so CI bars do not overlap
        for family, style, s in _families(metrics):
            ks |= {p[0] for p in s}
            _errorbar(ax, [p[0] * dodge for p in s], s, fmt=style, color=color, label=f"{label} {family}@k")
        if "greedy" in metrics:
            gs: Series = [_point(1, metrics["greedy"])]
            _errorbar(ax, [0.9 * dodge], gs, fmt="*", color=color, markersize=10, label=f"{label} greedy")
    ax.set_xscale("log", base=2)  # after plotting: a point at 0 is then dropped, not stretched over the axis
    if ks:
        ax.set_xticks(sorted(ks))
    return _save(fig, path, "k (samples per problem)", title or "pass@k and maj@k (95% CI)")


def plot_accuracy_vs_tokens(runs: Sequence[tuple[str, EvalResult]], path: Path, title: str | None = None) -> Path:
    """Accuracy against tokens per problem (log2 axis), so runs line up by what they cost: pass@k circles,
    maj@k squares, greedy stars, labelled with k."""
    fig, ax = _new_figure()
    for (label, e), color in zip(runs, _colors(len(runs)), strict=True):
        metrics = e.metrics
        for family, style, s in _families(metrics):
            xs = [p[4] for p in s]
            _errorbar(ax, xs, s, fmt=style, color=color, label=f"{label} {family}@k")
            for x, p in zip(xs, s, strict=True):
                ax.annotate(str(p[0]), (x, p[1]), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
        if "greedy" in metrics:
            gs: Series = [_point(1, metrics["greedy"])]
            _errorbar(ax, [gs[0][4]], gs, fmt="*", color=color, markersize=10, label=f"{label} greedy")
    ax.set_xscale("log", base=2)  # after plotting (see plot_pass_at_k)
    return _save(fig, path, "tokens per problem", title or "accuracy at a token budget (labels: k)")


def _title(e: EvalResult) -> str:
    return f"{e.task}/{e.split}: {e.n_problems or '?'} problems x {e.n_samples or '?'}"


def write_eval_plots(eval_dir: Path) -> list[Path]:
    """Write `pass_at_k.png` and `accuracy_vs_tokens.png` into an evaluation folder."""
    eval_dir = Path(eval_dir)
    e = read_eval(eval_dir)
    runs = [(eval_dir.name, e)]
    return [
        plot_pass_at_k(runs, eval_dir / "pass_at_k.png", title=f"pass@k, {_title(e)}"),
        plot_accuracy_vs_tokens(runs, eval_dir / "accuracy_vs_tokens.png", title=f"accuracy vs tokens, {_title(e)}"),
    ]


def write_compare_plots(paths: Sequence[Path], out_dir: Path, labels: Sequence[str] | None = None) -> list[Path]:
    """Both plots for several evaluations (one colour each) into `out_dir`; labels default to folder names."""
    paths = [Path(p) for p in paths]
    names = list(labels) if labels is not None else [p.name for p in paths]
    runs = [(n, read_eval(p)) for n, p in zip(names, paths, strict=True)]
    out_dir = Path(out_dir)
    return [
        plot_pass_at_k(runs, out_dir / "pass_at_k.png"),
        plot_accuracy_vs_tokens(runs, out_dir / "accuracy_vs_tokens.png"),
    ]
