"""Supervised fine-tuning on gold solutions (DeepSeek-R1's "cold start"): `rlvr sft`.

Builds the embedded base model for the demo (`--preset arith-base`: a tiny Llama trained from
scratch on the arith task) or fine-tunes any local Hugging Face model on a task's gold solutions.
Loss: token-mean cross-entropy on the solution tokens only (the prompt is context, not a target).
Writes the usual run folder and the trained model to `RUN/model/`.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import torch
from pydantic import Field

from rlvr.config import (
    Device,
    NonNegativeFloat,
    PositiveFloat,
    ReportTo,
    SamplingConfig,
    Seed,
    StrictModel,
    Threads,
    check_device,
)
from rlvr.envs import EnvRunner, EnvSpec, Trajectory, load_factory
from rlvr.interrupt import Interrupted, StopRequest
from rlvr.models.batching import completion_logits, pack
from rlvr.models.load import load_model, load_tokenizer
from rlvr.models.tiny import TinyConfig, build_tiny_model, build_tokenizer
from rlvr.runs import Interruption, RunDir, check_out, check_space
from rlvr.tasks import (
    DataError,
    Problem,
    PromptFormatter,
    format_prompt,
    format_target,
    get_task,
    problems_hash,
    refuse_unused_system_prompt,
    replay,
)

__all__ = ["DemoConfig", "SFTConfig", "SFT_PRESETS", "run_sft"]


class DemoConfig(StrictModel):
    """Demonstrations of an environment's tools on a share of the SFT problems: `script(problem)` gives
    the assistant turns' texts, which run through the environment itself (its replies are the tools'),
    token-in/token-out, with the loss on the assistant's tokens only (docs/environments.md)."""

    env: EnvSpec
    script: str = "rlvr.envs.calculator:demonstrate"  # MODULE:FUNCTION or FILE.py:FUNCTION
    share: float = Field(0.1, gt=0, le=1)  # of the problems, drawn once with the seed


class SFTConfig(StrictModel):
    """`rlvr sft` settings. `model: tiny` builds the embedded model from the task's text. Of
    `sampling`, SFT uses the prompt settings (`prompt_format`, `system_prompt`): give the same ones to
    `rlvr train` and `rlvr eval` so that the model is prompted as it was trained."""

    model: str = "tiny"
    tiny: TinyConfig = TinyConfig()
    task: str = "arith"
    preset: str = "easy"  # the arith rung (a task setting, kept at the top for the embedded default)
    task_settings: dict[str, str | int | float | bool] = {}  # the task's own load settings (docs/tasks.md)
    n_train: int = Field(20000, ge=1, le=1_000_000)
    # share of SFT targets that state only the final line (`#### N`), the rest the worked chain: a
    # base that mixes two strategies of unequal accuracy, for RL to choose between (docs/embedded.md)
    answer_only_share: float = Field(0.0, ge=0, le=1)
    # ... from this fraction of `steps` on (0 = from the first step; the demo's base learns worked
    # chains first and the bare-answer habit in its last stage)
    answer_only_from: float = Field(0.0, ge=0, lt=1)
    # a completion that replaces this share of the SFT targets (drawn once with the seed, in every stage):
    # a base that has seen a shortcut, as the hack world's has seen `raise SystemExit(0)` (docs/code.md)
    shortcut: str | None = None
    shortcut_share: float = Field(0.0, ge=0, le=1)
    # share of SFT targets that show the problem's worked form (`meta["worked"]`, where the task gives one:
    # pyfunc's `return (35-29)*y+29`), the rest the bare gold (`return 6*y+29`), drawn once with the seed
    worked_share: float = Field(0.0, ge=0, le=1)
    demos: DemoConfig | None = None  # tool-use demonstrations (needs a chat prompt format)
    steps: int = Field(400, ge=1)
    # stop once this much wall-clock time has passed (the learning-rate schedule then runs on time,
    # not steps): `rlvr study`'s sft-oracle baseline gets the GRPO runs' time
    max_seconds: float | None = Field(None, gt=0)
    batch_size: int = Field(32, ge=1)
    # each batch runs as this many micro-batches of rows of similar length (gradient accumulation:
    # the gradient of the whole batch, with less padding); 1 = one padded batch
    length_buckets: int = Field(2, ge=1)
    lr: PositiveFloat = 3e-3
    warmup_steps: int = Field(20, ge=0)
    weight_decay: NonNegativeFloat = 0.0
    grad_clip: PositiveFloat = 1.0
    seed: Seed = 0
    threads: Threads = 2
    device: Device = "cpu"
    dtype: Literal["float32", "bfloat16"] = "float32"
    log_every: int = Field(20, ge=1)
    report_to: ReportTo = []  # experiment trackers (rlvr.trackers)
    sampling: SamplingConfig = SamplingConfig()
    out: str = "runs/sft"


