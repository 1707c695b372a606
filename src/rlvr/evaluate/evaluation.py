"""`rlvr eval`: sample n completions per problem, verify them, and report pass@1, unbiased pass@k,
maj@k and greedy accuracy, each with its token budget and a bootstrap CI over problems. The run
folder's files (`eval.json`, `samples.jsonl`, plots) and their schema: docs/evaluation.md.
"""

from __future__ import annotations

import functools
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field, ValidationInfo, field_validator, model_validator

from rlvr.config import (
    Device,
    RolloutConfig,
    SamplingConfig,
    Seed,
    StrictModel,
    Threads,
    check_device,
    moved_to_sampling,
)
from rlvr.envs import EnvRunner, EnvSpec
from rlvr.evaluate.fidelity import fidelity_metrics
from rlvr.evaluate.metrics import maj_at_ks, pass_at_k_array
from rlvr.evaluate.plots import write_eval_plots
from rlvr.evaluate.runner import Scored, sample_and_score, score_conversations
from rlvr.evaluate.stats import bootstrap_ci
from rlvr.interrupt import Interrupted, StopRequest
from rlvr.models.engines import make_sampler
from rlvr.models.load import load_model, load_tokenizer, resolve_model_path
from rlvr.models.sampling import over_long, prompt_token_limit
from rlvr.runs import EvalResult, Interruption, Metric, ProblemResult, RunDir, check_out
from rlvr.runs.eval import DifficultyResult, EvalSample
from rlvr.tasks import (
    DataError,
    Problem,
    PromptFormatter,
    get_task,
    problems_hash,
    refuse_unused_system_prompt,
    replay,
)

__all__ = ["EvalConfig", "run_eval"]


class EvalConfig(StrictModel):
    """`rlvr eval` settings. `model` is a local HF model folder or a run folder holding `model/`."""

    model: str
    task: str = "arith"
    preset: str = "easy"  # the arith rung (a task setting, kept at the top for the embedded default)
    task_settings: dict[str, str | int | float | bool] = {}  # the task's own load settings (docs/tasks.md)
    split: Literal["test", "dev", "holdout"] = "test"
    seed: Seed = 0
    n_problems: int = Field(500, ge=1)
    n_samples: int = Field(8, ge=1)
    ks: list[int] = [1, 2, 4, 8]
    sampling: SamplingConfig = SamplingConfig()
    rollout: RolloutConfig = RolloutConfig()  # the sampling engine: auto, hf, fast or vllm
    env: EnvSpec | None = None  # conversations with an environment's tools (docs/environments.md)
    greedy: bool = True
    plots: bool = True
    ci_resamples: int = Field(2000, ge=100)
    threads: Threads = 2
    device: Device = "cpu"
    dtype: Literal["float32", "bfloat16"] = "float32"
    bf16: bool = False  # bfloat16 autocast for sampling
    out: str = "runs/eval"

    _moved = model_validator(mode="before")(moved_to_sampling)

    @field_validator("ks")
    @classmethod
    def _ks_positive(cls, v: list[int], info: ValidationInfo) -> list[int]:
        if not v or any(k < 1 for k in v):
            raise ValueError("ks must be a non-empty list of positive integers")
        # a k above n_samples is left out of the metrics; with none left there is nothing to report,
        # so that is refused before the run folder is touched
        n = info.data.get("n_samples")
        if isinstance(n, int) and min(v) > n:
            raise ValueError(f"every k in {sorted(set(v))} is above n_samples={n}; give a k <= n_samples")
        return sorted(set(v))


def _metric(values: np.ndarray, k: int, n: int, tokens: float, cfg: EvalConfig) -> Metric:
    low, high = bootstrap_ci(values, seed=cfg.seed, n_resamples=cfg.ci_resamples)
    return Metric(value=float(values.mean()), ci=[low, high], k=k, n=n, tokens_per_problem=tokens)


_RIGHT = "\x00right"  # the vote of every sample the verifier accepted


def _votes(sampled: Scored, i: int) -> list[str | None]:
    """Problem i's samples as majority-vote ballots: every accepted answer is one vote for the gold (the
    verifier judged them equivalent to it, so to each other: `\\frac12` and `0.5` vote together, and a
    code solution is never compared as text with the gold's); a rejected answer votes for its own parsed
    text; an unparsed one abstains."""
    return [_RIGHT if ok else parsed for parsed, ok in zip(sampled.parsed[i], sampled.correct[i], strict=True)]


def summarize_scores(
    problems: list[Problem], sampled: Scored, greedy: Scored | None, cfg: EvalConfig
) -> dict[str, Any]:
    """eval.json's `metrics` (each with CI and budget), `by_difficulty` and `per_problem`."""
    n = sampled.correct.shape[1]
    c = sampled.correct.sum(1)
    tok_per_sample = float(sampled.tokens.mean())
    metrics: dict[str, Metric] = {}
    ks = [k for k in cfg.ks if k <= n]
    majs = np.array([maj_at_ks(_votes(sampled, i), _RIGHT, ks, seed=cfg.seed) for i in range(len(problems))])
    for j, k in enumerate(ks):
        metrics[f"pass@{k}"] = _metric(pass_at_k_array(n, c, k), k, n, k * tok_per_sample, cfg)
        if k > 1:
            metrics[f"maj@{k}"] = _metric(majs[:, j], k, n, k * tok_per_sample, cfg)
    if greedy is not None:
        metrics["greedy"] = _metric(greedy.correct[:, 0].astype(float), 1, 1, float(greedy.tokens.mean()), cfg)
    if sampled.tool_calls is not None:  # the share of conversations that called a tool at all
        metrics["tool_use"] = _metric((sampled.tool_calls > 0).mean(1), 1, n, tok_per_sample, cfg)
    per_problem = [
        ProblemResult(
            id=p.id,
            n_steps=p.n_steps,
            correct=int(c[i]),
            n=n,
            tokens=float(sampled.tokens[i].mean()),
            **({"greedy": bool(greedy.correct[i, 0])} if greedy is not None else {}),
        )
        for i, p in enumerate(problems)
    ]
    by_diff: dict[str, DifficultyResult] = {}
    steps = np.array([p.n_steps for p in problems])
    for s in sorted(set(steps.tolist())):
        m = steps == s
        by_diff[str(s)] = DifficultyResult(
            n_problems=int(m.sum()),
            pass_at_1=float(sampled.correct[m].mean()),
            **({"greedy": float(greedy.correct[m, 0].mean())} if greedy is not None else {}),
        )
    return {"metrics": metrics, "by_difficulty": by_diff, "per_problem": per_problem}


def _sample_rows(problems: list[Problem], scored: Scored, temperature: float, prompts: list[str]) -> list[EvalSample]:
    rows = []
    for i, p in enumerate(problems):
        for j, text in enumerate(scored.texts[i]):
            rows.append(
                EvalSample(
                    problem_id=p.id,
                    question=p.question,
                    prompt=scored.prompts[i] if scored.prompts is not None else prompts[i],
                    gold=p.answer,
                    gold_solution=p.solution,
                    gold_steps=[(s.expr, s.result) for s in p.steps],
                    n_steps=p.n_steps,
                    sample=j,
                    temperature=temperature,
                    completion=text,
                    parsed=scored.parsed[i][j],
                    correct=bool(scored.correct[i, j]),
                    reason=scored.reasons[i][j],
                    status=scored.statuses[i][j] if scored.statuses is not None else None,
                    tokens=int(scored.tokens[i, j]),
                    truncated=bool(scored.truncated[i, j]),
                    **_conversation(scored, i, j),
                )
            )
    return rows


def _conversation(scored: Scored, i: int, j: int) -> dict[str, Any]:
    """An environment's sample: its conversation and its environment tokens (nothing otherwise)."""
    if scored.messages is None or scored.env_tokens is None:
        return {}
    return {"messages": scored.messages[i][j], "env_tokens": int(scored.env_tokens[i, j])}


def _refuse_long_prompts(problems: list[Problem], prompts: list[str], tok, limit: int | None, task: str) -> None:
    """An evaluation on a silently smaller set would not be the benchmark it names: refuse, with ids."""
    long = over_long(tok, prompts, limit)
    if long:
        ids = ", ".join(problems[i].id for i in long[:5]) + (", ..." if len(long) > 5 else "")
        raise DataError(
            f"{task}: {len(long)} prompts are longer than {limit} tokens ({ids}); "
            "raise sampling.max_prompt_tokens or remove them"
        )


def _result(
    cfg: EvalConfig,
    model: str,
    problems: list[Problem],
    data_hash: str,
    prompt_format: str,
    engine: str,
    sampled: Scored,
    greedy: Scored | None,
    seconds: float,
) -> EvalResult:
    """The `eval.json` record (schema in docs/evaluation.md); fields a run lacks (no greedy) are unset."""
    s = cfg.sampling
    return EvalResult(
        model=model,
        task=cfg.task,
        preset=cfg.preset,
        split=cfg.split,
        data_hash=data_hash,
        n_problems=len(problems),
        n_samples=cfg.n_samples,
        **s.model_dump(include={"temperature", "top_p", "top_k", "max_new_tokens"}),
        prompt_format=prompt_format,
        sampling={**s.model_dump(mode="json"), "prompt_format": prompt_format},
        engine=engine,
        truncated_frac=float(sampled.truncated.mean()),
        **({"greedy_truncated_frac": float(greedy.truncated.mean())} if greedy is not None else {}),
        tokens_per_sample=float(sampled.tokens.mean()),
        statuses=dict(Counter(s for row in sampled.statuses or [] for s in row)),
        **({"env_tokens_per_sample": float(sampled.env_tokens.mean())} if sampled.env_tokens is not None else {}),
        **summarize_scores(problems, sampled, greedy, cfg),
        fidelity=fidelity_metrics(problems, sampled),
        seconds=seconds,
    )


def run_eval(cfg: EvalConfig, *, model=None, tok=None, progress=None, overwrite: bool = False) -> Path:
    """Evaluate and write the run folder; returns its path. Pass `model`/`tok` to skip loading.
    Inputs are checked before the folder is touched; a folder holding a run is refused unless
    `overwrite`."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    path = resolve_model_path(cfg.model)
    check_device(cfg.device)
    check_out(cfg.out, overwrite=overwrite, reads=[cfg.model, path])
    if model is None:
        tok, model = load_tokenizer(path), load_model(path, dtype=cfg.dtype, device=cfg.device)
    # evaluation may read the private holdout; training and selection never can (HoldoutError)
    task = get_task(cfg.task)
    load = task.load_args(cfg.split, n=cfg.n_problems, seed=cfg.seed, **{"preset": cfg.preset, **cfg.task_settings})
    problems = replay(load, allow_holdout=True)
    if not problems:
        raise DataError(f"{cfg.task}: no problems in split {cfg.split!r}")
    data_hash = problems_hash(problems)
    s = cfg.sampling
    fmt = PromptFormatter.create(tok, s.prompt_format, s.system_prompt)
    if cfg.env is None:
        refuse_unused_system_prompt(fmt.fmt, s.prompt_format, s.system_prompt)
    prompts = [fmt.prompt(p) for p in problems]
    _refuse_long_prompts(problems, prompts, tok, prompt_token_limit(model, s), cfg.task)
    env = EnvRunner.build(cfg.env, tok, fmt, s.system_prompt) if cfg.env is not None else None
    sampler = make_sampler(cfg.rollout, model, path, device=cfg.device, dtype=cfg.dtype, seed=cfg.seed)
    run = RunDir(cfg.out, cfg, command="eval", overwrite=overwrite)
    ref = {"task": cfg.task, "n": len(problems), "hash": data_hash, "load": load}
    run.write_manifest(seeds={"sampling": cfg.seed}, data={cfg.split: ref}, prompt_format=fmt.fmt)
    t0 = time.perf_counter()
    common: dict[str, Any] = {
        "sampling": s,
        "seed": cfg.seed,
        "bf16": cfg.bf16,
        "sampler": sampler,
        "verify": task.verify,
    }
    if env is not None:
        sample_kw = functools.partial(score_conversations, model, tok, problems, env, **common)
    else:
        sample_kw = functools.partial(sample_and_score, model, tok, problems, formatter=fmt, **common)
    rerun = " ".join(["rlvr", "eval", "--config", str(run.path / "config.yaml"), "--overwrite"])
    try:
        with StopRequest(
            where="sampling (the evaluation was abandoned; nothing partial is kept)", resume=rerun, how="rerun"
        ):
            greedy = sample_kw(n=1, greedy=True) if cfg.greedy else None
            if progress is not None:
                progress("greedy done")
            sampled = sample_kw(n=cfg.n_samples)
    except Interrupted as e:
        run.write_manifest(interrupted=Interruption(signal=signal.Signals(e.signum).name))
        run.close()
        raise
    finally:
        sampler.close()
    gen_s = time.perf_counter() - t0
    result = _result(cfg, str(path), problems, data_hash, fmt.fmt, sampler.engine, sampled, greedy, gen_s)
    run.write_json("eval.json", result.model_dump(mode="json", by_alias=True, exclude_unset=True))
    run.write_jsonl("samples.jsonl", _sample_rows(problems, sampled, s.temperature, prompts))
    if greedy is not None:
        run.write_jsonl("samples_greedy.jsonl", _sample_rows(problems, greedy, 0.0, prompts))
    if cfg.plots:
        write_eval_plots(run.path)
    run.write_manifest(finished=True, wall_s=time.time() - run.started)
    run.close()
    return run.path
