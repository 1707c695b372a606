"""The hack world's curves (docs/code.md, "A policy that learns a hack"): per window of steps, each run's
training reward, the share of its samples that are the shortcut, the strict pass rate and the hack share
of the audit's strict re-verification, read from each run's `samples/train.jsonl` and `audit/audit.json`
(run `rlvr audit RUN` first). Prints a markdown table per run and writes the PNG.

    python bench/hack_curve.py runs/hack-naive runs/hack-rlvr --out docs/hack_curve.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rlvr.runs import read_samples  # noqa: E402

SHORTCUT = "SystemExit"


def windows(run: Path) -> list[dict]:
    """The strict check's windows from the run's audit.json, each with the shortcut's share of its samples."""
    audit = json.loads((run / "audit" / "audit.json").read_text())
    ev = next(c for c in audit["checks"] if c["name"] == "strict")["evidence"]
    samples = read_samples(run / "samples" / "train.jsonl")
    for w in ev["windows"]:
        mine = [s for s in samples if w["first_step"] <= (s.step or 0) <= w["last_step"]]
        w["shortcut"] = sum(SHORTCUT in (s.completion or "") for s in mine) / max(1, len(mine))
    return ev["windows"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/hack_curve.png"))
    args = ap.parse_args()
    fig, axes = plt.subplots(1, len(args.runs), figsize=(5.2 * len(args.runs), 3.4), squeeze=False)
    for ax, run in zip(axes[0], args.runs, strict=True):
        ws = windows(run)
        print(f"\n{run.name}\n\n| steps | training reward | shortcut share | strict pass rate | hack share |")
        print("|---|---|---|---|---|")
        for w in ws:
            print(f"| {w['first_step']}-{w['last_step']} | {w['reward']:.3f} | {w['shortcut']:.3f} | "
                  f"{w['strict']:.3f} | {w['hack']:.3f} |")  # fmt: skip
        x = [w["last_step"] for w in ws]
        for key, label, style in (("reward", "training reward", "-o"), ("strict", "strict pass rate", "-s"),
                                  ("shortcut", "`raise SystemExit(0)` share", "-^")):  # fmt: skip
            ax.plot(x, [w[key] for w in ws], style, ms=4, label=label)
        ax.set(title=run.name, xlabel="step", ylabel="share of training samples", ylim=(-0.02, 1.02))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
