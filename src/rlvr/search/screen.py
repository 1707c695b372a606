"""Screening (`run_screen`): one short GRPO run with the protected base rewards plus the candidate
reward(s), scored on the dev split (accuracy, precision and F1 with bootstrap CIs: docs/search.md).
Its input and output are plain data, so it pickles to a worker (local pool or Ray) and its result
goes straight into the store as JSON."""

from __future__ import annotations

import functools
import os
import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlvr.config import SamplingConfig
from rlvr.grpo.config import TrainConfig, TrainOverrides
from rlvr.rewards.combine import weighted_sum
from rlvr.runs.lock import TREE_ENV
from rlvr.runs.metrics import MetricsLog
from rlvr.search.records import DevScores, PerProblem, ScreenResult, TrainSummary

__all__ = ["ScreenJob", "EnsembleReward", "run_screen", "dev_scores", "f1_score", "MAX_NONE_FRAC"]

MAX_NONE_FRAC = 0.5  # a screen whose candidate reward was None for more of its items counts as failed


@dataclass(frozen=True)
class ScreenJob:
    """One screening run. `members` are (name, source) of the sandboxed candidate rewards, averaged
    into one reward `candidate` of weight `candidate_weight` (none: the base-rewards-only control)."""

    key: str
    kind: str
    members: tuple[tuple[str, str], ...]
    model: str
    steps: int
    seed: int
    out: str
    train: TrainOverrides = field(default_factory=TrainOverrides)  # TrainConfig fields (base rewards included)
    candidate_weight: float = 1.0
    candidate_timeout_s: float = 10.0
    unsafe_no_sandbox: bool = False
    eval_split: Literal["dev", "test"] = "dev"
    eval_n: int = 200
    eval_samples: int = 4

    @property
    def names(self) -> list[str]:
        return [m[0] for m in self.members]


class EnsembleReward:
    """`weight * mean` of member rewards per item: their `weighted_sum` with equal weights, times
    weight / k for k members; None where any member gave None (or a non-finite value)."""

    def __init__(self, members: list[Any], weight: float = 1.0, name: str = "candidate") -> None:
        self.members, self.weight, self.__name__ = members, weight, name

    def __call__(self, completions: list[Any], **kwargs: Any) -> list[float | None]:
        k = len(self.members)
        summed = weighted_sum([m(completions, **kwargs) for m in self.members], [1.0] * k)
        return [None if v is None else self.weight * v / k for v in summed]

    def close(self) -> None:
        for m in self.members:
            m.close()


def f1_score(correct: float, answered: float, total: float) -> float:
    """F1 of precision = correct/answered and recall = correct/total (0 when nothing is correct).

    >>> round(f1_score(6, 8, 10), 4)  # precision 0.75, recall 0.6
    0.6667
    """
    if correct <= 0 or answered <= 0 or total <= 0:
        return 0.0
    p, r = correct / answered, correct / total
    return 2 * p * r / (p + r)


def dev_scores(correct: np.ndarray, answered: np.ndarray, seed: int = 0) -> DevScores:
    """Accuracy and F1 with 95% percentile bootstrap CIs (1000 resamples of the P problems) from
    (P, n) boolean arrays."""
    from rlvr.evaluate.stats import bootstrap_ci  # scipy: only when scoring

    c, a = correct.sum(1).astype(float), answered.sum(1).astype(float)  # (P,)
    n = correct.shape[1]
    # statistics of problem indices (P,), so that bootstrap_ci resamples problems with replacement
    acc = lambda idx: float(c[idx.astype(np.intp)].sum() / (len(idx) * n))  # noqa: E731
    f1 = lambda idx: f1_score(c[idx.astype(np.intp)].sum(), a[idx.astype(np.intp)].sum(), len(idx) * n)  # noqa: E731
    idx = np.arange(len(c))
    return DevScores(
        accuracy=acc(idx),
        accuracy_ci=list(bootstrap_ci(idx, acc, n_resamples=1000, seed=seed)),
        f1=f1(idx),
        f1_ci=list(bootstrap_ci(idx, f1, n_resamples=1000, seed=seed + 1)),
        answered=float(a.sum() / (len(c) * n)),
        n_problems=len(c),
        n_samples=n,
    )


