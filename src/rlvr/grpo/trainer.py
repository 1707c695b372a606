"""The GRPO trainer: `rlvr train --config run.yaml`.

Per step: sample G completions for each of P prompts, score them with the configured rewards,
compute group advantages, then `num_iterations` clipped policy-gradient updates (plus `beta * KL` to
a frozen reference when `beta > 0`). Every variant's math lives in `objective.py` and is resolved
once in `__init__`; this file is plumbing: data order, micro-batching, metrics, checkpoints, resume.
`objective: rft` (rejection-sampling fine-tuning, `rft.py`) samples and scores the same way and takes a
supervised step on the accepted samples instead (`rft_update`).
"""

from __future__ import annotations

import copy
import functools
import math
import random
import shutil
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch

from rlvr.config import check_device
from rlvr.envs import EnvRunner
from rlvr.evaluate.metrics import pass_at_k
from rlvr.evaluate.runner import Scored, sample_and_score, score_conversations
from rlvr.grpo import fsdp
from rlvr.grpo import objective as obj
from rlvr.grpo.async_rollout import AsyncRollouts, behaviour_logprobs
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.correction import correction_stats, resolve_correction
from rlvr.grpo.distributed import init_distributed, merge_update_stats
from rlvr.grpo.health import EntropyWatch
from rlvr.grpo.rewarding import RewardRunner
from rlvr.grpo.rft import nll_sum, rft_targets
from rlvr.grpo.rollout import Rollout, collect, rollout_metrics, sample_rows
from rlvr.interrupt import Interrupted, StopRequest
from rlvr.models.batching import completion_logits, pack_groups
from rlvr.models.engines import make_sampler
from rlvr.models.load import load_model, load_tokenizer, resolve_model_path
from rlvr.models.sampling import autocast, over_long, prompt_token_limit
from rlvr.runs import (
    Interruption,
    RunDir,
    RunFileError,
    RunFolderError,
    check_out,
    check_resume,
    check_space,
    read_manifest,
    write_model_card,
)
from rlvr.tasks import DataError, Problem, PromptFormatter, get_task, problems_hash, refuse_unused_system_prompt, replay

__all__ = ["GRPOTrainer"]


class GRPOTrainer:
    def __init__(
        self,
        cfg: TrainConfig,
        *,
        resume: bool = False,
        progress=None,
        extra_rewards: dict[str, Any] | None = None,
        overwrite: bool = False,
    ) -> None:
        """`extra_rewards` adds reward callables (TRL convention, weight 1) that a config cannot name,
        e.g. sandboxed candidates in reward search; they are scored after `cfg.rewards`. Every input
        is checked before the run folder is touched; a folder holding a run is refused unless
        `overwrite` (or `resume`)."""
        self.cfg, self.ocfg, self.progress = cfg, cfg.objective_config, progress
        check_device(cfg.device)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.dist, self.device = init_distributed(cfg.device)  # one process unless torchrun started several
        self.sharded = cfg.distributed.strategy == "fsdp"  # checkpoints in DCP's sharded format (rlvr.grpo.fsdp)
        self.fsdp = self.sharded and self.dist.world > 1  # parameters, gradients and AdamW state split over ranks
        if self.dist.main:  # rank 0 owns the folder (a refusal there ends every rank: torchrun stops the group)
            check_out(cfg.out, resume=resume, overwrite=overwrite, resumable=True, reads=[cfg.model])
        if resume:
            check_resume(cfg.out, cfg)
            check_resumable(cfg.out)
        self.model_path = resolve_model_path(cfg.model)
        self.tok = load_tokenizer(self.model_path)
        s = cfg.sampling
        self.fmt = PromptFormatter.create(self.tok, s.prompt_format, s.system_prompt)
        if cfg.env is None:
            refuse_unused_system_prompt(self.fmt.fmt, s.prompt_format, s.system_prompt)
        self.env = EnvRunner.build(cfg.env, self.tok, self.fmt, s.system_prompt) if cfg.env is not None else None
        self.model = self._build_policy(load_model(self.model_path, dtype=cfg.dtype, device=self.device))
        self._rollout_copy = copy.deepcopy(self.model) if self.fsdp else None  # whole weights to sample from
        self._build_rollout()
        self.ref = self._build_reference() if self.ocfg.beta > 0 else None
        if self.fsdp:  # after the copies: the rollout copy stays whole, the reference is sharded too
            fsdp.shard_model(self.model, bf16=cfg.bf16)
            if self.ref is not None:
                fsdp.shard_model(self.ref, bf16=cfg.bf16)
        self._resolve_objective()
        self.task, settings = get_task(cfg.task), {"preset": cfg.preset, **cfg.task_settings}
        self.loads = {"train": self.task.load_args("train", n=cfg.n_train, seed=cfg.seed, **settings)}
        if cfg.eval_every:
            self.loads["dev"] = self.task.load_args("dev", n=cfg.eval_n, seed=cfg.seed, **settings)
        self.problems = replay(self.loads["train"])
        self.dev = replay(self.loads["dev"]) if cfg.eval_every else []
        self.skipped_long = self._drop_long_prompts()
        if not self.problems:
            raise DataError(f"{cfg.task}: no training problems")
        self.runner = RewardRunner(cfg.rewards, cfg.reward_timeout_s, extra=extra_rewards)
        self.opt, self.sched = self._build_optimizer()
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.step, self.cursor = 0, 0
        self.samples_drawn, self.train_s = 0, 0.0  # cumulative: what a compute-matched comparison reads
        if self.dist.main and not resume:
            n_ck = (cfg.steps // cfg.save_every if cfg.save_every else 0) + 1
            check_space(
                cfg.out, self._checkpoint_bytes() * n_ck + self._model_bytes(), f"{n_ck} checkpoint(s) and the model"
            )
        self.run = RunDir(cfg.out, cfg, command="train", resume=resume, write=self.dist.main, overwrite=overwrite)
        self.run.write_manifest(
            seeds={"train": cfg.seed, "sampling": cfg.seed, "data_order": cfg.seed},
            data={
                "train": {
                    "task": cfg.task,
                    "n": len(self.problems),
                    "hash": problems_hash(self.problems),
                    "skipped_long_prompts": self.skipped_long,
                    "load": self.loads["train"],
                },
                "dev": {
                    "task": cfg.task,
                    "n": len(self.dev),
                    "hash": problems_hash(self.dev),
                    "load": self.loads.get("dev"),
                },
            },
            model={"path": str(self.model_path), "parameters": sum(p.numel() for p in self.model.parameters())},
            objective=self.ocfg.model_dump(),
            prompt_format=self.fmt.fmt,
            world_size=self.dist.world,
            reward_files=self.runner.files,
        )
        if resume:
            self._load_latest()
            self.run.write_manifest(interrupted=None)
        self._sync_rollout()
        self.rollouts = self._build_async() if cfg.rollout.async_ else None

    @property
    def rollout_model(self):
        """The model that samples, evaluates and is saved: the policy itself, or under fsdp its whole
        copy, refreshed from the shards after every update (`_sync_rollout`)."""
        return self.model if self._rollout_copy is None else self._rollout_copy

    def _sync_rollout(self) -> None:
        """Make the next rollout use the current weights: under fsdp gather them into the rollout copy
        (a collective); push them into vLLM when it samples."""
        if self._rollout_copy is not None:
            fsdp.gather_into(self._rollout_copy, self.model)
        self.sampler.sync(self.rollout_model, self.step)

    # ------------------------------------------------------------------ setup
    def _model_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    def _checkpoint_bytes(self) -> int:
        """One checkpoint on disk: the weights saved (the adapters alone under LoRA) and AdamW's two
        float32 moments of every trained parameter."""
        trained = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        saved = self._model_bytes() if self.cfg.lora is None else 4 * trained
        return saved + 8 * trained

    def _build_policy(self, model):
        if self.cfg.lora is None:
            return model.train()
        from peft import LoraConfig, get_peft_model

        lc = self.cfg.lora
        peft_cfg = LoraConfig(
            r=lc.r,
            lora_alpha=lc.alpha,
            lora_dropout=lc.dropout,
            target_modules=lc.target_modules,
            task_type="CAUSAL_LM",
        )
        return get_peft_model(model, peft_cfg).train()

    def _resolve_objective(self) -> None:
        """Every variant resolved once into plain functions (docs/objectives.md): the loop never
        branches on a name."""
        o = self.ocfg
        advantage = obj.resolve_advantage(o.advantage_scale)
        self.advantage_fn = functools.partial(
            obj.resolve_reward_normalization(o.reward_normalization), advantage=advantage, eps=1e-4
        )
        self.aggregate = obj.resolve_aggregation(o.aggregation)
        loss = obj.resolve_policy_loss(o.policy_loss)
        self.policy_loss = loss.bind(o, self.aggregate)
        self.stat_reduce: dict[str, obj.Reduce] = {**loss.stats, "kl": "token"}  # how each statistic merges
        self.kl_fn = obj.resolve_kl(o.kl_estimator)
        # high-entropy token selection (Beyond the 80/20 Rule); None = every token
        self.token_quantile = o.top_entropy_quantile if o.top_entropy_quantile < 1.0 else None
        self.entropy_watch = EntropyWatch()  # warns once when the token entropy blows up (a collapse)
        self._update = self.rft_update if o.method == "rft" else self.update
        self._skip_said = False  # rft: the console was told that a step updated nothing

    def _build_rollout(self) -> None:
        """The rollout engine (`rollout.engine`) and, for an engine other than rlvr's own, the
        correction of its log-prob mismatch (`rlvr.grpo.correction`), resolved once."""
        cfg, corr = self.cfg, self.ocfg.rollout_correction
        self.sampler = make_sampler(
            cfg.rollout, self.rollout_model, self.model_path, device=self.device, dtype=cfg.dtype, seed=cfg.seed
        )
        cap = self.ocfg.rollout_correction_cap
        self.correct = None if corr == "none" else functools.partial(resolve_correction(corr), cap=cap)
        self.uncapped = None if corr == "none" else functools.partial(resolve_correction(corr), cap=math.inf)
        self._async_state: dict[str, Any] | None = None  # a checkpoint's pending async batches (resume)
        self.rollout_stats: dict[str, float] = {}

    def _build_async(self) -> AsyncRollouts:
        """The rollout worker of `rollout.async` (`rlvr.grpo.async_rollout`): its own copy of the policy,
        the same draw as the synchronous step, and the behaviour log-probs of stale batches."""
        if self.dist.world > 1:
            raise ValueError("rollout.async: one process only (not under torchrun with several ranks)")
        if self.sampler.engine == "vllm":
            raise ValueError("rollout.async: the vllm engine is not supported (rollout.engine auto chose it); use fast")
        behaviour = functools.partial(  # the rows the update runs: all with a KL term, else those with signal
            behaviour_logprobs, micro_batches=self._micro_batches, logits=self._logits, all_rows=self.ocfg.beta > 0
        )
        return AsyncRollouts(
            self.model,
            self._collect,
            None if self.ocfg.method == "rft" else behaviour,
            staleness=self.cfg.rollout.max_staleness,
            version=self.step,
            last=self.cfg.steps,
            threads=self.cfg.threads,
            state=self._async_state,
        )

    def _build_reference(self):
        if self.cfg.lora is not None:
            return None  # the reference is the policy with its adapters disabled
        ref = copy.deepcopy(self.model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    def _build_optimizer(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        warm, total, cosine = self.cfg.warmup_steps, self.cfg.steps, self.cfg.lr_schedule == "cosine"

        def factor(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            if not cosine:
                return 1.0
            return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm))))

        return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)

    # ------------------------------------------------------------------ data
    def _drop_long_prompts(self) -> list[str]:
        """Leave out training problems whose prompt exceeds the prompt limit (`prompt_token_limit`):
        their ids go to the manifest and a warning, never a silent truncation."""
        limit = prompt_token_limit(self.model, self.cfg.sampling)
        long = set(over_long(self.tok, [self.fmt.prompt(p) for p in self.problems], limit))
        self.dev = [p for p in self.dev if not over_long(self.tok, [self.fmt.prompt(p)], limit)]
        if long:
            warnings.warn(
                f"{self.cfg.task}: {len(long)} training prompts are longer than {limit} tokens; "
                "left out (ids in manifest.json)",
                stacklevel=2,
            )
        ids = [self.problems[i].id for i in sorted(long)]
        self.problems = [p for i, p in enumerate(self.problems) if i not in long]
        return ids

    def _next_problems(self, k: int) -> list[Problem]:
        """The next k training problems of a seeded per-epoch shuffle; `cursor` is the position."""
        n = len(self.problems)
        out = []
        for _ in range(k):
            epoch, i = divmod(self.cursor, n)
            order = self._epoch_order(epoch)
            out.append(self.problems[order[i]])
            self.cursor += 1
        return out

    @functools.lru_cache(maxsize=2)  # noqa: B019 - two epochs at most are live; the trainer lives as long
    def _epoch_order(self, epoch: int) -> list[int]:
        return random.Random(self.cfg.seed * 1_000_003 + epoch).sample(range(len(self.problems)), len(self.problems))

    # ------------------------------------------------------------------ update
    def _logits(self, model, batch) -> torch.Tensor:
        """Completion logits in float32 (the forward under bf16 autocast when `bf16` is on), divided by the
        sampling temperature: the log-probs, entropies and KL are of the distribution the rollouts were
        drawn from, as in TRL and verl (at T != 1 the raw logits' gradient is not the policy gradient of
        what was sampled). (B, Lc, V)"""
        with autocast(model, self.cfg.bf16):
            logits = completion_logits(model, batch)
        return logits.float() / self.cfg.sampling.temperature

    def _ref_logp(self, batch) -> torch.Tensor:
        with torch.no_grad():
            if self.ref is not None:
                logits = self._logits(self.ref, batch)
            else:
                with self.model.disable_adapter():
                    logits = self._logits(self.model, batch)
            return obj.token_logprobs(logits, batch.targets)

    def _micro_batches(self, ro: Rollout, rows: list[int]) -> list[tuple[torch.Tensor, Any]]:
        """The given completion rows in micro-batches of at most `micro_batch_size` rows. A group's
        rows stay together where they fit (their prompt runs once, see `pack_groups`); groups go in
        order of their longest completion so that little compute goes to padding."""
        g, mbs = self.cfg.group_size, self.cfg.micro_batch_size
        by_group: dict[int, list[int]] = {}
        for i in rows:
            by_group.setdefault(i // g, []).append(i)
        order = sorted(by_group, key=lambda j: max(len(ro.tokens[i]) for i in by_group[j]))
        units = [(j, by_group[j][s : s + mbs]) for j in order for s in range(0, len(by_group[j]), mbs)]
        batches: list[list[tuple[int, list[int]]]] = []
        for unit in units:
            if batches and sum(len(r) for _, r in batches[-1]) + len(unit[1]) <= mbs:
                batches[-1].append(unit)
            else:
                batches.append([unit])
        out = []
        for units_mb in batches:
            idx = [i for _, r in units_mb for i in r]
            batch = pack_groups(
                [ro.prompt_tokens[j * g] for j, _ in units_mb],
                [ro.tokens[i] for i in idx],
                self.tok.pad_token_id,
                [len(r) for _, r in units_mb],
            )
            if self.ocfg.mask_truncated:
                keep = torch.tensor([not ro.truncated[i] for i in idx], dtype=batch.mask.dtype)
                batch.mask = batch.mask * keep[:, None]
            if ro.loss_mask is not None:  # an environment's tokens are context, never trained on
                model = torch.zeros_like(batch.mask)
                for r, i in enumerate(idx):
                    model[r, : len(ro.loss_mask[i])] = torch.tensor(ro.loss_mask[i], dtype=batch.mask.dtype)
                batch.mask = batch.mask * model
            out.append((torch.tensor(idx), batch.to(self.device)))
        return out

    def update(self, ro: Rollout) -> dict[str, float]:
        """`num_iterations` optimiser steps on one rollout; returns loss statistics.

        Completions whose advantage is exactly 0 (zero-std groups, unscorable rows) contribute exactly
        zero policy gradient, so when there is no KL term they are not run at all; they still count in
        the loss normalisers, and when nothing runs the parameters get a zero gradient, so AdamW takes
        the same step as if every row had been computed."""
        adv = ro.advantages.to(self.device)
        active = self._counted(ro)
        n_tok = max(1, sum(self._model_tokens(ro, i) for i in active))  # an environment's tokens never count
        n_seq = sum(1 for i in active if len(ro.tokens[i]) > 0)
        max_len = self.cfg.env.limits.max_total_tokens if self.cfg.env is not None else self.cfg.sampling.max_new_tokens
        norm = {"max_len": max_len, "n_tokens_global": n_tok, "n_seqs_global": n_seq}
        g = self.cfg.group_size
        mine = self.dist.block(len(ro.tokens) // g)  # this rank's groups; the normalisers above are global
        active = [i for i in active if i // g in mine]
        rows = active if self.ocfg.beta > 0 else [i for i in active if float(ro.advantages[i]) != 0.0]
        mbs = self._micro_batches(ro, rows) if rows else []
        n_pad, dummy = self._padding(ro, mbs)
        ref = [self._ref_logp(b) for _, b in mbs] if self.ocfg.beta > 0 else None
        if ref is not None:
            for _ in range(n_pad):
                self._ref_logp(dummy)
        old: list[torch.Tensor | None] = [None] * len(mbs)
        ents: list[torch.Tensor] = []  # (mb, Lc) entropies when token selection is on
        if self.cfg.num_iterations > 1 or self.token_quantile is not None:
            with torch.no_grad():  # one forward gives the old log-probs and the entropies
                for j, (_, b) in enumerate(mbs):
                    logits = self._logits(self.model, b)  # (mb, Lc, V)
                    if self.cfg.num_iterations > 1:
                        old[j] = obj.token_logprobs(logits, b.targets)
                    if self.token_quantile is not None:
                        ents.append(obj.entropy_from_logits(logits))
                for _ in range(n_pad):
                    self._logits(self.model, dummy)
        acc: dict[str, float] = {"update_rows_frac": len(rows) / max(1, len(ro.tokens))}
        select: list[torch.Tensor | None] = [None] * len(mbs)
        if self.token_quantile is not None:
            select = self._select_tokens(mbs, ents, adv, self.token_quantile, acc)
        rolls = [self._rollout_logp(ro, idx, b) for idx, b in mbs]
        params = [p for p in self.model.parameters() if p.requires_grad]
        seen = float(sum(b.mask.sum() for _, b in mbs))
        seqs = float(sum((b.mask.sum(-1) > 0).sum() for _, b in mbs))
        self.rollout_stats = {}
        parts: list[tuple[dict[str, float], float, float]] = []  # each micro-batch's (stats, tokens, sequences)
        for it in range(self.cfg.num_iterations):
            self.opt.zero_grad(set_to_none=True)
            for j, (idx, b) in enumerate(mbs):
                share = float(b.mask.sum()) / seen if seen > 0 else 0.0
                loss, st = self._loss(b, adv[idx], old[j], None if ref is None else ref[j], rolls[j], norm, select[j])
                loss.backward()
                mb_stats = {k: float(st[k]) for k in self.stat_reduce if k in st}
                parts.append((mb_stats, float(b.mask.sum()), float((b.mask.sum(-1) > 0).sum())))
                acc["loss"] = acc.get("loss", 0.0) + loss.item() / self.cfg.num_iterations
                if it == 0 and "logprob_diff_mean" in st:
                    self._add_rollout_stats(st, share)
            for _ in range(n_pad):
                fsdp.dummy_backward(self._logits(self.model, dummy))
            if not mbs and not n_pad:  # nothing ran (every advantage 0): AdamW still steps on a zero gradient
                for p in params:
                    p.grad = torch.zeros_like(p)
            acc["grad_norm"] = self._sync_and_clip(params)
            self.opt.step()
        self.sched.step()
        acc.update(obj.merge_stats(parts, self.stat_reduce))
        acc["lr"] = self.sched.get_last_lr()[0]
        if self.dist.world > 1:
            acc = merge_update_stats(self.dist.gather((acc, seen, seqs)), self.stat_reduce)
        if "loss" not in acc:  # no rank ran anything
            acc.update(loss=0.0, ratio_min=1.0, ratio_max=1.0, ratio_mean=1.0, clip_frac=0.0)
            acc.update(clip_frac_low=0.0, clip_frac_high=0.0)
        acc["entropy"] = _rollout_entropy(ro)
        return acc

    def rft_update(self, ro: Rollout) -> dict[str, float]:
        """Rejection-sampling fine-tuning's step on one rollout: the completions the task's verifier
        accepts (`rft.rft_targets`: finished, deduplicated, at most `rft_max_per_prompt` a prompt) are
        the targets of `num_iterations` optimiser steps on their token-mean negative log-likelihood
        (raw logits, as `rlvr sft`: the model is fine-tuned, not the sampling distribution). A step with
        no target changes no parameter (no optimiser step: AdamW's momentum would move them) and says so.
        The rollout's `advantages` become each completion's weight in this loss (1 target, 0 not), what
        `samples/train.jsonl` then records."""
        o, g = self.ocfg, self.cfg.group_size
        rows = rft_targets(
            ro.correct, ro.truncated, ro.tokens, g, max_per_prompt=o.rft_max_per_prompt, dedup=o.rft_dedup
        )
        weight = torch.zeros(len(ro.tokens))
        weight[rows] = 1.0
        ro.advantages = weight
        n_tok = sum(self._model_tokens(ro, i) for i in rows)  # the global token-mean denominator
        acc: dict[str, float] = {
            "rft/correct": float(sum(ro.correct)),
            "rft/accepted": float(len(rows)),
            "rft/prompts_accepted": float(len({i // g for i in rows})),
            "rft/target_tokens": float(n_tok),
            "rft/skipped_step": float(not rows),
            "update_rows_frac": len(rows) / max(1, len(ro.tokens)),
        }
        if rows:
            mine = self.dist.block(len(ro.tokens) // g)
            mbs = self._micro_batches(ro, [i for i in rows if i // g in mine])
            n_pad, dummy = self._padding(ro, mbs)
            params = [p for p in self.model.parameters() if p.requires_grad]
            loss_sum = 0.0
            for _ in range(self.cfg.num_iterations):
                self.opt.zero_grad(set_to_none=True)
                for _, b in mbs:
                    with autocast(self.model, self.cfg.bf16):
                        logits = completion_logits(self.model, b)
                    loss = nll_sum(obj.token_logprobs(logits.float(), b.targets), b.mask) / max(1, n_tok)
                    loss.backward()
                    loss_sum += loss.item() / self.cfg.num_iterations
                for _ in range(n_pad):
                    fsdp.dummy_backward(self._logits(self.model, dummy))
                if not mbs and not n_pad:  # another rank holds every target: this one adds a zero gradient
                    for p in params:
                        p.grad = torch.zeros_like(p)
                acc["grad_norm"] = self._sync_and_clip(params)
                self.opt.step()
            acc["loss"] = sum(self.dist.gather(loss_sum)) if self.dist.world > 1 else loss_sum
        else:
            acc.update(loss=math.nan, grad_norm=0.0)
            if self.dist.main and not self._skip_said:  # once a run: the progress line shows `skipped=1`
                self._skip_said = True
                warnings.warn(
                    f"rft: the verifier accepted none of the step's {len(ro.tokens)} samples; nothing updated "
                    "(rft/skipped_step counts such steps)",
                    stacklevel=2,
                )
        with warnings.catch_warnings():  # the schedule follows the step count, whether or not it updated
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before")
            self.sched.step()
        acc["lr"] = self.sched.get_last_lr()[0]
        acc["entropy"] = _rollout_entropy(ro)
        return acc

    def _padding(self, ro: Rollout, mbs: list) -> tuple[int, Any]:
        """Under fsdp: how many extra (dummy) micro-batches this rank runs so that every rank runs as
        many forwards and backwards as the busiest one, and the batch it runs them on; (0, None)
        otherwise."""
        if not self.fsdp:
            return 0, None
        n_pad = fsdp.pad_count(len(mbs), self.dist.world) - len(mbs)
        return n_pad, (self._micro_batches(ro, [0])[0][1] if n_pad else None)

    def _sync_and_clip(self, params: list[torch.nn.Parameter]) -> float:
        """Sum the gradients over ranks (ddp: one all-reduce; fsdp: already reduce-scattered in the
        backward) and clip them to `grad_clip` by their global norm; returns the norm before clipping."""
        if self.fsdp:
            return fsdp.grad_norm(params, self.cfg.grad_clip)
        self.dist.sum_grads(params)  # each rank's loss is its share of the global loss
        return float(torch.nn.utils.clip_grad_norm_(params, self.cfg.grad_clip))

    def _loss(self, b, adv, old, ref, roll, norm, select=None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One micro-batch's loss: the configured policy loss (weighted by the rollout correction when
        another engine sampled, restricted to the `select`ed tokens when token selection is on), plus
        `beta * KL` when there is a reference."""
        logp = obj.token_logprobs(self._logits(self.model, b), b.targets)  # (mb, Lc)
        old = logp.detach() if old is None else old
        weights, extra = None, {}
        if roll is not None:  # the engine's log-probs of these tokens: correct the mismatch with ours
            weights = None if self.correct is None else self.correct(old, roll, b.mask)
            uncapped = None if self.uncapped is None else self.uncapped(old, roll, b.mask)
            extra = correction_stats(old, roll, b.mask, torch.ones_like(roll) if weights is None else weights, uncapped)
        if select is not None:  # (mb, Lc) bool: only these tokens get policy gradient
            weights = select.to(logp.dtype) if weights is None else weights * select
        loss, st = self.policy_loss(logp, old, adv, b.mask, is_weights=weights, **norm)
        if ref is not None:
            kl = self.kl_fn(logp, ref)  # (mb, Lc)
            loss = loss + self.ocfg.beta * self.aggregate(kl, b.mask, **norm)
            st["kl"] = (kl.detach() * b.mask).sum() / b.mask.sum().clamp(min=1)
        return loss, {**st, **extra}

    def _select_tokens(self, mbs, ents, adv, quantile: float, acc: dict[str, float]) -> list[torch.Tensor | None]:
        """High-entropy token selection (Beyond the 80/20 Rule, `objective.select_top_entropy`): one
        entropy threshold for the whole step, over the tokens that carry policy gradient (mask tokens
        of rows with a non-zero advantage) of every micro-batch and rank, from the policy before this
        step's update; each micro-batch's (mb, Lc) selection. A global threshold keeps the update the
        same whatever the micro-batching or the number of ranks (TRL takes it per micro-batch)."""
        pg = [b.mask.bool() & (adv[idx] != 0).unsqueeze(-1) for idx, b in mbs]  # (mb, Lc) each
        mine = [e[m].float().cpu() for e, m in zip(ents, pg, strict=True)]
        pool = torch.cat(self.dist.gather(torch.cat(mine) if mine else torch.zeros(0)))  # every rank's tokens
        thr = obj.entropy_threshold(pool, quantile)
        acc["entropy_threshold"] = float(thr)
        acc["entropy_select_frac"] = float((pool >= thr).float().mean()) if pool.numel() else 0.0
        return [obj.high_entropy_mask(e, b.mask, thr.to(e.device)) for e, (_, b) in zip(ents, mbs, strict=True)]

    def _rollout_logp(self, ro: Rollout, idx: torch.Tensor, b) -> torch.Tensor | None:
        """The rollout engine's log-probs of a micro-batch's completion tokens, (mb, Lc); None when
        rlvr sampled them itself."""
        if ro.rollout_logp is None:
            return None
        out = torch.zeros(b.mask.shape, dtype=torch.float32)
        for r, i in enumerate(idx.tolist()):
            lp = ro.rollout_logp[i]
            out[r, : len(lp)] = torch.tensor(lp, dtype=torch.float32)
        return out.to(self.device)

    def _add_rollout_stats(self, st: dict[str, torch.Tensor], share: float) -> None:
        """Token-weighted rollout/trainer mismatch over the micro-batches (`rollout/...` keys)."""
        r = self.rollout_stats
        for k in ("logprob_diff_mean", "is_ratio_mean", "is_weight_mean", "is_clip_frac"):
            key = "rollout/" + k.replace("_mean", "/mean")
            r[key] = r.get(key, 0.0) + share * float(st[k])
        for k, fn in (("logprob_diff_max", max), ("is_ratio_max", max), ("is_ratio_min", min)):
            key = "rollout/" + k.replace("_max", "/max").replace("_min", "/min")
            r[key] = fn(r.get(key, float(st[k])), float(st[k]))

    @staticmethod
    def _model_tokens(ro: Rollout, i: int) -> int:
        return sum(ro.loss_mask[i]) if ro.loss_mask is not None else len(ro.tokens[i])

    def _counted(self, ro: Rollout) -> list[int]:
        """Rows that count in the loss normalisers: all, less truncated ones when they are masked."""
        return [i for i in range(len(ro.tokens)) if not (self.ocfg.mask_truncated and ro.truncated[i])]

    # ------------------------------------------------------------------ metrics
    def evaluate(self) -> dict[str, float]:
        """Greedy accuracy and sampled pass@k on the dev split, logged apart from the reward."""
        seed, s = self.cfg.seed + 7919 * self.step, self.cfg.sampling
        score: Callable[..., Scored]
        if self.env is not None:  # conversations with the environment, as training holds them
            score = functools.partial(score_conversations, self.rollout_model, self.tok, self.dev, self.env, sampling=s)
        else:
            score = functools.partial(
                sample_and_score, self.rollout_model, self.tok, self.dev, sampling=s, formatter=self.fmt
            )
        greedy = score(n=1, greedy=True, seed=seed, bf16=self.cfg.bf16, verify=self.task.verify)
        sampled = score(n=self.cfg.eval_samples, seed=seed, bf16=self.cfg.bf16, verify=self.task.verify)
        c = sampled.correct.sum(1)
        n = self.cfg.eval_samples
        out = {"eval/dev/greedy_acc": float(greedy.correct.mean()), "eval/dev/pass@1": float(sampled.correct.mean())}
        out[f"eval/dev/pass@{n}"] = float(np.mean([pass_at_k(n, int(ci), n) for ci in c]))
        out["eval/dev/completion_len"] = float(sampled.tokens.mean())
        if sampled.tool_calls is not None:
            out["eval/dev/tool_use"] = float((sampled.tool_calls > 0).mean())
        return out

    # ------------------------------------------------------------------ loop
    def _collect(self, model) -> Rollout:
        """One step's batch drawn from `model`'s weights (the policy, or the async worker's copy)."""
        return collect(
            model,
            self.tok,
            self.fmt,
            self._next_problems,
            self.runner,
            self.cfg,
            self.ocfg,
            self.advantage_fn,
            self.gen,
            self.dist,
            self.sampler,
            self.env,
        )

    def train_step(self) -> dict[str, float]:
        t0 = time.perf_counter()
        if self.rollouts is not None:  # drawn by the worker, at most max_staleness versions behind
            ro, waited = self.rollouts.get(self.step)
        else:
            ro, waited = self._collect(self.rollout_model), 0.0
            ro.policy_version = self.step
        version = self.step
        t1 = time.perf_counter()
        loss_stats = self._update(ro)
        self.step += 1
        self._sync_rollout()  # the next step samples from the new weights (fsdp: gathered; vLLM: pushed)
        t2 = time.perf_counter()
        publish_s = self.rollouts.publish(self.model, self.step) if self.rollouts is not None else 0.0
        g = self.cfg.group_size
        if self.dist.main:
            self.run.append_samples("train", sample_rows(ro, self.step, g))
        gen_tokens = sum(len(t) for t in ro.tokens)
        self.samples_drawn += int(ro.stats.get("train/samples_drawn", len(ro.tokens)))
        self.train_s += t2 - t0
        row: dict[str, float] = {"step": self.step, **rollout_metrics(ro, g)}
        row["train/samples_drawn_total"] = float(self.samples_drawn)
        row.update({k if "/" in k else f"train/{k}": v for k, v in loss_stats.items()})  # rft/...: namespaced
        row.update(self.rollout_stats)
        if self.sampler.synced_step is not None:
            row["rollout/synced_step"] = float(self.sampler.synced_step)
        row.update(
            {
                "time/generate_s": ro.stats["time/generate_s"],
                "time/reward_s": ro.stats["time/reward_s"],
                "time/update_s": t2 - t1,
                "time/step_s": t2 - t0,
                "time/tokens_per_s": gen_tokens / (t2 - t0),
                "time/elapsed_s": self.train_s,
            }
        )
        if self.rollouts is not None:
            row.update(self._async_metrics(ro, version, (t0, t1, t2), waited, publish_s))
        if self.cfg.eval_every and self.step % self.cfg.eval_every == 0 and self.dist.main:
            row.update(self.evaluate())  # the other ranks wait for rank 0 at the next collective
        return row

    def _async_metrics(self, ro: Rollout, version: int, t: tuple[float, float, float], waited: float, publish_s):
        """`async/` keys (docs/metrics.md): staleness of the batch, how much drawing ran during the update,
        and the idle time of each side. `t`: the step's start, the update's start and its end."""
        assert self.rollouts is not None and ro.policy_version is not None
        stale, busy = version - ro.policy_version, self.rollouts.busy
        window = time.perf_counter() - t[0]
        worker_busy = busy.busy(t[0], t[0] + window)
        return {
            "async/staleness/mean": float(stale),  # every sample of a batch comes from one version
            "async/staleness/max": float(stale),
            "async/policy_version": float(ro.policy_version),
            "async/overlap_s": busy.busy(t[1], t[2]),
            "async/trainer_wait_s": waited,
            "async/worker_idle_s": max(0.0, window - worker_busy),
            "async/publish_s": publish_s,
        }

    def train(self) -> Path:
        """Train to `cfg.steps`. On SIGTERM or SIGINT the current step finishes, a checkpoint is saved,
        the manifest says where it stopped, and `Interrupted` is raised (every rank at the same step)."""
        with StopRequest() as stop:
            while self.step < self.cfg.steps:
                row = self.train_step()
                self.run.log(row)
                if (alarm := self.entropy_watch(self.step, row.get("train/entropy"))) and self.dist.main:
                    warnings.warn(alarm, stacklevel=2)
                if self.progress is not None and self.dist.main:
                    self.progress(self.step, self.cfg.steps, row)
                if self.dist.any(stop.signum is not None):
                    self._interrupt(stop.signum or signal.SIGTERM)
                if self.cfg.save_every and self.step % self.cfg.save_every == 0 and self.step < self.cfg.steps:
                    self.save_checkpoint()
        self.save_checkpoint()
        if self.dist.main:
            self._save_final()
        self.runner.close()
        self.sampler.close()
        if self.rollouts is not None:
            self.rollouts.close()
        self.run.write_manifest(
            finished=True, wall_s=time.time() - self.run.started, samples_drawn=self.samples_drawn, train_s=self.train_s
        )
        self.run.close()
        if self.dist.main:
            write_model_card(self.run.path)
        self.dist.barrier()
        self.dist.close()
        return self.run.path

    def _interrupt(self, signum: int) -> NoReturn:
        self.save_checkpoint()
        self.runner.close()
        self.sampler.close()
        if self.rollouts is not None:
            self.rollouts.close()
        self.run.write_manifest(
            interrupted=Interruption(step=self.step, signal=signal.Signals(signum).name),
            samples_drawn=self.samples_drawn,
            train_s=self.train_s,
        )
        self.run.close()
        self.dist.close()
        where = f"step {self.step} of {self.cfg.steps} (checkpoint saved)"
        raise Interrupted(signum, where, f"rlvr train --resume {self.run.path}")

    def _save_final(self) -> None:
        model = self.rollout_model  # under fsdp the whole weights gathered after the last update
        model = model.merge_and_unload() if self.cfg.lora is not None else model
        model.save_pretrained(self.run.path / "model")
        self.tok.save_pretrained(self.run.path / "model")

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write `checkpoints/step-N/` atomically (a temporary folder renamed into place; rank 0 only,
        the other ranks wait for it). Under fsdp every rank first writes its shards of the model and
        optimizer into the temporary folder (`fsdp.save_sharded`), then rank 0 adds the rest."""
        ck = self.run.path / "checkpoints" / f"step-{self.step:06d}"
        if self.rollouts is not None:  # the sampling RNG and data cursor between two batches
            self.rollouts.drain()
        tmp = ck.with_name(ck.name + ".tmp")
        if self.sharded:
            if self.dist.main:
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir(parents=True)
            self.dist.barrier()
            fsdp.save_sharded(self.model, self.opt, tmp / fsdp.DCP_DIR)
            self.dist.barrier()
        if self.dist.main:
            self._write_checkpoint(ck, tmp)
        self.dist.barrier()
        return ck

    def _write_checkpoint(self, ck: Path, tmp: Path) -> None:
        if not self.sharded:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            self.model.save_pretrained(tmp)
        self.tok.save_pretrained(tmp)
        state = {
            "step": self.step,
            "cursor": self.cursor,
            "optimizer": None if self.sharded else self.opt.state_dict(),  # sharded: in dcp/
            "scheduler": self.sched.state_dict(),
            "sampling_rng": self.gen.get_state(),
            "torch_rng": torch.get_rng_state(),
            "samples_drawn": self.samples_drawn,
            "train_s": self.train_s,
        }
        if self.rollouts is not None:  # batches drawn from weights before this checkpoint's (async)
            state["async_rollouts"] = self.rollouts.state()
        torch.save(state, tmp / "trainer_state.pt")
        if ck.exists():  # a rerun of the same step after a resume
            shutil.rmtree(ck)
        tmp.rename(ck)

    def _load_latest(self) -> None:
        """Resume from the newest checkpoint that loads; a torn one is skipped with a warning."""
        for ck in finished_checkpoints(self.run.path):
            try:
                state = torch.load(ck / "trainer_state.pt", weights_only=False)
                if self.sharded:  # in place, on any number of ranks (DCP reshards)
                    self.opt, self.sched = self._build_optimizer()
                    fsdp.load_sharded(self.model, self.opt, ck / fsdp.DCP_DIR)
                else:
                    self._load_weights(ck)
                break
            except Exception as e:  # a torn or truncated file (disk full, killed mid-write)
                warnings.warn(
                    f"{ck}: unreadable checkpoint ({type(e).__name__}: {e}); trying the one before", stacklevel=2
                )
        else:
            raise FileNotFoundError(f"{self.run.path}: no checkpoint to resume from (checkpoints/step-*/)")
        if not self.sharded:
            self.opt, self.sched = self._build_optimizer()
            self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.gen.set_state(state["sampling_rng"])
        torch.set_rng_state(state["torch_rng"])
        self.step, self.cursor = state["step"], state["cursor"]
        self._async_state = state.get("async_rollouts")
        self.samples_drawn = state.get("samples_drawn", self.step * self.cfg.prompts_per_step * self.cfg.group_size)
        self.train_s = state.get("train_s", 0.0)  # a checkpoint written before these were kept
        if self.dist.main:
            self.run.truncate_logs(self.step)

    def _load_weights(self, ck: Path) -> None:
        if self.cfg.lora is None:
            self.model = load_model(ck, dtype=self.cfg.dtype, device=self.device).train()
        else:
            from peft import PeftModel

            base = load_model(self.model_path, dtype=self.cfg.dtype, device=self.device)
            self.model = PeftModel.from_pretrained(base, ck, is_trainable=True).train()


def _rollout_entropy(ro: Rollout) -> float:
    """Mean per-token entropy of the distribution the rollout's completions were sampled from."""
    lengths = torch.tensor([len(t) for t in ro.tokens], dtype=torch.float64)
    ent = torch.tensor(ro.entropy, dtype=torch.float64)
    return float((ent * lengths).sum() / lengths.sum().clamp(min=1))


def finished_checkpoints(run: str | Path) -> list[Path]:
    """A run folder's finished checkpoints, newest first (a `.tmp` folder is an interrupted write)."""
    folders = (Path(run) / "checkpoints").glob("step-*")
    done = [f for f in folders if f.name[5:].isdigit() and (f / "trainer_state.pt").is_file()]
    return sorted(done, reverse=True)


def check_resumable(run: str | Path) -> None:
    """Refuse, before the folder is touched, a `--resume` of a run that finished or has no checkpoint."""
    try:
        finished = read_manifest(run).finished
    except RunFileError:
        finished = False
    if finished:
        raise RunFolderError(f"{run}: the run finished; nothing to resume (train further with a new --out)")
    if not finished_checkpoints(run):
        raise FileNotFoundError(f"{run}: no checkpoint to resume from (checkpoints/step-*/)")
