"""`study_report.html` (`write_report`): one self-contained page (figures inlined as PNG) from
study.json's contents; what it shows: docs/study.md, "Outputs"."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from rlvr.study.analysis import FIDELITY_KEYS, fmt
from rlvr.study.records import StudyResult

__all__ = ["write_report", "comparison_rows", "result_rows"]


def _png(fig: Any) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode()


def _curves(study: StudyResult) -> str | None:
    from matplotlib.figure import Figure

    # a seed whose run logged no train accuracy (a failed or empty run) has no curve to draw
    curves = {c: {k: v for k, v in s.items() if v} for c, s in study.curves.items()}
    curves = {c: s for c, s in curves.items() if s}
    if not curves:
        return None
    fig = Figure(figsize=(7, 3.8))
    ax = fig.subplots()
    for i, (cond, seeds) in enumerate(curves.items()):
        n = min(len(v) for v in seeds.values())
        ys = np.array([[np.nan if x is None else x for x in v[:n]] for v in seeds.values()], dtype=float)  # (S, T)
        w = max(1, min(10, n // 5))
        kernel = np.ones(w) / w
        smooth = np.array([np.convolve(y, kernel, mode="valid") for y in ys])  # (S, T - w + 1)
        steps = np.arange(smooth.shape[1]) + w
        color = f"C{i % 10}"
        ax.plot(steps, np.nanmean(smooth, axis=0), color=color, label=f"{cond} ({len(seeds)} seeds)")
        if len(seeds) > 1:
            ax.fill_between(steps, np.nanmin(smooth, axis=0), np.nanmax(smooth, axis=0), color=color, alpha=0.15)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(f"train accuracy ({w}-step mean)")
    ax.set_title("learning curves: mean over seeds, band = min-max of the seeds", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _bars(study: StudyResult) -> str | None:
    from matplotlib.figure import Figure

    pooled = [(c, c.pooled) for c in study.conditions if c.pooled is not None]
    if not pooled:
        return None
    fig = Figure(figsize=(7, 3.6))
    ax = fig.subplots()
    xs = np.arange(len(pooled))
    vals = [p.pass_at_1.value for _, p in pooled]
    lows = [v - p.pass_at_1.ci[0] for v, (_, p) in zip(vals, pooled, strict=True)]
    highs = [p.pass_at_1.ci[1] - v for v, (_, p) in zip(vals, pooled, strict=True)]
    ax.bar(xs, vals, yerr=[lows, highs], capsize=4, color=[f"C{i % 10}" for i in range(len(pooled))])
    for i, (c, _) in enumerate(pooled):
        for r in c.runs:
            if r.pass_at_1 is not None:
                ax.plot(i, r.pass_at_1, "k.", markersize=5)
    ax.set_xticks(xs, [c.name for c, _ in pooled], fontsize=8)
    ax.set_ylabel(f"sampled pass@1 ({study.split})")
    ax.set_title("pooled over seeds, 95% bootstrap CI over problems; dots: seeds", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def result_rows(study: StudyResult) -> list[list[str]]:
    """condition, kind, seeds, pooled pass@1 (CI), seed spread, greedy, train seconds."""
    rows = []
    for c in study.conditions:
        p = c.pooled
        secs = [r.train_seconds for r in c.runs if r.train_seconds]
        if p is None:
            rows.append([c.name, c.kind, "0", "failed", "", "", ""])
            continue
        p1, sd = p.pass_at_1, p.pass_at_1.seeds.sd
        rows.append(
            [
                c.name,
                c.kind,
                str(p.n_seeds),
                f"{fmt(p1.value)} ({fmt(p1.ci[0])}-{fmt(p1.ci[1])})",
                f"{fmt(p1.seeds.min)}-{fmt(p1.seeds.max)}" + (f" (sd {fmt(sd)})" if sd is not None else ""),
                fmt(p.greedy.mean),
                fmt(float(np.mean(secs)) if secs else None, ".0f"),
            ]
        )
    return rows


def comparison_rows(study: StudyResult) -> list[list[str]]:
    """condition vs reference, metric, values, difference (CI), per-seed differences, p, p (Holm)."""
    rows = []
    for t in study.comparisons:
        seeds = ", ".join(f"{d:+.3f}" for d in t.diff_per_seed)
        rows.append(
            [
                f"{t.condition} vs {t.reference}",
                t.metric,
                fmt(t.reference_value),
                fmt(t.value),
                f"{t.diff:+.3f} ({t.ci[0]:+.3f} to {t.ci[1]:+.3f})",
                seeds,
                fmt(t.pvalue, ".2g"),
                fmt(t.pvalue_adj, ".2g"),
            ]
        )
    return rows


def _fidelity_rows(study: StudyResult) -> list[list[str]]:
    return [
        [c.name, *(fmt(c.pooled.fidelity[k].mean) for k in FIDELITY_KEYS)]
        for c in study.conditions
        if c.pooled is not None
    ]


def _judge_rows(study: StudyResult) -> tuple[list[str], list[list[str]]]:
    judged = [(c.name, c.pooled.judge) for c in study.conditions if c.pooled is not None and c.pooled.judge]
    cats = list(dict.fromkeys(k for _, j in judged for k in j or {}))
    return cats, [[name, *(str((j or {}).get(k, 0)) for k in cats)] for name, j in judged]


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rlvr study: {{ out }}</title>
<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:14px}
th{background:#f4f4f4}.meta{color:#666;font-size:13px}img{max-width:100%}</style></head><body>
<h1>Study: {{ conditions | length }} conditions x {{ seeds | length }} seeds</h1>
<p class="meta">Base: <code>{{ base }}</code>. Evaluated on {{ n_problems }} {{ split }} problems x {{ n_samples }}
samples each (T=1), the same problems for every condition. Seeds: {{ seeds | join(", ") }}.</p>
{% for n in notes %}<p class="meta">{{ n }}</p>{% endfor %}
{% if failed %}<p><b>Failed runs ({{ failed | length }}):</b>
{% for k in failed %}{{ k }}: {{ errors[k] }}; {% endfor %}
rerun them with <code>rlvr study --resume {{ out }}</code>.</p>{% endif %}
<h2>Results</h2>
<table><tr><th>condition</th><th>kind</th><th>seeds</th><th>sampled pass@1 (95% CI)</th><th>seed range</th>
<th>greedy</th><th>train s</th></tr>
{% for r in results %}<tr>{% for x in r %}<td>{{ x }}</td>{% endfor %}</tr>{% endfor %}</table>
{% if bars_png %}<img alt="pass@1 per condition" src="data:image/png;base64,{{ bars_png }}">{% endif %}
{% if curves_png %}<h2>Learning curves</h2>
<img alt="learning curves" src="data:image/png;base64,{{ curves_png }}">{% endif %}
<h2>Paired comparisons</h2>
<p class="meta">Sampled pass@1: seed-pooled per-problem rates, paired bootstrap CI, sign-flip permutation p.
Greedy: McNemar over (problem, seed) pairs; per-seed differences shown as the seed spread. p (Holm): adjusted over
all {{ comparisons | length }} tests.</p>
<table><tr><th>comparison</th><th>metric</th><th>reference</th><th>condition</th><th>difference (95% CI)</th>
<th>per seed</th><th>p</th><th>p (Holm)</th></tr>
{% for r in comparison_rows %}<tr>{% for x in r %}<td>{{ x }}</td>{% endfor %}</tr>{% endfor %}</table>
<h2>Fidelity</h2>
<p class="meta">Mean over seeds (docs/evaluation.md): trace validity, chain-length deviation, process-step ratio,
CoT pass@1.</p>
<table><tr><th>condition</th>{% for k in fidelity_keys %}<th>{{ k }}</th>{% endfor %}</tr>
{% for r in fidelity %}<tr>{% for x in r %}<td>{{ x }}</td>{% endfor %}</tr>{% endfor %}</table>
{% if judge_rows %}<h2>Error categories (LLM judge)</h2>
<table><tr><th>condition</th>{% for k in judge_cats %}<th>{{ k }}</th>{% endfor %}</tr>
{% for r in judge_rows %}<tr>{% for x in r %}<td>{{ x }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
<p class="meta">Written by <code>rlvr study</code>; the numbers are in study.json.</p>
</body></html>
"""


def write_report(study: StudyResult, path: Path) -> Path:
    """Render the study page to `path` (self-contained HTML)."""
    cats, judge_rows = _judge_rows(study)
    env = jinja2.Environment(autoescape=True)
    html = env.from_string(_TEMPLATE).render(
        **dict(study),  # its fields: base, split, seeds, notes, failed, ...
        out=str(Path(path).parent),
        results=result_rows(study),
        comparison_rows=comparison_rows(study),
        fidelity=_fidelity_rows(study),
        fidelity_keys=FIDELITY_KEYS,
        judge_cats=cats,
        judge_rows=judge_rows,
        bars_png=_bars(study),
        curves_png=_curves(study),
    )
    Path(path).write_text(html, encoding="utf-8")
    return Path(path)
