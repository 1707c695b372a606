"""A short study of the GRPO objectives on the embedded task: same base, same budget, several seeds.

    python bench/objectives_study.py --base runs/demo/base [--steps 120] [--seeds 0 1] [--out runs/objectives]
        [--objectives grpo dr_grpo dapo gspo cispo rloo]

Each objective trains `--steps` GRPO steps from the same SFT base (8 prompts x 8 samples, lr 6e-5, no
KL, two updates per rollout so that the off-policy losses (GSPO, CISPO) act), with each paper preset's
own advantage, loss, aggregation and sampling choices (the presets in `rlvr.grpo.presets`; DAPO keeps
its dynamic sampling, so it spends more generation per step). Every run is evaluated by `rlvr eval`
on the same test problems (500 x 8 samples, T=1, top-k off) and compared with the base on the same
problems (the change in sampled pass@1, each problem's rate averaged over the seeds, with a paired
bootstrap 95% CI over problems). The script prints a markdown table
(pass@1 per seed, the change against the base pooled over seeds, greedy, entropy and completion
length at the start and end of training), writes it to OUT/table.md, draws the training trajectories
(accuracy, entropy and completion length per step, each objective's mean over seeds, smoothed over
10 steps) to OUT/trajectories.png, and keeps every run folder.

It runs the commands one after the other (the 2-core box has no room for two at once); a finished
run or evaluation folder is reused, so a killed study picks up where it stopped.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from rlvr.evaluate.stats import bootstrap_ci
from rlvr.runs import EvalResult, RunFileError, read_eval, read_jsonl, read_manifest

RLVR = [sys.executable, "-m", "rlvr"]


def run(args: list[str]) -> None:
    print("$ rlvr " + " ".join(args), flush=True)
    subprocess.run([*RLVR, *args], check=True)


def finished(folder: Path) -> bool:
    try:
        return read_manifest(folder).finished
    except RunFileError:
        return False


def evaluate(model: Path, out: Path, n: int, samples: int) -> EvalResult:
    if not finished(out):
        run(["eval", "--model", str(model), "--split", "test", "--problems", str(n), "--samples", str(samples),
             "--ks", "1", "--out", str(out), "--overwrite"])  # fmt: skip
    return read_eval(out)


def train(base: Path, objective: str, seed: int, steps: int, out: Path) -> None:
    if finished(out):
        return
    cfg = out.with_suffix(".yaml")
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f"objective: {objective}\nobjective_overrides: {{beta: 0.0}}\nsteps: {steps}\nseed: {seed}\nlr: 6.0e-5\n"
        "num_iterations: 2\neval_every: 0\nsave_every: 0\n"
    )
    run(["train", "--config", str(cfg), "--model", str(base), "--out", str(out), "--overwrite"])


def trajectory(run_dir: Path, key: str) -> tuple[float, float]:
    """Mean of `key` over the first and the last 10% of steps."""
    rows = [r[key] for r in read_jsonl(run_dir / "metrics.jsonl") if isinstance(r.get(key), int | float)]
    k = max(1, len(rows) // 10)
    return statistics.fmean(rows[:k]), statistics.fmean(rows[-k:])


def rates(ev: EvalResult) -> np.ndarray:
    """Each problem's sampled pass rate, shape (P,), in problem-id order."""
    rows = sorted(ev.per_problem, key=lambda r: r.id)
    return np.array([r.correct / r.n for r in rows])


def series(run_dir: Path, key: str) -> np.ndarray:
    """One metrics key per step, shape (S,), NaN where a step did not log it."""
    return np.array([r.get(key) if isinstance(r.get(key), int | float) else np.nan
                     for r in read_jsonl(run_dir / "metrics.jsonl")], dtype=float)  # fmt: skip


def plot_trajectories(out: Path, runs: dict[str, list[Path]]) -> Path:
    """Accuracy, entropy and completion length per step: each objective's mean over its seeds,
    smoothed with a 10-step moving average."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys = [("train/accuracy", "sampled accuracy (train)"), ("train/entropy", "token entropy"),
            ("train/completion_len/mean", "completion length (tokens)")]  # fmt: skip
    fig = Figure(figsize=(13, 3.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    window = np.ones(10) / 10
    for i, (objective, dirs) in enumerate(runs.items()):
        for ax, (key, label) in zip(axes, keys, strict=True):
            ys = [series(d, key) for d in dirs]
            n = min(len(y) for y in ys)
            mean = np.nanmean([y[:n] for y in ys], axis=0)  # (S,)
            smooth = np.convolve(mean, window, mode="valid")
            ax.plot(np.arange(len(smooth)) + 10, smooth, color=f"C{i % 10}", label=objective, linewidth=1.2)
            ax.set_title(label, fontsize=9)
            ax.set_xlabel("step", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path = out / "trajectories.png"
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="SFT base run folder (e.g. runs/demo/base)")
    ap.add_argument("--objectives", nargs="+", default=["grpo", "dr_grpo", "dapo", "gspo", "cispo", "rloo"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--n-problems", type=int, default=500)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("runs/objectives"))
    a = ap.parse_args()

    base_eval = evaluate(a.base, a.out / "eval-base", a.n_problems, a.samples)
    lines = [
        f"Base: sampled pass@1 {base_eval.metrics['pass@1'].value:.3f}, greedy "
        f"{base_eval.metrics['greedy'].value:.3f} (test, {a.n_problems} x {a.samples}). "
        f"{a.steps} steps per run, seeds {a.seeds}.",
        "",
        "| objective | pass@1 per seed | change vs base, pooled (95% CI) | greedy (mean) | entropy start -> end "
        "| length start -> end | s/step |",
        "|---|---|---|---|---|---|---|",
    ]
    dirs: dict[str, list[Path]] = {}
    for objective in a.objectives:
        evals, ents, lens, secs = [], [], [], []
        for seed in a.seeds:
            rd = a.out / f"{objective}-s{seed}"
            train(a.base, objective, seed, a.steps, rd)
            dirs.setdefault(objective, []).append(rd)
            evals.append(evaluate(rd, a.out / f"eval-{objective}-s{seed}", a.n_problems, a.samples))
            ents.append(trajectory(rd, "train/entropy"))
            lens.append(trajectory(rd, "train/completion_len/mean"))
            secs.append(statistics.median(r["time/step_s"] for r in read_jsonl(rd / "metrics.jsonl")))
        # paired over problems, pooled over seeds: each problem's pass rate averaged over the seeds' runs
        diff = np.mean([rates(e) for e in evals], axis=0) - rates(base_eval)  # (P,)
        low, high = bootstrap_ci(diff, seed=0)
        per_seed = ", ".join(f"{e.metrics['pass@1'].value:.3f}" for e in evals)
        greedy = statistics.fmean(e.metrics["greedy"].value or 0.0 for e in evals)
        lines.append(
            f"| {objective} | {per_seed} | {diff.mean():+.3f} ({low:+.3f}, {high:+.3f}) | {greedy:.3f} | "
            f"{statistics.fmean(e[0] for e in ents):.2f} -> {statistics.fmean(e[1] for e in ents):.2f} | "
            f"{statistics.fmean(x[0] for x in lens):.1f} -> {statistics.fmean(x[1] for x in lens):.1f} | "
            f"{statistics.fmean(secs):.2f} |"
        )
    table = "\n".join(lines)
    (a.out / "table.md").write_text(table + "\n")
    print(table)
    print(f"trajectories: {plot_trajectories(a.out, dirs)}")


if __name__ == "__main__":
    main()
