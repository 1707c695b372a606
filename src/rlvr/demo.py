"""`rlvr demo` (what `make demo` runs): the whole loop on the embedded default, on a laptop CPU.

SFT base (`rlvr sft --preset arith-base`), GRPO from it (`rlvr train --preset demo`), SFT continued for
GRPO's wall time (the compute-matched baseline), evaluations on test and the private holdout, paired
comparisons and the audit; each stage is an ordinary run folder under `runs/demo/` (docs/outputs.md),
and the world and its budget are docs/embedded.md. On a terminal the stages draw live bars; when stdout
is a file or a pipe (CI, nohup, `make demo > demo.log`) each stage prints lines instead.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from rlvr.audit import run_audit
from rlvr.config import load_config
from rlvr.evaluate.compare import compare_runs
from rlvr.evaluate.evaluation import EvalConfig, run_eval
from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.runs import RunFolderError, check_out, make_folder, read_eval, read_manifest, write_json
from rlvr.runs.eval import Metric
from rlvr.runs.records import Record
from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

__all__ = ["DemoPlan", "DemoSummary", "PLANS", "LineProgress", "print_summary", "run_demo"]


@dataclass(frozen=True)
class DemoPlan:
    sft_steps: int
    grpo_steps: int
    eval_problems: int  # test split
    eval_samples: int
    eval_every: int  # in-training dev evaluations (the audit's drift check reads two or more)
    holdout_problems: int
    holdout_samples: int
    sft_matched: bool = True  # stage 3, the compute-matched SFT baseline


PLANS = {
    # Chosen on the dev split to fit 6 minutes with the install on a 2-core host (docs/embedded.md,
    # "How the demo's budget was chosen").
    "full": DemoPlan(sft_steps=600, grpo_steps=50, eval_problems=500, eval_samples=4, eval_every=25,
                     holdout_problems=300, holdout_samples=4),
    "quick": DemoPlan(sft_steps=150, grpo_steps=8, eval_problems=100, eval_samples=4, eval_every=0,
                      holdout_problems=100, holdout_samples=4, sft_matched=False),
}  # fmt: skip
_HEADLINE = {
    "sft/loss": "loss",
    "train/accuracy": "acc",
    "train/completion_len/mean": "len",
    "train/entropy": "ent",
    "eval/dev/pass@1": "dev_pass@1",
}


# --- summary.json (read back by tests and tools through `rlvr.runs.read_record`) -------------------


class DemoTest(Record):
    """One paired test of the demo's GRPO model against its SFT base (`evaluate.compare.PairedTest`)."""

    a: str
    b: str
    metric: str
    n_problems: int
    value_a: float
    value_b: float
    diff: float
    ci: list[float]
    test: str
    pvalue: float
    pvalue_adj: float | None = None
    tokens_a: float | None = None  # tokens per problem of each side, and their ratio (larger / smaller)
    tokens_b: float | None = None
    budget_ratio: float | None = None
    budget_matched: bool = False
    detail: dict[str, int] = {}  # a greedy test's discordant problems: b01 (right only in b), b10


class DemoSplit(Record):
    tests: list[DemoTest]
    metrics: dict[str, dict[str, Metric]]  # base (or sft-matched) / grpo -> metric name -> metric


class DemoAudit(Record):
    status: str
    checks: dict[str, str]  # check -> pass / warn / fail


class DemoSummary(Record):
    """`summary.json` of `rlvr demo`: the plan, per split the paired tests and both models' metrics
    (GRPO against its base), GRPO against the compute-matched SFT baseline on test (`sft_matched`,
    None when the plan skips it), the audit's verdicts, and where each run and the report are."""

    schema_version: int = 1
    plan: dict[str, int | bool]
    splits: dict[str, DemoSplit]
    sft_matched: DemoSplit | None = None
    audit: DemoAudit
    report: str
    runs: dict[str, str]


@dataclass
class _Stage:
    label: str
    total: int
    started: float
    completed: int = 0
    next_mark: float = 0.0