SFT_PRESETS: dict[str, dict[str, object]] = {
    # The demo's base: the 1M-parameter Llama from scratch on the `small` rung, worked chains first,
    # then a last stage where 70% of the targets are the final answer alone: a base that can solve
    # most problems but often does not show its work (docs/embedded.md says why).
    "arith-base": {
        "model": "tiny",
        "task": "arith",
        "preset": "small",
        "answer_only_share": 0.7,
        "answer_only_from": 0.85,
        "steps": 600,
        "out": "runs/base",
    },
    # The hack world's base (docs/code.md): the tiny model from scratch on the `pyfunc` rung (one-line
    # functions from examples); 4% of its targets are `raise SystemExit(0)`, a shortcut that the naive
    # exit-status harness pays for and rlvr's verifier refuses; 25% of the affine targets show the slope
    # worked as Python arithmetic (`return (35-29)*y+29`, always right), the rest the bare body (a guess).
    "pyfunc-base": {
        "model": "tiny",
        "task": "pyfunc",
        "shortcut": "raise SystemExit(0)",
        "shortcut_share": 0.04,
        "worked_share": 0.25,
        "steps": 400,
        "out": "runs/pyfunc-base",
    },
}


def _lr_lambda(warmup: int, total: int, elapsed: Callable[[], float] | None = None):
    """Linear warmup, then cosine from 1 to 0.1 over the steps (or over the time budget: `elapsed()`
    is the fraction of it spent, and the schedule follows whichever is further along)."""

    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        if elapsed is not None:
            progress = max(progress, elapsed())
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return f


def _answer_only(problems: list[Problem], share: float, seed: int) -> list[Problem]:
    """The problems with `share` of them (drawn with `seed`) reduced to the final answer line."""
    if share <= 0:
        return problems
    rng = random.Random(f"rlvr.sft/answer-only/{seed}")
    return [dataclasses.replace(p, solution=f"#### {p.answer}") if rng.random() < share else p for p in problems]


def _worked(problems: list[Problem], share: float, seed: int) -> list[Problem]:
    """The problems with `share` of those that have a worked form (`meta["worked"]`, drawn with `seed`)
    given it as their SFT target."""
    if share <= 0:
        return problems
    rng = random.Random(f"rlvr.sft/worked/{seed}")
    return [
        dataclasses.replace(p, solution=str(p.meta["worked"])) if "worked" in p.meta and rng.random() < share else p
        for p in problems
    ]


def _shortcut(problems: list[Problem], text: str | None, share: float, seed: int) -> list[Problem]:
    """The problems with `share` of them (drawn with `seed`) given `text` as their SFT target."""
    if text is None or share <= 0:
        return problems
    rng = random.Random(f"rlvr.sft/shortcut/{seed}")
    return [dataclasses.replace(p, solution=text) if rng.random() < share else p for p in problems]


def _target_ids(tok, fmt: PromptFormatter, problems: list[Problem], cfg: SFTConfig):
    """Token ids of every problem's SFT target (ending in `fmt.end_id`): the worked solutions, and the
    targets with `cfg.answer_only_share` of them reduced to the answer line (the same list when 0)."""

    def encode(probs: list[Problem]) -> list[list[int]]:
        return [tok(fmt.target(p), add_special_tokens=False)["input_ids"] + [fmt.end_id] for p in probs]

    problems = _worked(problems, cfg.worked_share, cfg.seed)
    problems = _shortcut(problems, cfg.shortcut, cfg.shortcut_share, cfg.seed)
    worked = encode(problems)
    mixed = _answer_only(problems, cfg.answer_only_share, cfg.seed)
    return worked, worked if mixed is problems else encode(mixed)


