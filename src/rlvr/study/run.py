"""Run a study (`run_study`): build or find the base, run every condition x seed through the search's
executor (`run_study_job`, which never raises: a failed job is a result), evaluate each on the same
problems, then analyse and report. Folders, `--resume` and the statistics: docs/study.md."""

from __future__ import annotations

import os
import shutil
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlvr.runs import RunDir, RunFileError, RunFolderError, check_out, read_manifest, write_json
from rlvr.study.config import Condition, StudyConfig, trains_rft
from rlvr.study.records import StudyJobResult, StudyResult

if TYPE_CHECKING:
    from rlvr.evaluate.evaluation import EvalConfig
    from rlvr.grpo.config import TrainConfig
    from rlvr.sft import SFTConfig

__all__ = ["StudyError", "StudyJob", "run_study", "run_study_job"]

Log = Callable[[str], None]


class StudyError(ValueError):
    """A study that cannot start: bad config, unknown preset, an occupied output folder."""


@dataclass(frozen=True)
class StudyJob:
    """One arm x seed: train (grpo: `train` is a TrainConfig), continue SFT (sft-oracle: an SFTConfig) or
    nothing (base: None), then evaluate (`evaluation`, whose model is the trained one or the base)."""

    key: str
    kind: str
    condition: str
    seed: int
    run_dir: str  # "" for the base condition
    eval_dir: str
    evaluation: EvalConfig
    train: TrainConfig | SFTConfig | None = None

    def result(self, **values: Any) -> StudyJobResult:
        """A result of this job: its key and folders, plus `values`."""
        ids = {"key": self.key, "kind": self.kind, "condition": self.condition, "seed": self.seed}
        return StudyJobResult(**ids, run_dir=self.run_dir or None, eval_dir=self.eval_dir, **values)


def finished(folder: str | Path) -> bool:
    """A run or evaluation folder whose manifest says it finished."""
    try:
        return (Path(folder) / "manifest.json").is_file() and read_manifest(folder).finished
    except RunFileError:
        return False


def run_study_job(job: StudyJob) -> StudyJobResult:
    """Train or fine-tune as the job says, evaluate, and return the result; never raises.
    Finished folders are reused, unfinished ones (a killed run) are replaced."""
    from rlvr.evaluate.evaluation import run_eval
    from rlvr.grpo.config import TrainConfig

    t0 = time.time()
    result = job.result()
    try:
        if job.train is not None:
            if not finished(job.run_dir):
                shutil.rmtree(job.run_dir, ignore_errors=True)
                if isinstance(job.train, TrainConfig):
                    from rlvr.grpo.trainer import GRPOTrainer

                    GRPOTrainer(job.train).train()
                else:
                    from rlvr.sft import run_sft

                    run_sft(job.train)
            manifest = read_manifest(job.run_dir)
            result.train_seconds = manifest.wall_s
            result.steps_done = manifest.steps_done
            shutil.rmtree(Path(job.run_dir) / "checkpoints", ignore_errors=True)
        if not finished(job.eval_dir):
            shutil.rmtree(job.eval_dir, ignore_errors=True)
            run_eval(job.evaluation)
        result.status = "done"
    except Exception as e:  # a failed arm is a result (the study goes on), not a crash
        result.status, result.error = "failed", f"{type(e).__name__}: {e}"
        result.traceback = traceback.format_exc()[-4000:]
    result.seconds = time.time() - t0
    return result