class LineProgress:
    """rich's `Progress` calls the demo makes, as plain lines for a log: one when a stage starts, one
    every `every` of its total (and at its end) with the elapsed time and the headline numbers."""

    def __init__(self, every: float = 0.2, out=None) -> None:
        self.every, self.out, self.t0 = every, out or sys.stdout, time.time()
        self.stages: list[_Stage] = []

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def _say(self, text: str) -> None:
        print(f"[{time.time() - self.t0:6.0f} s] {text}", file=self.out, flush=True)

    def add_task(self, label: str, total: int) -> int:
        self.stages.append(_Stage(label, total, time.time(), next_mark=self.every * total))
        self._say(f"{label}: started")
        return len(self.stages) - 1

    def update(self, task: int, completed: int, info: str = "") -> None:
        st = self.stages[task]
        finished_before, st.completed = st.completed >= st.total, completed
        if finished_before or (completed < st.next_mark and completed < st.total):
            return
        while st.next_mark <= completed:
            st.next_mark += self.every * st.total
        done = " done" if completed >= st.total else ""
        tail = f" {info}" if info else ""
        self._say(f"{st.label}: {completed}/{st.total}{done} ({time.time() - st.started:.0f} s){tail}")

    def advance(self, task: int) -> None:
        self.update(task, self.stages[task].completed + 1)


def _bar(progress, label: str, total: int):
    task = progress.add_task(label, total=total)

    def update(step: int, _total: int, row: dict) -> None:
        if isinstance(progress, LineProgress):
            shown = [(short, row[k]) for k, short in _HEADLINE.items() if isinstance(row.get(k), int | float)]
            info = " ".join(f"{short}={v:.3g}" for short, v in shown)
            progress.update(task, completed=step, info=info)
        else:
            progress.update(task, completed=step)

    return update


def _eval(out: Path, model: Path, split: str, plan: DemoPlan, progress) -> Path:
    n, samples = (
        (plan.holdout_problems, plan.holdout_samples) if split == "holdout" else (plan.eval_problems, plan.eval_samples)
    )
    cfg = load_config(
        EvalConfig,
        None,
        {
            "model": str(model),
            "split": split,
            "preset": TRAIN_PRESETS["demo"]["preset"],
            "n_problems": n,
            "n_samples": samples,
            "ks": [k for k in (1, 2, 4, 8) if k <= samples],
            "out": str(out),
        },
    )
    task = progress.add_task(f"4/6 eval {out.name}", total=2)
    path = run_eval(cfg, progress=lambda msg: progress.advance(task))
    progress.update(task, completed=2)
    return path


def _paired(a: Path, b: Path, names: tuple[str, str], seed: int, out: Path) -> DemoSplit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_runs([a, b], seed=seed, out=out)
    metrics = {name: read_eval(p).metrics for name, p in zip(names, (a, b), strict=True)}
    return DemoSplit(tests=[DemoTest.model_validate(dataclasses.asdict(t)) for t in cmp.tests], metrics=metrics)


def _compare(evals: dict[str, Path], seed: int, out: Path, progress) -> tuple[dict[str, DemoSplit], DemoSplit | None]:
    """Stage 5: GRPO against its base on each split, and against the compute-matched SFT baseline on
    test, paired over the same problems."""
    task = progress.add_task("5/6 compare", total=3)
    splits: dict[str, DemoSplit] = {}
    for split in ("test", "holdout"):
        a, b = evals[f"base-{split}"], evals[f"grpo-{split}"]
        splits[split] = _paired(a, b, ("base", "grpo"), seed, out / "evals" / f"compare-{split}")
        progress.advance(task)
    matched = None
    if "sft-matched-test" in evals:
        a, b = evals["sft-matched-test"], evals["grpo-test"]
        matched = _paired(a, b, ("sft-matched", "grpo"), seed, out / "evals" / "compare-sft-matched")
    progress.update(task, completed=3)
    return splits, matched


def _sft_matched(out: Path, base: Path, seconds: float, seed: int, progress) -> Path:
    """Stage 3: the base's own SFT recipe, continued from it for `seconds` (GRPO's wall time) on the
    data of its last stage (the mixed targets from the first step) at the learning rate where the
    base's schedule ended (3e-3 x 0.1)."""
    recipe = dict(SFT_PRESETS["arith-base"])
    cfg = load_config(
        SFTConfig,
        None,
        {
            "model": str(base / "model"),
            "steps": 1_000_000,
            "max_seconds": seconds,
            "lr": 3e-4,
            "warmup_steps": 0,
            "answer_only_from": 0.0,
            "seed": seed,
            "out": str(out),
        },
        base=recipe,
    )
    total = max(1, round(seconds))  # the bar counts seconds: the stage ends on time, not on a step count
    task = progress.add_task("3/6 SFT matched", total=total)
    t0 = time.time()

    def tick(_step: int, _total: int, _row: dict) -> None:
        progress.update(task, completed=min(round(time.time() - t0), total))

    path = run_sft(cfg, progress=tick)
    progress.update(task, completed=total)
    return path