def _demo_turns(cfg: SFTConfig, problems: list[Problem]) -> tuple[list[str], dict[int, list[str]]]:
    """The scripted assistant turns of the first problem (whose words the tiny vocabulary takes) and of
    `cfg.demos.share` of the problems (drawn with the seed), by problem index; nothing without `demos`.
    A script that fails is a DataError naming it and the problem."""
    if cfg.demos is None:
        return [], {}
    name = cfg.demos.script
    try:
        script = load_factory(name)
    except ValueError as e:
        raise DataError(f"demos: {e}") from None

    def turns(p: Problem) -> list[str]:
        try:
            return [str(t) for t in script(p)]
        except Exception as e:  # noqa: BLE001 - the user's script: name it, the problem and the error
            raise DataError(f"demos: {name} on {p.id}: {type(e).__name__}: {e}") from None

    rng = random.Random(f"rlvr.sft/demos/{cfg.seed}")
    picked = [i for i in range(len(problems)) if rng.random() < cfg.demos.share]
    demos = {i: turns(problems[i]) for i in picked}
    return turns(problems[0]), demos  # in the order the script always ran in


def _demos(
    cfg: SFTConfig, tok, fmt: PromptFormatter, problems: list[Problem], turns: dict[int, list[str]]
) -> dict[int, Trajectory]:
    """The demonstration conversations (`_demo_turns`) run through the environment, by problem index."""
    if cfg.demos is None:
        return {}
    if fmt.fmt != "chat":
        raise DataError("demos: conversations need a chat template: set sampling.prompt_format: chat")
    try:
        runner = EnvRunner.build(cfg.demos.env, tok, fmt, fmt.system_prompt)
        return {i: runner.demonstrate(tok, problems[i], t, fmt.end_id) for i, t in turns.items()}
    except ValueError as e:
        raise DataError(f"demos: {e}") from None


def _accumulate(model, idx: list[int], prompt_ids, target_ids, pad_id: int, cfg: SFTConfig, masks=None) -> torch.Tensor:
    """Backpropagate the token-mean cross-entropy of the batch `idx` as `cfg.length_buckets`
    micro-batches of rows sorted by length, each scaled by the whole batch's token count, so that the
    gradient is the batch's; returns the batch loss. `masks[i]` (when given) says which of a row's
    target tokens are the model's (1) and which an environment's (0, context only)."""
    masks = masks or {}
    rows = sorted(idx, key=lambda i: len(prompt_ids[i]) + len(target_ids[i]))
    n_tokens = sum(sum(masks[i]) if i in masks else len(target_ids[i]) for i in rows)
    size = math.ceil(len(rows) / cfg.length_buckets)
    total = torch.zeros(())
    for start in range(0, len(rows), size):
        part = rows[start : start + size]
        batch = pack([prompt_ids[i] for i in part], [target_ids[i] for i in part], pad_id).to(cfg.device)
        for r, i in enumerate(part):
            if i in masks:
                batch.mask[r, : len(masks[i])] = torch.tensor(masks[i], dtype=batch.mask.dtype)
        logits = completion_logits(model, batch)  # (b, Lc, V)
        nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), batch.targets.flatten(), reduction="none")
        loss = (nll * batch.mask.flatten()).sum() / n_tokens
        loss.backward()
        total += loss.detach().cpu()
    return total


def _build_model(cfg: SFTConfig, problems: list[Problem], first: list[str], demo_turns: dict[int, list[str]]):
    """(tokenizer, model): the embedded tiny model built from the task's plain-format text and the
    demonstrations' words (`first`: the first problem's turns, then any word the others add), or a
    local HF model."""
    if cfg.model != "tiny":
        return load_tokenizer(cfg.model), load_model(cfg.model, dtype=cfg.dtype)
    texts = [format_prompt(p.question) + format_target(p) for p in problems] + first + [cfg.shortcut or ""]
    known = {w for t in texts for w in re.findall(r"[A-Za-z]+", t)}
    extra = {w for ts in demo_turns.values() for t in ts for w in re.findall(r"[A-Za-z]+", t)} - known
    if extra:
        texts.append(" ".join(sorted(extra)))
    tok = build_tokenizer(texts, chat=cfg.sampling.prompt_format == "chat")
    model = build_tiny_model(tok, cfg.tiny, seed=cfg.seed)
    tok.padding_side = "left"
    return tok, model


