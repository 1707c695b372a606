"""The synchronous trainer against asynchronous rollouts: dev curve and step time of each run (docs/scaling.md).

    python bench/async_curve.py /tmp/i44a/runs/sync /tmp/i44a/runs/async1 --out docs/async_curve.png

Prints a markdown table (dev greedy accuracy and pass@1 at each evaluation, median and total step time,
the async runs' overlap and idle seconds) and, with `--out`, plots dev pass@1 against the step and
against the training wall time (`time/elapsed_s`).
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from rlvr.runs.metrics import read_metrics


def summary(run: Path) -> dict:
    m = read_metrics(run / "metrics.jsonl")
    all_steps, pass1 = m.series("eval/dev/pass@1")
    _, greedy = m.series("eval/dev/greedy_acc")
    _, step_s = m.series("time/step_s")
    _, elapsed = m.series("time/elapsed_s")
    at_eval = dict(zip(all_steps, elapsed, strict=True))
    evals = [(s, g, p) for s, g, p in zip(all_steps, greedy, pass1, strict=True) if not math.isnan(p)]
    steps = [s for s, _, _ in evals]
    out = {
        "name": run.name,
        "evals": evals,
        "elapsed_at_eval": [at_eval[s] for s in steps],
        "median_step_s": statistics.median(step_s),
        "train_s": elapsed[-1],
    }
    for key in ("time/generate_s", "time/update_s", "async/overlap_s", "async/trainer_wait_s", "async/worker_idle_s"):
        if m.has(key):
            out[key] = statistics.median(v for v in m.series(key)[1] if not math.isnan(v))
    return out


def table(runs: list[dict]) -> str:
    steps = [s for s, _, _ in runs[0]["evals"]]
    head = "| run | " + " | ".join(f"dev @{s} (greedy / pass@1)" for s in steps) + " | median s/step | train s |"
    lines = [head, "|" + "---|" * (len(steps) + 3)]
    for r in runs:
        cells = " | ".join(f"{g:.3f} / {p:.3f}" for _, g, p in r["evals"])
        lines.append(f"| {r['name']} | {cells} | {r['median_step_s']:.3f} | {r['train_s']:.1f} |")
    lines.append("")
    keys = ["time/generate_s", "time/update_s", "async/overlap_s", "async/trainer_wait_s", "async/worker_idle_s"]
    lines.append("| run (medians per step, s) | " + " | ".join(f"`{k}`" for k in keys) + " |")
    lines.append("|" + "---|" * (len(keys) + 1))
    for r in runs:
        lines.append(f"| {r['name']} | " + " | ".join(f"{r[k]:.3f}" if k in r else "-" for k in keys) + " |")
    return "\n".join(lines)


def plot(runs: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    for r in runs:
        steps = [s for s, _, _ in r["evals"]]
        pass1 = [p for _, _, p in r["evals"]]
        a.plot(steps, pass1, marker="o", label=r["name"])
        b.plot(r["elapsed_at_eval"], pass1, marker="o", label=r["name"])
    a.set_xlabel("step")
    b.set_xlabel("training wall seconds (time/elapsed_s)")
    for ax in (a, b):
        ax.set_ylabel("dev pass@1")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    runs = [summary(r) for r in args.runs]
    print(table(runs))
    if args.out:
        plot(runs, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