def _progress():
    """Live bars on a terminal, lines otherwise (rich draws a non-terminal's bars only at the end)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if not Console().is_terminal:
        return LineProgress()
    cols = (
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    return Progress(*cols)


def run_demo(out: Path, *, quick: bool = False, seed: int = 0, overwrite: bool = False) -> DemoSummary:
    """Run every stage into `out`; returns the summary (also written to `out/summary.json`). A folder
    that holds an earlier demo is refused unless `overwrite`, which replaces it."""
    plan = PLANS["quick" if quick else "full"]
    check_out(out, overwrite=True)  # a writable folder (or one that can be made), before anything is looked at
    earlier = [p for p in ("summary.json", "base", "grpo", "sft-matched", "evals") if (out / p).exists()]
    if earlier and not overwrite:
        raise RunFolderError(
            f"{out}: holds an earlier demo ({', '.join(earlier)}); `rlvr demo --overwrite` "
            "replaces it, `--out DIR` writes elsewhere"
        )
    for p in earlier:
        if (out / p).is_dir():
            shutil.rmtree(out / p)
        else:
            (out / p).unlink()
    make_folder(out)  # a place only the kernel refuses: one line, nothing created
    with _progress() as progress:
        sft_cfg = load_config(
            SFTConfig,
            None,
            {"steps": plan.sft_steps, "seed": seed, "out": str(out / "base")},
            base=dict(SFT_PRESETS["arith-base"]),
        )
        base = run_sft(sft_cfg, progress=_bar(progress, "1/6 SFT base", plan.sft_steps))
        train_cfg = load_config(
            TrainConfig,
            None,
            {
                "model": str(base),
                "steps": plan.grpo_steps,
                "seed": seed,
                "out": str(out / "grpo"),
                "eval_every": plan.eval_every,
                "save_every": 0,
            },
            base=dict(TRAIN_PRESETS["demo"]),
        )
        grpo = GRPOTrainer(train_cfg, progress=_bar(progress, "2/6 GRPO", plan.grpo_steps)).train()
        models = {"base": base, "grpo": grpo}
        if plan.sft_matched:
            seconds = read_manifest(grpo).wall_s or 1.0
            models["sft-matched"] = _sft_matched(out / "sft-matched", base, seconds, seed, progress)
        evals = {}
        for name, model in models.items():
            for split in ("test", "holdout") if name != "sft-matched" else ("test",):
                evals[f"{name}-{split}"] = _eval(out / "evals" / f"{name}-{split}", model, split, plan, progress)
        splits, matched = _compare(evals, seed, out, progress)
        task = progress.add_task("6/6 audit", total=1)
        result = run_audit(grpo, [p for k, p in evals.items() if not k.startswith("sft-matched")], out_dir=out)
        progress.advance(task)
    summary = DemoSummary(
        plan=dataclasses.asdict(plan),
        splits=splits,
        sft_matched=matched,
        audit=DemoAudit(status=result.status, checks={c.name: c.status for c in result.checks}),
        report=str(out / "report.html"),
        runs={**{k: str(v) for k, v in models.items()}, **{k: str(v) for k, v in evals.items()}},
    )
    write_json(out / "summary.json", summary.model_dump(mode="json"))
    return summary


def print_summary(summary: DemoSummary) -> None:
    """The paired tests and the audit's verdicts, as `rlvr demo` prints them."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    rows = [(split, s, "base") for split, s in summary.splits.items()]
    if summary.sft_matched is not None:
        rows.append(("test", summary.sft_matched, "sft-matched"))
    table = Table(title="GRPO vs its SFT base (and vs SFT continued for GRPO's time), paired over the same problems")
    for col in ("split", "against", "metric", "before", "GRPO", "change", "95% CI", "p (Holm)"):
        table.add_column(col)
    for split, s, against in rows:
        for t in s.tests:
            ci = f"{t.ci[0]:+.3f} to {t.ci[1]:+.3f}"
            name = "sampled pass@1" if t.metric == "pass@1" else t.metric
            row = (f"{t.value_a:.3f}", f"{t.value_b:.3f}", f"{t.diff:+.3f}", ci, f"{t.pvalue_adj:.2g}")
            table.add_row(split, against, name, *row)
        before, grpo = s.metrics[against], s.metrics["grpo"]
        for name in sorted(k for k in before if k.startswith(("pass@", "maj@")) and k != "pass@1"):
            a, b = before[name].value or 0.0, grpo[name].value or 0.0
            table.add_row(split, against, name, f"{a:.3f}", f"{b:.3f}", f"{b - a:+.3f}", "", "")
    console.print(table)
    checks = ", ".join(f"{k}: {v}" for k, v in summary.audit.checks.items())
    console.print(f"audit: {summary.audit.status} ({checks})", highlight=False)
    console.print(f"report: {summary.report}")
