"""`rlvr demo` (what `make demo` runs): the whole loop on the embedded default, on a laptop CPU.

SFT base (`rlvr sft --preset arith-base`), GRPO from it (`rlvr train --preset demo`), and GRPO's two
baselines from the same base: rejection-sampling fine-tuning on as many samples (`--preset demo-rft`, the
information-matched baseline: one verdict per sample, as GRPO) and SFT on the gold worked chains for
GRPO's training time (an oracle: it sees whole solutions). Then evaluations on test and the private
holdout, paired comparisons of every pair on test, and the audit. Each stage is an ordinary run folder
under `runs/demo/` (docs/outputs.md); the world and its budget are docs/embedded.md. On a terminal the
stages draw live bars; when stdout is a file or a pipe (CI, nohup, `make demo > demo.log`) each stage
prints lines instead.
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
from rlvr.evaluate.compare import Pairs, compare_runs
from rlvr.evaluate.evaluation import EvalConfig, run_eval
from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.runs import RunFolderError, check_out, make_folder, read_eval, read_manifest, write_json
from rlvr.runs.eval import Metric
from rlvr.runs.records import Record
from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

__all__ = ["DemoPlan", "DemoSummary", "METHODS", "PLANS", "LineProgress", "headline_rows", "print_summary", "run_demo"]


@dataclass(frozen=True)
class DemoPlan:
    sft_steps: int
    grpo_steps: int  # also RFT's steps: the same prompts and samples drawn
    eval_problems: int  # test split
    eval_samples: int
    eval_every: int  # in-training dev evaluations (the audit's drift check reads two or more)
    holdout_problems: int
    holdout_samples: int
    baselines: bool = True  # stages 3-4: RFT on as many samples, SFT on gold chains for GRPO's time
    boundary_problems: int = 0  # a large-k evaluation of base and GRPO on test for the audit's
    boundary_samples: int = 0  # reasoning-boundary check (0: none)


PLANS = {
    # Chosen on the dev split to fit 6 minutes with the install on a 2-core host (docs/embedded.md,
    # "How the demo's budget was chosen").
    "full": DemoPlan(sft_steps=600, grpo_steps=50, eval_problems=500, eval_samples=4, eval_every=25,
                     holdout_problems=300, holdout_samples=4, boundary_problems=200, boundary_samples=64),
    "quick": DemoPlan(sft_steps=150, grpo_steps=8, eval_problems=100, eval_samples=4, eval_every=0,
                      holdout_problems=100, holdout_samples=4, boundary_problems=20, boundary_samples=16),
}  # fmt: skip
# The methods the demo trains, in the order its tables show them, and what each is.
METHODS = {
    "base": "the SFT base every method starts from",
    "rft": "rejection-sampling fine-tuning: GRPO's prompts and samples, SFT on the accepted ones",
    "sft-oracle": "SFT on the gold worked chains for GRPO's training time (sees whole solutions)",
    "grpo": "GRPO, the demo's recipe",
}
_HEADLINE = {
    "sft/loss": "loss",
    "train/accuracy": "acc",
    "train/completion_len/mean": "len",
    "train/entropy": "ent",
    "eval/dev/pass@1": "dev_pass@1",
}


# --- summary.json (read back by tests and tools through `rlvr.runs.read_record`) -------------------


class DemoTest(Record):
    """One paired test of run `b` against run `a` (`evaluate.compare.PairedTest`)."""

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
    metrics: dict[str, dict[str, Metric]]  # method (base, rft, sft-oracle, grpo) -> metric name -> metric


class DemoAudit(Record):
    status: str
    checks: dict[str, str]  # check -> pass / warn / fail


class DemoCost(Record):
    """What a trained method spent: samples drawn from the model (0 for SFT) and seconds of training."""

    samples_drawn: int = 0
    train_s: float = 0.0
    steps: int = 0


class DemoSummary(Record):
    """`summary.json` of `rlvr demo`: the plan; per split GRPO against its base (`splits`, Holm over that
    split's tests); on test every pair of base, RFT, oracle SFT and GRPO (`baselines`, Holm over all of
    them; None when the plan has no baselines); each method's cost; the audit's verdicts; where each run
    and the report are. Schema 2 (schema 1 had `sft_matched`: SFT continued on the base's own data mix)."""

    schema_version: int = 2
    plan: dict[str, int | bool]
    splits: dict[str, DemoSplit]
    baselines: DemoSplit | None = None
    costs: dict[str, DemoCost] = {}
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


def _eval(out: Path, model: Path, split: str, plan: DemoPlan, progress, large_k: bool = False) -> Path:
    n, samples = (
        (plan.holdout_problems, plan.holdout_samples) if split == "holdout" else (plan.eval_problems, plan.eval_samples)
    )
    if large_k:  # the reasoning boundary: pass@k up to k = samples, for the audit
        n, samples = plan.boundary_problems, plan.boundary_samples
    cfg = load_config(
        EvalConfig,
        None,
        {
            "model": str(model),
            "split": split,
            "preset": TRAIN_PRESETS["demo"]["preset"],
            "n_problems": n,
            "n_samples": samples,
            "ks": [k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= samples],
            "out": str(out),
        },
    )
    task = progress.add_task(f"5/7 eval {out.name}", total=2)
    path = run_eval(cfg, progress=lambda msg: progress.advance(task))
    progress.update(task, completed=2)
    return path


def _paired(evals: dict[str, Path], names: list[str], split: str, seed: int, out: Path, pairs: Pairs) -> DemoSplit:
    """Paired tests over the same problems of `split` between the methods `names` (the first is the
    baseline of `pairs="baseline"`; `"all"`: every pair), Holm over the tests of this call."""
    paths = [evals[f"{name}-{split}"] for name in names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_runs(paths, seed=seed, out=out, pairs=pairs)
    folder = {f"{name}-{split}": name for name in names}
    tests = []
    for t in cmp.tests:
        row = dataclasses.asdict(t)
        row["a"], row["b"] = folder.get(t.a, t.a), folder.get(t.b, t.b)
        tests.append(DemoTest.model_validate(row))
    metrics = {name: read_eval(p).metrics for name, p in zip(names, paths, strict=True)}
    return DemoSplit(tests=tests, metrics=metrics)


def _compare(evals: dict[str, Path], seed: int, out: Path, progress) -> tuple[dict[str, DemoSplit], DemoSplit | None]:
    """Stage 6: GRPO against its base on each split; on test, every pair of the methods trained."""
    task = progress.add_task("6/7 compare", total=3)
    splits: dict[str, DemoSplit] = {}
    for split in ("test", "holdout"):
        splits[split] = _paired(evals, ["base", "grpo"], split, seed, out / "evals" / f"compare-{split}", "baseline")
        progress.advance(task)
    baselines = None
    names = [m for m in METHODS if f"{m}-test" in evals]
    if len(names) > 2:
        baselines = _paired(evals, names, "test", seed, out / "evals" / "compare-baselines", "all")
    progress.update(task, completed=3)
    return splits, baselines


def _seconds_bar(progress, label: str, seconds: float):
    """A bar that counts seconds: the stage ends on time, not on a step count."""
    total = max(1, round(seconds))
    task = progress.add_task(label, total=total)
    t0 = time.time()

    def tick(_step: int, _total: int, _row: dict) -> None:
        progress.update(task, completed=min(round(time.time() - t0), total))

    return task, total, tick


def _sft_oracle(out: Path, base: Path, seconds: float, seed: int, progress) -> Path:
    """Stage 4: SFT continued from the base on the task's gold worked chains (every target a whole
    solution: more information than a verdict, hence an oracle) for `seconds`, GRPO's training time, at
    the learning rate where the base's schedule ended (3e-3 x 0.1); `rlvr study`'s sft-oracle arm."""
    recipe = {k: v for k, v in SFT_PRESETS["arith-base"].items() if not k.startswith("answer_only")}
    cfg = load_config(
        SFTConfig,
        None,
        {
            "model": str(base / "model"),
            "steps": 1_000_000,
            "max_seconds": seconds,
            "lr": 3e-4,
            "warmup_steps": 0,
            "seed": seed,
            "out": str(out),
        },
        base=recipe,
    )
    task, total, tick = _seconds_bar(progress, "4/7 SFT oracle", seconds)
    path = run_sft(cfg, progress=tick)
    progress.update(task, completed=total)
    return path


def _train(out: Path, base: Path, preset: str, plan: DemoPlan, seed: int, label: str, progress, **extra) -> Path:
    cfg = load_config(
        TrainConfig,
        None,
        {"model": str(base), "steps": plan.grpo_steps, "seed": seed, "out": str(out), "save_every": 0, **extra},
        base=dict(TRAIN_PRESETS[preset]),
    )
    return GRPOTrainer(cfg, progress=_bar(progress, label, plan.grpo_steps)).train()


def _cost(run: Path) -> DemoCost:
    """Samples drawn and training seconds (train: time in steps; SFT on a time budget: that budget, which
    its steps stop at; its wall time adds loading and saving)."""
    m = read_manifest(run)
    config = m.config or {}
    steps = m.steps_done if m.steps_done is not None else config.get("steps", 0)
    seconds = m.train_s or config.get("max_seconds") or m.wall_s or 0.0
    return DemoCost(samples_drawn=m.samples_drawn or 0, train_s=float(seconds), steps=int(steps))


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
    folders = ("summary.json", "base", "grpo", "rft", "sft-oracle", "sft-matched", "evals")
    earlier = [p for p in folders if (out / p).exists()]
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
        base = run_sft(sft_cfg, progress=_bar(progress, "1/7 SFT base", plan.sft_steps))
        grpo = _train(out / "grpo", base, "demo", plan, seed, "2/7 GRPO", progress, eval_every=plan.eval_every)
        models = {"base": base, "grpo": grpo}
        if plan.baselines:
            models["rft"] = _train(out / "rft", base, "demo-rft", plan, seed, "3/7 RFT", progress, eval_every=0)
            seconds = _cost(grpo).train_s or 1.0
            models["sft-oracle"] = _sft_oracle(out / "sft-oracle", base, seconds, seed, progress)
        evals = {}
        for name, model in models.items():
            for split in ("test", "holdout") if name in ("base", "grpo") else ("test",):
                evals[f"{name}-{split}"] = _eval(out / "evals" / f"{name}-{split}", model, split, plan, progress)
        if plan.boundary_samples:
            for name in ("base", "grpo"):
                where = out / "evals" / f"{name}-test-k{plan.boundary_samples}"
                evals[where.name] = _eval(where, models[name], "test", plan, progress, large_k=True)
        splits, baselines = _compare(evals, seed, out, progress)
        task = progress.add_task("7/7 audit", total=1)
        audited = [p for k, p in evals.items() if k.startswith(("base-", "grpo-"))]
        result = run_audit(grpo, audited, out_dir=out)
        progress.advance(task)
    summary = DemoSummary(
        plan=dataclasses.asdict(plan),
        splits=splits,
        baselines=baselines,
        costs={name: _cost(run) for name, run in models.items() if name != "base"},
        audit=DemoAudit(status=result.status, checks={c.name: c.status for c in result.checks}),
        report=str(out / "report.html"),
        runs={**{k: str(v) for k, v in models.items()}, **{k: str(v) for k, v in evals.items()}},
    )
    write_json(out / "summary.json", summary.model_dump(mode="json"))
    return summary


def _find(split: DemoSplit, a: str, b: str, metric: str) -> DemoTest | None:
    return next((t for t in split.tests if t.a == a and t.b == b and t.metric == metric), None)


def _diff(t: DemoTest | None, sign: float = 1.0) -> str:
    """`+0.546 (+0.516, +0.575)`: b - a (or a - b with sign -1) and its 95% CI, in points of pass@1."""
    if t is None:
        return ""
    lo, hi = sorted((sign * t.ci[0], sign * t.ci[1]))
    return f"{sign * t.diff:+.3f} ({lo:+.3f}, {hi:+.3f})"


def headline_rows(summary: DemoSummary) -> list[tuple[str, ...]]:
    """The demo's headline table on test: per method its cost, sampled pass@1, greedy accuracy, the
    change from the base and GRPO's lead over it (each with a paired 95% CI), as printed and in the README."""
    split = summary.baselines or summary.splits["test"]
    rows: list[tuple[str, ...]] = []
    for name in (m for m in METHODS if m in split.metrics):
        m = split.metrics[name]
        cost = summary.costs.get(name)
        spent = f"{cost.samples_drawn:,} / {cost.train_s:.0f} s" if cost else ""
        pass1, greedy = m["pass@1"].value or 0.0, (m["greedy"].value if "greedy" in m else None)
        vs_base = _diff(_find(split, "base", name, "pass@1")) if name != "base" else ""
        lead = ""
        if name not in ("grpo",):
            t = _find(split, name, "grpo", "pass@1") or _find(split, "grpo", name, "pass@1")
            lead = _diff(t, 1.0 if t is not None and t.b == "grpo" else -1.0)
        g = f"{greedy:.3f}" if greedy is not None else ""
        rows.append((name, spent, f"{pass1:.3f}", g, vs_base, lead))
    return rows


def print_summary(summary: DemoSummary) -> None:
    """The headline comparisons, GRPO against its base per split, and the audit's verdicts."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # a log: rich would wrap the tables at 80 columns
        console = Console(width=max(console.width, 120))
    n = summary.plan.get("eval_problems")
    table = Table(title=f"test, {n} problems: each method from the same base (paired 95% CIs, points of pass@1)")
    for col in ("method", "samples / train s", "sampled pass@1", "greedy", "change from base", "GRPO minus it"):
        table.add_column(col)
    for row in headline_rows(summary):
        table.add_row(*row)
    console.print(table)
    for name, what in METHODS.items():
        console.print(f"  {name}: {what}", highlight=False)
    table = Table(title="GRPO vs its SFT base, paired over the same problems")
    for col in ("split", "metric", "base", "GRPO", "change", "95% CI", "p (Holm)"):
        table.add_column(col)
    for split, s in summary.splits.items():
        for t in s.tests:
            ci = f"{t.ci[0]:+.3f} to {t.ci[1]:+.3f}"
            name = "sampled pass@1" if t.metric == "pass@1" else t.metric
            p = f"{t.pvalue_adj:.2g}" if t.pvalue_adj is not None else ""
            table.add_row(split, name, f"{t.value_a:.3f}", f"{t.value_b:.3f}", f"{t.diff:+.3f}", ci, p)
        before, grpo = s.metrics["base"], s.metrics["grpo"]
        for name in sorted(k for k in before if k.startswith(("pass@", "maj@")) and k != "pass@1"):
            a, b = before[name].value or 0.0, grpo[name].value or 0.0
            table.add_row(split, name, f"{a:.3f}", f"{b:.3f}", f"{b - a:+.3f}", "", "")
    console.print(table)
    checks = ", ".join(f"{k}: {v}" for k, v in summary.audit.checks.items())
    console.print(f"audit: {summary.audit.status} ({checks})", highlight=False)
    console.print(f"report: {summary.report}")
