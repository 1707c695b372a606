"""Train accuracy against the model tokens sampled so far, for runs with and without a tool, and the
tool-use rate of the runs that had one (docs/environments.md):

    python bench/calculator_curve.py runs/calculator-grpo runs/calculator-notool --out docs/calculator_curve.png

A run's model tokens per step are `env/model_tokens` (with an environment) or `train/completion_len/mean`
(without), times the step's completions; the table prints window means and the cumulative tokens.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rlvr.runs import read_manifest
from rlvr.runs.metrics import read_metrics


def curve(run: Path) -> dict[str, np.ndarray]:
    m, cfg = read_metrics(run / "metrics.jsonl"), read_manifest(run / "manifest.json").config
    per_step = cfg["prompts_per_step"] * cfg["group_size"]
    env = m.has("env/model_tokens")
    _, tok = m.series("env/model_tokens" if env else "train/completion_len/mean")
    steps, acc = m.series("train/accuracy")
    out = {"step": np.asarray(steps), "acc": np.asarray(acc), "tokens": np.cumsum(np.asarray(tok) * per_step)}
    if env:
        out["tool_use"] = np.asarray(m.series("env/tool_use_frac")[1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    curves = {r.name: curve(r) for r in args.runs}
    for name, c in curves.items():
        print(f"{name}: {len(c['step'])} steps, {c['tokens'][-1]:,.0f} model tokens")
        for i in range(0, len(c["step"]), args.window):
            w = slice(i, i + args.window)
            use = f"  tool use {np.mean(c['tool_use'][w]):.3f}" if "tool_use" in c else ""
            print(f"  steps {c['step'][w][0]:>3}-{c['step'][w][-1]:>3}  tokens {c['tokens'][w][-1]:>10,.0f}"
                  f"  train accuracy {np.mean(c['acc'][w]):.3f}{use}")  # fmt: skip
    if args.out is None:
        return
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6))
    ax = fig.subplots()
    k = np.ones(args.window // 2) / (args.window // 2)
    for i, (name, c) in enumerate(curves.items()):
        x = c["tokens"][len(k) - 1 :] / 1e6
        ax.plot(x, np.convolve(c["acc"], k, mode="valid"), color=f"C{i}", label=f"{name}: train accuracy")
        if "tool_use" in c:
            ax.plot(x, np.convolve(c["tool_use"], k, mode="valid"), color=f"C{i}", ls="--", label=f"{name}: tool use")
    ax.set_xlabel("model tokens sampled (millions)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100, metadata={"Software": None})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
