"""`rlvr demo` (what `make demo` runs): the whole loop on the embedded default, on a laptop CPU.

1. base:  SFT a tiny Llama from scratch on the arith task (`rlvr sft --preset arith-base`)
2. grpo:  GRPO from that base (`rlvr train --preset demo`)
3. eval:  base and GRPO result on the test split and the private holdout, n samples per problem
4. compare: the paired change in sampled pass@1 with its 95% CI, greedy, pass@k and maj@k
5. audit: the readiness report (when the audit is available)

Everything lands in `runs/demo/` (or `--out`); each stage is an ordinary run folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlvr.config import load_config
from rlvr.evaluate.evaluation import EvalConfig, run_eval
from rlvr.evaluate.stats import mcnemar, paired_diff_ci
from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
from rlvr.grpo.sft import SFT_PRESETS, SFTConfig, run_sft
from rlvr.grpo.trainer import GRPOTrainer

__all__ = ["DemoPlan", "PLANS", "run_demo", "compare_evals"]


@dataclass(frozen=True)
class DemoPlan:
    sft_steps: int
    grpo_steps: int
    eval_problems: int
    eval_samples: int
    eval_every: int


PLANS = {
    "full": DemoPlan(sft_steps=600, grpo_steps=300, eval_problems=500, eval_samples=8, eval_every=100),
    "quick": DemoPlan(sft_steps=150, grpo_steps=8, eval_problems=100, eval_samples=4, eval_every=0),
}


def compare_evals(a: Path, b: Path, seed: int = 0) -> dict[str, Any]:
    """Paired change from eval `a` to eval `b` on the same problems: sampled pass@1 (bootstrap CI of
    the per-problem difference) and greedy accuracy (McNemar)."""
    ea, eb = (json.loads((p / "eval.json").read_text()) for p in (a, b))
    pa = {r["id"]: r for r in ea["per_problem"]}
    common = [r for r in eb["per_problem"] if r["id"] in pa]
    if not common:
        raise ValueError(f"{a} and {b} share no problems")
    sa = np.array([pa[r["id"]]["correct"] / pa[r["id"]]["n"] for r in common])
    sb = np.array([r["correct"] / r["n"] for r in common])
    diff, low, high = paired_diff_ci(sa, sb, seed=seed)
    out: dict[str, Any] = {
        "n_problems": len(common),
        "pass@1": {"a": sa.mean(), "b": sb.mean(), "diff": diff, "ci": [low, high]},
    }
    if all("greedy" in r for r in common) and all("greedy" in pa[r["id"]] for r in common):
        ga = [pa[r["id"]]["greedy"] for r in common]
        gb = [r["greedy"] for r in common]
        m = mcnemar(ga, gb)
        out["greedy"] = {
            "a": float(np.mean(ga)),
            "b": float(np.mean(gb)),
            "diff": float(np.mean(gb) - np.mean(ga)),
            "pvalue": m.pvalue,
        }
    return out


def _bar(progress, label: str, total: int):
    task = progress.add_task(label, total=total)

    def update(step: int, _total: int, _row: dict) -> None:
        progress.update(task, completed=step)

    return update


def _eval(out: Path, model: Path, split: str, plan: DemoPlan, progress) -> Path:
    cfg = load_config(
        EvalConfig,
        None,
        {"model": str(model), "split": split, "n_problems": plan.eval_problems, "n_samples": plan.eval_samples,
         "ks": [1, 2, 4, 8], "out": str(out)},
    )  # fmt: skip
    task = progress.add_task(f"eval {out.name}", total=2)
    path = run_eval(cfg, progress=lambda msg: progress.advance(task))
    progress.update(task, completed=2)
    return path


def run_demo(out: Path, *, quick: bool = False, seed: int = 0) -> dict[str, Any]:
    """Run every stage into `out`; returns the summary (also written to `out/summary.json`)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    plan = PLANS["quick" if quick else "full"]
    out.mkdir(parents=True, exist_ok=True)
    cols = (TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*cols) as progress:
        sft_cfg = load_config(
            SFTConfig,
            None,
            {"steps": plan.sft_steps, "seed": seed, "out": str(out / "base")},
            base=dict(SFT_PRESETS["arith-base"]),
        )
        base = run_sft(sft_cfg, progress=_bar(progress, "1/4 SFT base", plan.sft_steps))
        train_cfg = load_config(
            TrainConfig,
            None,
            {"model": str(base), "steps": plan.grpo_steps, "seed": seed, "out": str(out / "grpo"),
             "eval_every": plan.eval_every, "save_every": 0},
            base=dict(TRAIN_PRESETS["demo"]),
        )  # fmt: skip
        grpo = GRPOTrainer(train_cfg, progress=_bar(progress, "2/4 GRPO", plan.grpo_steps)).train()
        evals = {}
        for name, model in (("base", base), ("grpo", grpo)):
            for split in ("test", "holdout"):
                evals[f"{name}-{split}"] = _eval(out / "evals" / f"{name}-{split}", model, split, plan, progress)
    summary = {
        split: compare_evals(evals[f"base-{split}"], evals[f"grpo-{split}"], seed=seed) for split in ("test", "holdout")
    }
    summary["runs"] = {"base": str(base), "grpo": str(grpo), **{k: str(v) for k, v in evals.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary
