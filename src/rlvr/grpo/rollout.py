"""One GRPO rollout: sample G completions per prompt, score them, shape rewards, compute advantages.

DAPO's dynamic sampling is a loop here: groups whose rewards all agree carry no gradient, so they
are dropped and more prompts are sampled, at most `max_refill_rounds` times; whatever is still
missing after that is filled with the dropped groups (advantage 0) so every step has P groups.
Each round samples at least `gen_batch_prompts` prompts (DAPO's generation batch, larger than the
training batch): one bigger batch is cheaper than the refill rounds it saves, and groups with
signal beyond the P needed are left unused.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rlvr.envs import EnvRunner, Trajectory
from rlvr.grpo import objective as obj
from rlvr.grpo.distributed import Dist
from rlvr.grpo.presets import ObjectiveConfig
from rlvr.grpo.rewarding import RewardRunner
from rlvr.models.decoding import fast_decoder_supported
from rlvr.models.engines import Sampler
from rlvr.models.sampling import Completions, encode_prompts
from rlvr.runs.records import TrainSample
from rlvr.tasks import Problem, PromptFormatter, get_task
from rlvr.verify import STATUSES

__all__ = ["Rollout", "collect"]


@dataclass
class Rollout:
    """P groups of G completions, prompt-major. Lists have P*G entries."""

    problems: list[Problem]  # (P,)
    prompt_tokens: list[list[int]]  # (P*G,) prompt ids of each completion's prompt
    tokens: list[list[int]]
    texts: list[str]
    truncated: list[bool]
    correct: list[bool]  # (P*G,) the task's verdict on each completion's final answer
    entropy: list[float]  # (P*G,) mean per-token entropy of the sampling distribution (NaN: not reported)
    rewards: dict[str, list[float | None]]
    total: torch.Tensor  # (P*G,) shaped total reward, NaN where unscorable
    advantages: torch.Tensor  # (P*G,)
    stats: dict[str, float] = field(default_factory=dict)
    rollout_logp: list[list[float]] | None = None  # (P*G,) per token: the rollout engine's log-probs (vLLM)
    loss_mask: list[list[int]] | None = None  # (P*G,) per token: 1 sampled by the model, 0 an environment's (envs)
    messages: list[list[dict[str, Any]]] | None = None  # (P*G,) each conversation's messages after the prompt (envs)
    statuses: list[str] | None = None  # (P*G,) the task verifier's status of each completion
    policy_version: int | None = None  # the policy version (updates applied) whose weights drew every sample


def _columns(problems: list[Problem], g: int, fmt: PromptFormatter, task: str) -> dict[str, list[Any]]:
    """Dataset columns in TRL's convention, repeated for each of the G completions: `prompts` are the
    problem's messages when it came from a conversational dataset, else the prompt text; `task` names
    the task, whose verifier the outcome reward asks."""
    rep = [p for p in problems for _ in range(g)]
    extra = dict.fromkeys(k for p in problems for k in p.columns)  # a task's gold columns (code tests, constraints)
    return {
        **{k: [p.columns.get(k) for p in rep] for k in extra},
        "task": [task] * len(rep),
        "prompts": [list(p.messages) if p.messages else fmt.prompt(p) for p in rep],
        "answer": [p.answer for p in rep],
        "steps": [p.steps for p in rep],
        "question": [p.question for p in rep],
        "problem_id": [p.id for p in rep],
    }


def _group_ok(total: torch.Tensor, g: int) -> torch.Tensor:
    """(P,) True for groups with at least two scorable rewards that differ."""
    r = total.view(-1, g)
    valid = ~torch.isnan(r)
    lo = torch.where(valid, r, math.inf).amin(1)
    hi = torch.where(valid, r, -math.inf).amax(1)
    return (valid.sum(1) >= 2) & (hi > lo)


@dataclass
class _RoundStats:
    seconds: float  # reward scoring
    errors: dict[str, int]  # per reward: completions its call left unscored


def _sample_round(
    model,
    tok,
    fmt: PromptFormatter,
    probs: list[Problem],
    runner: RewardRunner,
    cfg,
    ocfg,
    gen,
    dist: Dist = Dist(),
    sampler: Sampler | None = None,
    env: EnvRunner | None = None,
):
    """One sampling round: G completions per problem, scored and shaped, cut into groups; each rank
    samples and scores its block of the groups and every rank gets them all (`rlvr.grpo.distributed`).
    Returns (groups, ok (n,) bool: the group carries signal, generation seconds, _RoundStats)."""
    g, block = cfg.group_size, dist.block(len(probs))
    mine = probs[block.start : block.stop]
    t0 = time.perf_counter()
    conversations = None
    if env is not None:  # each rank runs its block of conversations (rows), in step with the others
        conversations = env.run(
            model,
            tok,
            mine,
            g,
            cfg.sampling,
            generator=gen,
            sampler=sampler,
            bf16=cfg.bf16,
            row_offset=block.start * g,
            total_rows=len(probs) * g,
            any_live=dist.any if dist.world > 1 else None,
        )
        comp: Completions = _EnvCompletions.of(*conversations)
    else:
        comp = (sampler or Sampler("fast" if fast_decoder_supported(model) else "hf")).sample(
            model,
            tok,
            [fmt.prompt(p) for p in mine],
            g,
            cfg.sampling,
            end_ids=sorted(fmt.end_ids),
            generator=gen,
            bf16=cfg.bf16,
            entropy=True,
            row_offset=block.start * g,
            total_rows=len(probs) * g,
        )  # called on every rank, even with no rows, so the sampling streams stay in step
    t_gen = time.perf_counter() - t0
    scored = _score(comp, mine, fmt, runner, cfg, ocfg, env=conversations) if mine else None
    groups, stats = scored or ([], _RoundStats(0.0, {}))
    if dist.world > 1:
        parts = dist.gather((groups, stats))
        groups = [gr for part, _ in parts for gr in part]
        names = {k for _, st in parts for k in st.errors}
        errors = {k: sum(st.errors.get(k, 0) for _, st in parts) for k in names}
        stats = _RoundStats(max(st.seconds for _, st in parts), errors)
    total = torch.cat([gr.total for gr in groups])
    return groups, _group_ok(total, g), t_gen, stats


@dataclass
class Group:
    """One prompt's G sampled completions, scored: what a sampling round keeps or sets aside."""

    problem: Problem
    tokens: list[list[int]]
    texts: list[str]
    truncated: list[bool]
    correct: list[bool]
    entropy: list[Any]
    rollout_logp: list[Any] | None  # the engine's log-probs of its tokens (vLLM), else None
    rewards: dict[str, list[float | None]]  # each reward's values
    total: torch.Tensor  # (G,) the combined reward
    components: torch.Tensor  # (K, G) each reward's values (and the overlong shaping), for GDPO
    weights: list[float]  # (K,)
    prompt_ids: list[int] | None = None  # an environment's first prompt (with its tools); None: fmt.prompt's
    loss_mask: list[list[int]] | None = None  # (G,) per token: 1 sampled by the model, 0 the environment's
    messages: list[list[dict[str, Any]]] | None = None  # (G,) each conversation after the prompt
    env_stats: list[dict[str, float]] | None = None  # (G,) turns, tool calls, errors, tokens by role
    statuses: list[str] = field(default_factory=list)  # (G,) the task verifier's status of each completion


def _score(comp, probs: list[Problem], fmt: PromptFormatter, runner: RewardRunner, cfg, ocfg, env=None):
    """Score sampled completions and cut them into per-problem groups. `env`: the conversations and
    trajectories of an environment round, whose rewards get the conversation (`messages`), the
    environment objects (`environments`) and their `get_reward()` (`env_reward`) as columns."""
    g, max_new = cfg.group_size, cfg.sampling.max_new_tokens
    assert comp.entropy is not None  # asked for by the caller
    rollout_logp = getattr(comp, "logprobs", None)  # the engine's log-probs of its tokens (vLLM)
    columns = _columns(probs, g, fmt, cfg.task)
    if env is not None:  # TRL's convention: the completion is the conversation after the prompt
        convs, trajs = env
        texts: list[Any] = [c.reply for c in convs]
        columns.update(environments=[c.env for c in convs], messages=[c.messages for c in convs])
        if all(callable(getattr(c.env, "get_reward", None)) for c in convs):
            columns["env_reward"] = [float(c.env.get_reward()) for c in convs]
    else:  # TRL passes completions as messages when the prompt was conversational
        texts = [
            [{"role": "assistant", "content": t}] if probs[i // g].messages else t for i, t in enumerate(comp.texts)
        ]
    scored = runner.score(texts, columns)
    verify = get_task(cfg.task).verify
    verdicts = [verify(t, probs[i // g].answer, **probs[i // g].columns) for i, t in enumerate(comp.texts)]
    correct = [v.correct for v in verdicts]
    total = torch.tensor(scored.total, dtype=torch.float32)  # (n*G,)
    # each reward's own values, for normalisations that treat them apart (GDPO): (K, n*G)
    parts = [[math.nan if v is None else v for v in scored.values[name]] for name in runner.names]
    weights = list(runner.weights)
    if ocfg.overlong_buffer:
        lengths = torch.tensor(comp.lengths, dtype=torch.float32)
        shaping = obj.overlong_penalty(lengths, max_new, ocfg.overlong_buffer, ocfg.overlong_penalty)
        total = total + shaping
        parts.append(shaping.tolist())  # the overlong penalty is one more reward, weight 1
        weights.append(1.0)
    components = torch.tensor(parts, dtype=torch.float32)  # (K, n*G)
    groups = []
    for j, prob in enumerate(probs):
        rows = range(j * g, (j + 1) * g)
        groups.append(
            Group(
                problem=prob,
                tokens=[comp.tokens[i] for i in rows],
                texts=[comp.texts[i] for i in rows],
                truncated=[comp.truncated[i] for i in rows],
                correct=[correct[i] for i in rows],
                statuses=[verdicts[i].status for i in rows],
                entropy=[comp.entropy[i] for i in rows],
                rollout_logp=[rollout_logp[i] for i in rows] if rollout_logp is not None else None,
                rewards={k: [v[i] for i in rows] for k, v in scored.values.items()},
                total=total[j * g : (j + 1) * g],
                components=components[:, j * g : (j + 1) * g],
                weights=weights,
                **(_env_fields(env[0], env[1], rows) if env is not None else {}),
            )
        )
    return groups, _RoundStats(scored.seconds, dict(scored.errors))


@dataclass
class _EnvCompletions(Completions):
    logprobs: list[list[float]] | None = None  # the engine's, over every token (0 on the environment's)

    @classmethod
    def of(cls, convs, trajs: list[Trajectory]) -> _EnvCompletions:
        out = cls(
            list(range(len(trajs))),
            [t.ids for t in trajs],
            [c.answer for c in convs],
            [t.truncated for t in trajs],
            [t.entropy for t in trajs],
        )
        if trajs and all(t.logprobs is not None for t in trajs):
            out.logprobs = [list(t.logprobs or []) for t in trajs]
        return out


def _env_fields(convs, trajs: list[Trajectory], rows) -> dict[str, Any]:
    rows = list(rows)
    return {
        "prompt_ids": trajs[rows[0]].prompt_ids,
        "loss_mask": [trajs[i].mask for i in rows],
        "messages": [convs[i].reply for i in rows],
        "env_stats": [_conv_stats(convs[i], trajs[i]) for i in rows],
    }


def _conv_stats(c, t: Trajectory) -> dict[str, float]:
    return {
        "turns": float(c.turns),
        "tool_calls": float(c.tool_calls),
        "tool_errors": float(sum(c.errors.values())),
        "valid_calls": float(c.valid_calls),
        "model_tokens": float(t.model_tokens),
        "env_tokens": float(t.env_tokens),
    }


def _env_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    """`env/` metrics of a step: means per conversation, and the share of calls that ran."""
    out = {f"env/{k}": float(np.mean([r[k] for r in rows])) for k in rows[0]} if rows else {}
    calls = sum(r["tool_calls"] for r in rows)
    out["env/valid_call_frac"] = sum(r["valid_calls"] for r in rows) / calls if calls else math.nan
    out["env/tool_use_frac"] = float(np.mean([r["tool_calls"] > 0 for r in rows])) if rows else math.nan
    return out


def collect(
    model,
    tok,
    fmt: PromptFormatter,
    next_problems: Callable[[int], list[Problem]],
    runner: RewardRunner,
    cfg,
    ocfg: ObjectiveConfig,
    advantage_fn,
    gen: torch.Generator,
    dist: Dist = Dist(),
    sampler: Sampler | None = None,
    env: EnvRunner | None = None,
) -> Rollout:
    """Sample, score and keep P groups (see module docstring); `cfg` is a TrainConfig. With several
    ranks every rank returns the same, whole rollout. `advantage_fn(total, G, components=, weights=)`
    turns the rewards into advantages (a resolved `objective.REWARD_NORMALIZATIONS` entry, as the
    trainer builds it), given each reward's values and weights too (GDPO normalises them apart)."""
    p_need, g = cfg.prompts_per_step, cfg.group_size
    kept: list[Group] = []
    spare: list[Group] = []
    t_gen = t_rew = 0.0
    sampled_groups = zero_groups = rounds = 0
    errors = dict.fromkeys(runner.names, 0)
    while len(kept) < p_need:
        n_req = p_need - len(kept)
        if ocfg.dynamic_sampling and cfg.gen_batch_prompts:
            n_req = max(n_req, cfg.gen_batch_prompts)
        groups, ok, seconds, scored = _sample_round(
            model, tok, fmt, next_problems(n_req), runner, cfg, ocfg, gen, dist, sampler, env
        )
        t_gen, t_rew = t_gen + seconds, t_rew + scored.seconds
        for name, count in scored.errors.items():
            errors[name] += count
        sampled_groups, zero_groups, rounds = sampled_groups + len(groups), zero_groups + int((~ok).sum()), rounds + 1
        for group, has_signal in zip(groups, ok.tolist(), strict=True):
            (kept if (has_signal or not ocfg.dynamic_sampling) else spare).append(group)
        if not ocfg.dynamic_sampling or rounds > cfg.max_refill_rounds:
            kept += spare[: max(0, p_need - len(kept))]
            break
    stats = {
        "time/generate_s": t_gen,
        "time/reward_s": t_rew,
        "train/zero_std_frac": zero_groups / max(1, sampled_groups),
        "train/sampling_rounds": float(rounds),
        "train/samples_drawn": float(sampled_groups * g),  # every round's, dropped groups too
        **{f"reward/{name}/errors": float(count) for name, count in errors.items()},
    }
    return _assemble(kept[:p_need], tok, fmt, runner.names, advantage_fn, g, stats)


def _assemble(kept: list[Group], tok, fmt: PromptFormatter, names: list[str], advantage_fn, g: int, stats):
    """Flatten the kept groups into a Rollout and compute their advantages."""
    total = torch.cat([k.total for k in kept])
    # each reward's values: the normalisation may use them (GDPO)
    comps = torch.cat([k.components for k in kept], dim=1)  # (K, P*G)
    adv = advantage_fn(total, g, components=comps, weights=torch.tensor(kept[0].weights))
    problems = [k.problem for k in kept]
    firsts: list[Any] = [k.prompt_ids if k.prompt_ids is not None else fmt.prompt(k.problem) for k in kept]
    encoded = encode_prompts(tok, firsts)
    envs = kept[0].loss_mask is not None
    if envs:
        stats = {**stats, **_env_metrics([e for k in kept for e in k.env_stats or []])}
    return Rollout(
        problems=problems,
        prompt_tokens=[encoded[j] for j in range(len(kept)) for _ in range(g)],
        loss_mask=[m for k in kept for m in k.loss_mask or []] if envs else None,
        messages=[m for k in kept for m in k.messages or []] if envs else None,
        tokens=[t for k in kept for t in k.tokens],
        texts=[t for k in kept for t in k.texts],
        truncated=[t for k in kept for t in k.truncated],
        correct=[c for k in kept for c in k.correct],
        statuses=[s for k in kept for s in k.statuses],
        entropy=[e for k in kept for e in k.entropy],
        rollout_logp=[x for k in kept for x in k.rollout_logp or []] if kept[0].rollout_logp is not None else None,
        rewards={name: [v for k in kept for v in k.rewards[name]] for name in names},
        total=total,
        advantages=adv.values,
        stats={**stats, "train/zero_std_groups_kept": float(adv.zero_std.sum())},
    )


def rollout_metrics(ro: Rollout, g: int) -> dict[str, float]:
    """A step's `train/` and `reward/` metrics of the rollout (docs/metrics.md)."""
    correct = np.array(ro.correct, dtype=bool)
    lengths = np.array([len(t) for t in ro.tokens], dtype=np.float64)
    out: dict[str, float] = {
        "train/accuracy": float(correct.mean()),
        "train/completion_len/mean": float(lengths.mean()),
        "train/completion_len/max": float(lengths.max()),
        "train/completion_len/correct": float(lengths[correct].mean()) if correct.any() else math.nan,
        "train/completion_len/incorrect": float(lengths[~correct].mean()) if (~correct).any() else math.nan,
        "train/truncated_frac": float(np.mean(ro.truncated)),
        "train/advantage_abs_mean": float(ro.advantages.abs().mean()),
        "reward/total/mean": float(np.nanmean(ro.total.numpy())) if (~torch.isnan(ro.total)).any() else math.nan,
    }
    for name, vals in ro.rewards.items():
        v = np.array([math.nan if x is None else x for x in vals], dtype=np.float64)
        ok = ~np.isnan(v)
        out[f"reward/{name}/mean"] = float(v[ok].mean()) if ok.any() else math.nan
        out[f"reward/{name}/std"] = float(v[ok].std()) if ok.any() else math.nan
        out[f"reward/{name}/none_frac"] = float((~ok).mean())
    if ro.statuses:
        counts = Counter(ro.statuses)
        out.update({f"verify/{s}": float(counts[s]) for s in STATUSES})
    out.update({k: v for k, v in ro.stats.items() if not k.startswith("time/")})
    return out


def sample_rows(ro: Rollout, step: int, g: int) -> list[TrainSample]:
    """One `samples/train.jsonl` row per completion (docs/outputs.md)."""
    return [
        TrainSample(
            step=step,
            problem_id=ro.problems[i // g].id,
            group=i // g,
            completion=text,
            tokens=len(ro.tokens[i]),
            truncated=ro.truncated[i],
            rewards={k: v[i] for k, v in ro.rewards.items()},
            total=None if math.isnan(float(ro.total[i])) else float(ro.total[i]),
            advantage=float(ro.advantages[i]),
            correct=ro.correct[i],
            policy_version=ro.policy_version,
            **({"messages": ro.messages[i]} if ro.messages is not None else {}),
        )
        for i, text in enumerate(ro.texts)
    ]
