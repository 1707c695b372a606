"""A study's numbers (`analyse`, study.json's contents): each condition's metrics pooled over seeds
on the problems every evaluation shares, and paired comparisons by `evaluate.compare.paired_tests`,
Holm-adjusted over the study; which pairs and which tests: docs/study.md, "Statistics"."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from rlvr.evaluate.compare import paired_tests
from rlvr.evaluate.stats import adjust_pvalues, bootstrap_ci, mcnemar
from rlvr.runs import EvalResult, RunFileError, read_eval, read_judge
from rlvr.runs.metrics import read_metrics
from rlvr.study.config import StudyConfig, trains_rft
from rlvr.study.records import (
    PooledPass,
    Spread,
    StudyComparison,
    StudyCondition,
    StudyJobResult,
    StudyPooled,
    StudyResult,
    StudyRun,
)

__all__ = ["analyse", "FIDELITY_KEYS"]

FIDELITY_KEYS = ("trace_validity", "chain_length_deviation", "process_step_ratio", "cot_pass@1")


def _spread(xs: list[float]) -> Spread:
    return Spread(
        mean=statistics.fmean(xs) if xs else None,
        sd=statistics.stdev(xs) if len(xs) > 1 else None,
        min=min(xs) if xs else None,
        max=max(xs) if xs else None,
    )


class _Arm:
    """One condition's finished evaluations, by seed, aligned on the study's shared problem ids."""

    def __init__(self, name: str, kind: str, evals: dict[int, EvalResult]) -> None:
        self.name, self.kind, self.evals = name, kind, evals

    def rates(self, ids: list[str], seed: int) -> np.ndarray:
        rows = {r.id: r for r in self.evals[seed].per_problem}
        return np.array([rows[i].correct / rows[i].n for i in ids], dtype=float)  # (P,)

    def greedy(self, ids: list[str], seed: int) -> np.ndarray | None:
        rows = {r.id: r for r in self.evals[seed].per_problem}
        if any(rows[i].greedy is None for i in ids):
            return None
        return np.array([bool(rows[i].greedy) for i in ids])  # (P,)

    def pooled(self, ids: list[str]) -> np.ndarray:
        return np.mean([self.rates(ids, s) for s in self.evals], axis=0)  # (P,)

    def ref_seed(self, seed: int) -> int:
        """The reference's run to pair with a run of `seed`: the same seed, else its first."""
        return seed if seed in self.evals else next(iter(self.evals))


def _fidelity(e: EvalResult) -> dict[str, float | None]:
    """The evaluation's overall fidelity metrics, by their eval.json keys (None when it has none)."""
    overall = e.fidelity.overall.model_dump(by_alias=True) if e.fidelity.overall is not None else {}
    return {k: overall.get(k) for k in FIDELITY_KEYS}


def _curves(results: list[StudyJobResult]) -> dict[str, list[float | None]]:
    """`train/accuracy` per step of each run (seed), for the report's learning curves."""
    out = {}
    for r in results:
        if r.run_dir and r.kind == "grpo":
            try:
                log = read_metrics(Path(r.run_dir), missing_ok=True)
            except RunFileError:
                continue
            out[f"s{r.seed}"] = [
                v if math.isfinite(v := row.get("train/accuracy")) else None for row in log if "train/accuracy" in row
            ]
    return out


def _condition(name: str, kind: str, arm: _Arm | None, ids: list[str], results: list[StudyJobResult]) -> StudyCondition:
    runs = []
    for r in sorted(results, key=lambda r: r.seed):
        run = StudyRun(**r.model_dump(include=set(StudyRun.model_fields)))  # its seed, status, folders, time
        if arm is not None and r.seed in arm.evals and r.status == "done":
            g = arm.greedy(ids, r.seed)
            judged = read_judge(r.eval_dir)
            run = run.model_copy(
                update={
                    "pass_at_1": float(arm.rates(ids, r.seed).mean()),
                    "greedy": None if g is None else float(g.mean()),
                    "fidelity": _fidelity(arm.evals[r.seed]),
                    "judge": judged.categories if judged else None,
                }
            )
        runs.append(run)
    done = [run for run in runs if run.pass_at_1 is not None]
    pooled = None
    if arm is not None and done:
        rates = arm.pooled(ids)
        low, high = bootstrap_ci(rates, seed=0)
        judge: Counter[str] = Counter()
        for run in done:
            judge.update(run.judge or {})
        pooled = StudyPooled(
            pass_at_1=PooledPass(
                value=float(rates.mean()),
                ci=[low, high],
                seeds=_spread([d.pass_at_1 for d in done if d.pass_at_1 is not None]),
            ),
            greedy=_spread([d.greedy for d in done if d.greedy is not None]),
            fidelity={k: _spread([v for d in done if (v := d.fidelity.get(k)) is not None]) for k in FIDELITY_KEYS},
            judge=dict(judge) or None,
            n_seeds=len(done),
        )
    return StudyCondition(name=name, kind=kind, runs=runs, pooled=pooled)