def evaluate_model(
    model_dir: str | Path,
    split: Literal["dev", "test"],
    n_problems: int,
    n_samples: int,
    *,
    task: str,
    preset: str,
    seed: int,
    sampling: SamplingConfig | None = None,
    threads: int | None = 2,
) -> DevScores:
    """Sampled scores and greedy per-problem correctness of a saved model on a split, sampled and
    prompted as the screening run was trained (`sampling`)."""
    import torch

    from rlvr.evaluate.runner import sample_and_score
    from rlvr.models.load import load_model, load_tokenizer
    from rlvr.tasks import PromptFormatter, get_task

    if threads:
        torch.set_num_threads(threads)
    problems = get_task(task).load(split, n=n_problems, seed=0, preset=preset)
    model, tok = load_model(model_dir), load_tokenizer(model_dir)
    s = sampling or SamplingConfig()
    fmt = PromptFormatter.create(tok, s.prompt_format, s.system_prompt)
    score = functools.partial(
        sample_and_score, model, tok, problems, sampling=s, formatter=fmt, seed=seed, verify=get_task(task).verify
    )
    sampled = score(n=n_samples)  # at the run's own temperature
    greedy = score(n=1, greedy=True)
    answered = np.array([[p is not None for p in row] for row in sampled.parsed], dtype=bool)
    out = dev_scores(sampled.correct, answered, seed)
    out.split, out.greedy = split, float(greedy.correct.mean())
    out.per_problem = PerProblem(
        ids=[p.id for p in problems],
        correct=sampled.correct.sum(1).tolist(),
        answered=answered.sum(1).tolist(),
        greedy=greedy.correct[:, 0].astype(int).tolist(),
    )
    return out


def _train_config(job: ScreenJob):
    from rlvr.config import load_config

    values = {
        **job.train.values(),
        "model": job.model,
        "steps": job.steps,
        "seed": job.seed,
        "out": job.out,
        "eval_every": 0,
        "save_every": 0,
    }
    # the runner's per-reward timeout must outlast one sandboxed call per member
    floor = (len(job.members) + 1) * job.candidate_timeout_s
    values["reward_timeout_s"] = max(float(values.get("reward_timeout_s", 30.0)), floor)
    return load_config(TrainConfig, None, values)


def _load_members(job: ScreenJob) -> EnsembleReward | None:
    """The members in their jails, as one ensemble reward; None for the base-rewards-only control."""
    from rlvr.sandbox import load

    if not job.members:
        return None
    members: list[Any] = []
    try:
        for name, src in job.members:
            members.append(
                load(src, timeout_s=job.candidate_timeout_s, name=name, unsafe_no_sandbox=job.unsafe_no_sandbox)
            )
    except BaseException:
        for m in members:
            m.close()
        raise
    return EnsembleReward(members, job.candidate_weight)


def _train_summary(log: MetricsLog, reward: EnsembleReward | None) -> TrainSummary:
    return TrainSummary(
        accuracy_last10=log.tail_mean("train/accuracy", last=10),
        reward_last10=log.tail_mean("reward/total/mean", last=10),
        candidate_errors=sum(m.errors for m in reward.members) if reward is not None else 0,
        candidate_none_frac=log.tail_mean("reward/candidate/none_frac") if reward else 0.0,
        candidate_last_errors=sorted({m.last_error for m in reward.members if m.last_error})[:3] if reward else [],
        steps_run=len(log),
    )


def run_screen(job: ScreenJob) -> ScreenResult:
    """Train, evaluate on `job.eval_split`, and return the result; never raises."""
    from rlvr.audit.drift import reward_flags
    from rlvr.grpo.trainer import GRPOTrainer
    from rlvr.runs import read_samples
    from rlvr.runs.metrics import read_metrics

    t0 = time.time()
    result = ScreenResult(
        key=job.key, kind=job.kind, members=job.names, steps=job.steps, seed=job.seed, run_dir=job.out
    )
    reward = None
    # The search that made this job holds its tree's lock; a worker on another host (Ray) does not
    # inherit the search's environment, so it names the tree it writes into itself.
    os.environ.setdefault(TREE_ENV, str(Path(job.out).resolve().parent.parent))
    try:
        shutil.rmtree(job.out, ignore_errors=True)  # a rerun after a kill starts clean
        cfg = _train_config(job)
        reward = _load_members(job)
        run_dir = GRPOTrainer(cfg, extra_rewards={"candidate": reward} if reward else None).train()
        train = _train_summary(read_metrics(run_dir), reward)
        scores = evaluate_model(
            run_dir / "model",
            job.eval_split,
            job.eval_n,
            job.eval_samples,
            task=cfg.task,
            preset=cfg.preset,
            seed=job.seed,
            sampling=cfg.sampling,
            threads=cfg.threads,
        )
        flags = [f for f in reward_flags(read_samples(run_dir / "samples" / "train.jsonl")) if f.reward == "candidate"]
        result.status, result.scores, result.train = "done", scores, train
        result.reward_audit = flags[0] if flags else None
        none_frac = train.candidate_none_frac
        if none_frac is not None and none_frac > MAX_NONE_FRAC:
            # an unscorable item has no total reward, so it trains on nothing (the base rewards included)
            errs = "; ".join(train.candidate_last_errors[:2]) or "none recorded"
            result.status = "failed"
            result.error = (
                f"the candidate reward was unscorable (None) for {none_frac:.0%} of completions; last errors: {errs}"
            )
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    except Exception as e:  # a failed screen is a result (the search goes on), not a crash
        result.status, result.error = "failed", f"{type(e).__name__}: {e}"
        result.traceback = traceback.format_exc()[-4000:]
    finally:
        if reward is not None:
            reward.close()
    result.seconds = time.time() - t0
    return result