def _threads(cfg: StudyConfig) -> int:
    return max(1, (os.cpu_count() or 2) // max(1, cfg.workers)) if not cfg.ray else 2


def _eval_config(cfg: StudyConfig, threads: int, model: str, out: Path) -> EvalConfig:
    """Every evaluation of the study alike: the same problems and sampling seed (the task's seed picks
    the problems), so that runs differ only by what training did."""
    from rlvr.config import load_config
    from rlvr.evaluate.evaluation import EvalConfig

    sampling = cfg.train.values().get("sampling")  # the study's sampling settings, when given (else None: unset)
    return load_config(
        EvalConfig,
        None,
        {
            "model": model,
            "task": cfg.task,
            "preset": cfg.preset,
            "split": cfg.eval_split,
            "n_problems": cfg.eval_n,
            "n_samples": cfg.eval_samples,
            "seed": 0,
            "ks": [1],
            "plots": False,
            "threads": threads,
            "sampling": sampling,
            "out": str(out),
        },
    )


def _grpo_config(cfg: StudyConfig, cond: Condition, seed: int, base: str, out: Path, threads: int) -> TrainConfig:
    """The condition's TrainConfig; a bad condition is refused here, before any work."""
    from rlvr.config import load_config
    from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig

    if cond.preset is not None and cond.preset not in TRAIN_PRESETS:
        raise StudyError(
            f"condition {cond.name!r}: unknown train preset {cond.preset!r}; known: {', '.join(sorted(TRAIN_PRESETS))}"
        )
    values: dict[str, Any] = {
        **cfg.train.values(),
        **(TRAIN_PRESETS[cond.preset] if cond.preset else {}),
        **cond.train.values(),
    }
    values.update(
        model=base,
        task=cfg.task,
        preset=cfg.preset,
        steps=cfg.steps,
        seed=seed,
        out=str(out),
        save_every=0,
        threads=threads,
    )
    values.setdefault("eval_every", 0)
    return load_config(TrainConfig, None, values)


def _sft_config(cfg: StudyConfig, seed: int, base: str, out: Path, threads: int, seconds: float | None) -> SFTConfig:
    """SFT continued from the base for `seconds` of wall-clock time (the sft-oracle baseline: gold solutions)."""
    from rlvr.config import load_config
    from rlvr.sft import SFTConfig

    return load_config(
        SFTConfig,
        None,
        {
            "model": base,
            "task": cfg.task,
            "preset": cfg.preset,
            "steps": 1_000_000,
            "seed": seed,
            "max_seconds": seconds,
            "lr": 3e-4,
            "warmup_steps": 0,
            "threads": threads,
            "out": str(out),
        },
    )


def plan_jobs(cfg: StudyConfig, base: str, out: Path, sft_seconds: float | None = None) -> list[StudyJob]:
    """Every job of the study, in condition order (the sft-oracle ones only once `sft_seconds` is known)."""
    threads = _threads(cfg)
    jobs = []
    for cond in cfg.conditions:
        if cond.kind == "sft-oracle" and sft_seconds is None:
            continue
        for seed in cfg.seeds[:1] if cond.kind == "base" else cfg.seeds:  # the base is evaluated once
            key = cond.name if cond.kind == "base" else f"{cond.name}-s{seed}"
            run_dir, eval_dir = out / "runs" / key, out / "evals" / key
            train: TrainConfig | SFTConfig | None = None
            if cond.kind == "grpo":
                train = _grpo_config(cfg, cond, seed, base, run_dir, threads)
            elif cond.kind == "sft-oracle":
                train = _sft_config(cfg, seed, base, run_dir, threads, sft_seconds)
            model, run = (base, "") if train is None else (str(run_dir / "model"), str(run_dir))
            evaluation = _eval_config(cfg, threads, model, eval_dir)
            jobs.append(StudyJob(key, cond.kind, cond.name, seed, run, str(eval_dir), evaluation, train))
    return jobs


def _given_base(cfg: StudyConfig) -> str:
    """The given base model folder (a model folder or a run folder holding model/), checked."""
    from rlvr.models.load import resolve_model_path

    path = resolve_model_path(str(cfg.base))
    if not (path / "config.json").is_file():
        raise StudyError(f"{cfg.base}: not a model folder (no config.json) or a run folder holding model/")
    return str(path.resolve())


def _embedded_base(cfg: StudyConfig, out: Path, log: Log) -> str:
    """The embedded base, built once in OUT/base (SFT from scratch)."""
    if finished(out / "base"):
        return str(out / "base" / "model")
    from rlvr.config import load_config
    from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

    log(f"base: SFT from scratch, {cfg.sft_steps} steps -> {out / 'base'}")
    sft = load_config(
        SFTConfig,
        None,
        {"steps": cfg.sft_steps, "out": str(out / "base"), "task": cfg.task, "preset": cfg.preset},
        base=dict(SFT_PRESETS["arith-base"]),
    )
    return str(run_sft(sft, overwrite=True) / "model")


def _run(cfg: StudyConfig, jobs: list[StudyJob], results: dict[str, StudyJobResult], log: Log) -> None:
    from rlvr.search.executor import JobDied, run_jobs

    todo = [j for j in jobs if not (finished(j.eval_dir) and (not j.run_dir or finished(j.run_dir)))]
    for j in jobs:
        if j not in todo:
            m = read_manifest(j.run_dir) if j.run_dir else None
            seconds, steps = (m.wall_s, m.steps_done) if m else (None, None)
            results[j.key] = j.result(status="done", train_seconds=seconds, steps_done=steps)
    if not todo:
        return
    how = f"{cfg.workers or 'in this'} process{'es' if cfg.workers else ''}" + (f", Ray {cfg.ray}" if cfg.ray else "")
    log(f"running {len(todo)} of {len(jobs)} jobs ({how})")
    done = {"n": 0}

    def on_result(job: StudyJob, got: StudyJobResult | JobDied) -> None:
        done["n"] += 1
        if isinstance(got, JobDied):
            got = job.result(status="failed", error=got.error)
        results[job.key] = got
        extra = f": {got.error}" if got.status != "done" else f" in {got.seconds or 0:.0f} s"
        log(f"[{done['n']}/{len(todo)}] {job.key} {got.status}{extra}")

    run_jobs(todo, on_result, workers=cfg.workers, ray=cfg.ray, fn=run_study_job)


def _judge(cfg: StudyConfig, results: dict[str, StudyJobResult], log: Log) -> None:
    from rlvr.evaluate.judge import JudgeConfig, JudgeError, judge_samples

    if cfg.judge is None:
        return
    settings = JudgeConfig.model_validate(cfg.judge.model_dump(exclude={"n"}))
    for r in results.values():
        if r.status != "done" or (Path(r.eval_dir) / "judge.json").is_file():
            continue
        try:
            judge_samples(Path(r.eval_dir), settings, n=cfg.judge.n)
        except JudgeError as e:
            log(f"judge: {r.key}: {e}")


def run_study(cfg: StudyConfig, *, resume: bool = False, overwrite: bool = False, log: Log = print) -> StudyResult:
    """Run (or resume) the study in `cfg.out`; returns what study.json holds."""
    from rlvr.study.analysis import analyse
    from rlvr.study.report import write_report

    out = Path(cfg.out)
    try:
        check_out(out, resume=resume, overwrite=overwrite)
    except RunFolderError as e:
        raise StudyError(str(e).replace("--overwrite to replace it", "--resume to finish it")) from None
    given = _given_base(cfg) if cfg.base else None
    plan_jobs(cfg, given or "base", out)  # every condition's config checks out before any work
    run = RunDir(out, cfg, command="study", resume=resume, overwrite=overwrite)
    t0 = time.time()
    base = given or _embedded_base(cfg, out, log)
    run.write_manifest(paths={"base": base}, seeds={"study": cfg.seeds})
    results: dict[str, StudyJobResult] = {}
    _run(cfg, plan_jobs(cfg, base, out), results, log)
    # the oracle gets the policy-gradient runs' time: an RFT arm is a baseline too, not what it matches
    rft = {c.name for c in cfg.conditions if trains_rft(c)}
    grpo_s = [
        r.train_seconds for r in results.values() if r.kind == "grpo" and r.condition not in rft and r.train_seconds
    ]
    if any(c.kind == "sft-oracle" for c in cfg.conditions):
        if not grpo_s:
            log("sft-oracle: no finished GRPO run to match; skipped")
        else:
            budget = statistics.median(grpo_s)
            log(f"sft-oracle: SFT on the gold solutions from the base for {budget:.0f} s (the GRPO runs' median time)")
            _run(cfg, [j for j in plan_jobs(cfg, base, out, budget) if j.kind == "sft-oracle"], results, log)
    _judge(cfg, results, log)
    study = analyse(cfg, out, base, results)
    write_json(out / "study.json", study.to_json())
    report = write_report(study, out / "study_report.html")
    failed = [k for k, r in results.items() if r.status != "done"]
    run.write_manifest(finished=not failed, wall_s=time.time() - t0, failed=failed)
    run.close()
    rerun = f"; {len(failed)} failed (rerun with --resume)" if failed else ""
    log(f"study: {out / 'study.json'}; report: {report}{rerun}")
    return study