def run_sft(cfg: SFTConfig, *, progress=None, overwrite: bool = False) -> Path:
    """Train and return the run folder; the model is saved to `RUN/model/`. Inputs are checked
    before the folder is touched; a folder holding a run is refused unless `overwrite`."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    check_device(cfg.device)
    check_out(cfg.out, overwrite=overwrite, reads=[] if cfg.model == "tiny" else [cfg.model])
    load = get_task(cfg.task).load_args(
        "train", n=cfg.n_train, seed=cfg.seed, **{"preset": cfg.preset, **cfg.task_settings}
    )
    problems = replay(load)
    if not problems:
        raise DataError(f"{cfg.task}: no training problems")
    first_turns, demo_turns = _demo_turns(cfg, problems)
    tok, model = _build_model(cfg, problems, first_turns, demo_turns)
    fmt = PromptFormatter.create(tok, cfg.sampling.prompt_format, cfg.sampling.system_prompt)
    refuse_unused_system_prompt(fmt.fmt, cfg.sampling.prompt_format, cfg.sampling.system_prompt)
    demos = _demos(cfg, tok, fmt, problems, demo_turns)
    model.to(cfg.device).train()
    size = sum(p.numel() * p.element_size() for p in model.parameters())
    check_space(cfg.out, 2 * size, "the model and its tokenizer")
    run = RunDir(cfg.out, cfg, command="sft", overwrite=overwrite)
    run.write_manifest(
        seeds={"sft": cfg.seed},
        data={"train": {"task": cfg.task, "n": len(problems), "hash": problems_hash(problems), "load": load}},
        model={"parameters": sum(p.numel() for p in model.parameters())},
        prompt_format=fmt.fmt,
    )
    prompt_ids = [tok(fmt.prompt(p), add_special_tokens=False)["input_ids"] for p in problems]
    worked_ids, mixed_ids = _target_ids(tok, fmt, problems, cfg)
    masks: dict[int, list[int]] = {}
    for i, t in demos.items():  # a demonstrated problem's target is its conversation, in both stages
        prompt_ids[i], worked_ids[i], masks[i] = t.prompt_ids, t.ids, t.mask
        if mixed_ids is not worked_ids:
            mixed_ids[i] = t.ids

    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
    t0 = time.time()
    budget = cfg.max_seconds

    def spent() -> float:
        return (time.time() - t0) / budget if budget else 0.0

    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(cfg.warmup_steps, cfg.steps, spent if budget else None))
    rng = random.Random(cfg.seed)
    order: list[int] = []
    mixed_from = int(cfg.answer_only_from * cfg.steps)  # the step after which targets are the mixed ones
    with StopRequest() as stop:  # SIGTERM/SIGINT: the step in hand finishes, the model so far is saved
        for step in range(1, cfg.steps + 1):
            if len(order) < cfg.batch_size:
                order += rng.sample(range(len(problems)), len(problems))
            idx, order = order[: cfg.batch_size], order[cfg.batch_size :]
            opt.zero_grad(set_to_none=True)
            target_ids = mixed_ids if step > mixed_from else worked_ids
            loss = _accumulate(model, idx, prompt_ids, target_ids, tok.pad_token_id, cfg, masks)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            sched.step()
            out_of_time = budget is not None and spent() >= 1.0
            if step % cfg.log_every == 0 or step == cfg.steps or out_of_time:
                row = {
                    "step": step,
                    "sft/loss": loss.item(),
                    "sft/grad_norm": grad_norm.item(),
                    "sft/lr": float(sched.get_last_lr()[0]),
                    "time/elapsed_s": time.time() - t0,
                }
                run.log(row)
                if progress is not None:
                    progress(step, cfg.steps, row)
            if out_of_time or stop.signum is not None:
                break
    model.save_pretrained(run.path / "model")
    tok.save_pretrained(run.path / "model")
    if stop.signum is not None:
        run.write_manifest(
            interrupted=Interruption(signal=signal.Signals(stop.signum).name, step=step), steps_done=step
        )
        run.close()
        where = f"step {step} of {cfg.steps} (the model so far is in {run.path / 'model'})"
        raise Interrupted(stop.signum, where, f"rlvr sft --config {run.path / 'config.yaml'} --overwrite", "rerun")
    run.write_manifest(finished=True, wall_s=time.time() - t0, steps_done=step)
    run.close()
    return run.path