def _compare(arm: _Arm, ref: _Arm, ids: list[str]) -> list[StudyComparison]:
    seeds = list(arm.evals)
    pass1 = (ref.pooled(ids), arm.pooled(ids))
    ga = [g for s in seeds if (g := ref.greedy(ids, ref.ref_seed(s))) is not None]
    gb = [g for s in seeds if (g := arm.greedy(ids, s)) is not None]
    greedy: tuple[np.ndarray, np.ndarray] | None = None
    if len(ga) == len(gb) == len(seeds):
        greedy = (np.concatenate(ga), np.concatenate(gb))  # (S * P,)
    tests = paired_tests(pass1, greedy, names=(ref.name, arm.name), seed=0)
    out = []
    for t in tests:
        pvalue_per_seed: list[float] | None = None  # McNemar's p of each seed's pair (greedy)
        if t.metric == "pass@1":
            diff_per_seed = [float((arm.rates(ids, s) - ref.rates(ids, ref.ref_seed(s))).mean()) for s in seeds]
        else:
            diff_per_seed = [float(b.mean() - a.mean()) for a, b in zip(ga, gb, strict=True)]
            pvalue_per_seed = [mcnemar(a.tolist(), b.tolist()).pvalue for a, b in zip(ga, gb, strict=True)]
        out.append(
            StudyComparison(
                condition=arm.name,
                reference=ref.name,
                metric=t.metric,
                n_problems=t.n_problems,
                reference_value=t.value_a,
                value=t.value_b,
                diff=t.diff,
                ci=list(t.ci),
                test=t.test,
                pvalue=t.pvalue,
                seeds=seeds,
                diff_per_seed=diff_per_seed,
                pvalue_per_seed=pvalue_per_seed,
            )
        )
    return out


def analyse(cfg: StudyConfig, out: Path, base: str, results: dict[str, StudyJobResult]) -> StudyResult:
    """study.json's contents from the jobs' results."""
    arms: dict[str, _Arm] = {}
    by_cond: dict[str, list[StudyJobResult]] = {c.name: [] for c in cfg.conditions}
    for r in results.values():
        by_cond[r.condition].append(r)
        if r.status == "done":
            arm = arms.setdefault(r.condition, _Arm(r.condition, r.kind, {}))
            arm.evals[r.seed] = read_eval(r.eval_dir)
    id_sets = [{p.id for p in e.per_problem} for a in arms.values() for e in a.evals.values()]
    ids = sorted(set.intersection(*id_sets)) if id_sets else []
    notes = []
    if id_sets and len(ids) < max(len(s) for s in id_sets):
        notes.append(f"conditions are compared on the {len(ids)} problems every evaluation shares")
    conditions = [
        _condition(c.name, c.kind, arms.get(c.name) if ids else None, ids, by_cond[c.name]) for c in cfg.conditions
    ]
    base_arm = next((arms[c.name] for c in cfg.conditions if c.kind == "base" and c.name in arms), None)
    first = next((arms[c.name] for c in cfg.conditions if c.kind != "base" and c.name in arms), None)
    sft_arm = next((arms[c.name] for c in cfg.conditions if c.kind == "sft-oracle" and c.name in arms), None)
    comparisons: list[StudyComparison] = []
    for ref in (base_arm, first, sft_arm if sft_arm is not first else None):
        if ref is None or not ids:
            continue
        for cond in cfg.conditions:
            other = arms.get(cond.name)
            if other is None or other is ref or other.kind == "base":
                continue
            # the compute-matched SFT baseline: every GRPO arm against it, the first one included (not
            # the first against it: the same pair twice)
            if (ref is sft_arm and other.kind != "grpo") or (ref is first and other is sft_arm):
                continue
            comparisons += _compare(other, ref, ids)
    for row, p in zip(comparisons, adjust_pvalues([row.pvalue for row in comparisons], "holm"), strict=True):
        row.pvalue_adj = p
    matched = [r.train_seconds for r in results.values() if r.kind == "sft-oracle" and r.train_seconds]
    if matched:
        rft = {c.name for c in cfg.conditions if trains_rft(c)}
        grpo = [r for r in results.values() if r.kind == "grpo" and r.condition not in rft]
        grpo_s = [r.train_seconds for r in grpo if r.train_seconds]  # as run_study matched them
        spent = statistics.median(matched)
        notes.append(
            f"sft-oracle: SFT on the task's gold solutions, continued from the base for the GRPO runs' median "
            f"wall-clock time ({statistics.median(grpo_s or [0.0]):.0f} s; {spent:.0f} s spent): an oracle, it "
            "sees whole solutions where GRPO sees one verdict a sample"
        )
    return StudyResult(
        config=cfg.model_dump(mode="json"),
        base=base,
        split=cfg.eval_split,
        n_problems=len(ids),
        n_samples=cfg.eval_samples,
        seeds=cfg.seeds,
        conditions=conditions,
        comparisons=comparisons,
        correction="holm",
        curves={c.name: _curves(by_cond[c.name]) for c in cfg.conditions if c.kind == "grpo"},
        notes=notes,
        failed=sorted(k for k, r in results.items() if r.status != "done"),
        errors={k: r.error for k, r in results.items() if r.status != "done"},
    )


def fmt(x: Any, spec: str = ".3f") -> str:
    """A number for a table, or "-" (None, NaN)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)
