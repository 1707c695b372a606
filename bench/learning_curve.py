"""A training run's learning curve from its metrics.jsonl: a table of window means and a PNG.

    python bench/learning_curve.py runs/smollm2-arith-small --window 10 --out docs/smollm2_curve.png

Columns: train accuracy (outcome reward's mean), each reward's mean, truncated share, completion
length, token entropy, zero-std groups, and where a step's wall time went (generation vs update).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rlvr.runs.metrics import read_metrics

KEYS = {
    "accuracy": "train/accuracy",
    "reward": "reward/total/mean",
    "process": "reward/process/mean",
    "truncated": "train/truncated_frac",
    "length": "train/completion_len/mean",
    "entropy": "train/entropy",
    "zero_std": "train/zero_std_frac",
    "generate_s": "time/generate_s",
    "update_s": "time/update_s",
    "step_s": "time/step_s",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None, help="PNG of accuracy, truncation and entropy by step")
    args = ap.parse_args()
    rows = read_metrics(args.run).rows
    steps = np.array([r.step for r in rows])
    cols = {name: np.array([r.get(key) for r in rows]) for name, key in KEYS.items()}
    print("| steps | minutes | " + " | ".join(KEYS) + " |")
    print("|---" * (len(KEYS) + 2) + "|")
    minutes = np.cumsum(cols["step_s"]) / 60
    for i in range(0, len(rows), args.window):
        sl = slice(i, i + args.window)
        cells = [f"{np.nanmean(cols[k][sl]):.3g}" for k in KEYS]
        print(f"| {steps[sl][0]}-{steps[sl][-1]} | {minutes[sl][-1]:.0f} | " + " | ".join(cells) + " |")
    if args.out is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
        for ax, (name, label) in zip(axes, [("accuracy", "train accuracy"), ("truncated", "truncated share"),
                                            ("entropy", "token entropy")], strict=True):  # fmt: skip
            y = cols[name]
            ax.plot(steps, y, color="0.75", linewidth=0.8)
            k = max(1, args.window)
            smooth = np.convolve(y, np.ones(k) / k, mode="valid")
            ax.plot(steps[k - 1 :], smooth, color="C0", linewidth=1.8, label=f"mean of {k}")
            ax.set(xlabel="step", title=label)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{args.run.name}: {len(rows)} steps in {minutes[-1]:.0f} min", fontsize=10)
        fig.tight_layout()
        fig.savefig(args.out, dpi=110)
        print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
