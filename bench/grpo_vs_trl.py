"""rlvr's GRPO step against TRL's `GRPOTrainer` on the same model, prompts, rewards and settings.

    python bench/grpo_vs_trl.py [--model PATH] [--steps 6] [--rounds 3] [--beta 0.0] [--bf16]

Both systems train the same tiny Llama for `--steps` steps per round from identical weights on the
demo's arith rung (`small`), with 8 prompts x 8 generations, up to 64 new tokens, temperature 1
with top-k off, the outcome reward, and TRL's default `dapo` loss (token-mean aggregation, group-
std advantages, eps 0.2, one update per rollout). rlvr uses the equivalent objective (`grpo` preset
with `aggregation: token_mean`). Both compute in float32 unless `--bf16`, which turns on bfloat16
autocast in both (TRL's `bf16=True`, rlvr's `bf16: true`); weights and optimiser state stay float32
in both.
After one untimed warm-up run of each, rounds alternate the two systems so that machine noise
hits both; the script prints the median seconds per step and completion tokens per second of each,
the ratio rlvr / TRL, rlvr's generation/update split, and each system's share of zero-std groups
(rlvr does not run their completions when beta = 0: their policy gradient is exactly zero).

Last, it prints what bounds rlvr's step: the model's matmul FLOPs per step (2 x parameters per
token for a forward, 6 x for a forward and backward; generation runs each prompt once and each
completion token once, the update each group's prompt once and the updated completions' tokens,
plus the reference model's forward over every row when beta > 0)
against the measured generation and update times, and the rate of one large float32 matmul on the
same threads as the ceiling. A phase far below that rate is bound by per-call overhead, not FLOPs.

Needs the optional `trl` extra (`pip install 'rlvr[trl]'`). Benchmark on an idle machine: any other
load on a 2-core box slows torch's kernels far more than the difference measured here.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rlvr.config import load_config
from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
from rlvr.grpo.trainer import GRPOTrainer as RlvrTrainer
from rlvr.models.load import load_model, load_tokenizer
from rlvr.models.tiny import TinyConfig, build_for_task
from rlvr.rewards import outcome
from rlvr.tasks import format_prompt, format_target, load_task

P, G, MAX_NEW = 8, 8, 64
RUNG = str(TRAIN_PRESETS["demo"]["preset"])  # the demo's arith rung, where the demo base's groups are mixed


def default_model(work: Path) -> Path:
    """The demo base if it exists, else an untrained tiny Llama (hidden 256, 4 layers)."""
    demo = Path("runs/demo/base/model")
    if (demo / "config.json").is_file():
        return demo
    probs = load_task("arith", "train", n=2000)
    texts = [format_prompt(p.question) + format_target(p) for p in probs]
    return build_for_task(work / "tiny256", texts, TinyConfig(hidden_size=256, intermediate_size=1024))


def run_rlvr(model: Path, steps: int, beta: float, out: Path, seed: int, bf16: bool) -> tuple[list[float], int, dict]:
    cfg = load_config(
        TrainConfig,
        None,
        {
            "model": str(model), "out": str(out), "steps": steps, "prompts_per_step": P, "group_size": G,
            "preset": RUNG, "sampling": {"max_new_tokens": MAX_NEW}, "lr": 1e-6, "eval_every": 0, "save_every": 0,
            "seed": seed, "threads": None,
            "objective": "grpo", "objective_overrides": {"aggregation": "token_mean", "beta": beta},
            "micro_batch_size": P * G, "bf16": bf16,
        },
    )  # fmt: skip
    trainer = RlvrTrainer(cfg)
    times, tokens, rows = [], 0, []
    for _ in range(steps):
        t0 = time.perf_counter()
        row = trainer.train_step()
        times.append(time.perf_counter() - t0)
        tokens += round(row["train/completion_len/mean"] * P * G)
        rows.append(row)
    prompt_tokens = statistics.mean(
        len(p) for p in trainer.tok([trainer.fmt.prompt(q) for q in trainer.problems[:64]])["input_ids"]
    )
    split = {
        "generate_s": statistics.median(r["time/generate_s"] for r in rows[1:]),
        "update_s": statistics.median(r["time/update_s"] for r in rows[1:]),
        "zero_std_frac": statistics.mean(r["train/zero_std_frac"] for r in rows),
        "completion_tokens": statistics.mean(r["train/completion_len/mean"] for r in rows[1:]),
        "update_rows_frac": statistics.mean(r["train/update_rows_frac"] for r in rows[1:]),
        "prompt_tokens": prompt_tokens,
    }
    return times, tokens, split


def matmul_rate(threads: int) -> float:
    """GFLOP/s of a float32 1024 x 1024 matmul on this many threads: the ceiling a phase is held to."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    t0, n = time.perf_counter(), 20
    for _ in range(n):
        a @ b
    return 2 * 1024**3 * n / (time.perf_counter() - t0) / 1e9


def step_bound(model_path: Path, split: dict, threads: int, beta: float) -> str:
    """rlvr's generation and update FLOPs per step against their measured times (see the docstring)."""
    model = load_model(model_path)
    n = sum(p.numel() for name, p in model.named_parameters() if "embed_tokens" not in name)
    n += model.get_output_embeddings().weight.numel()  # the head's matmul (tied to the embedding here)
    comp, prompt = split["completion_tokens"], split["prompt_tokens"]
    gen_flops = 2 * n * (P * prompt + P * G * comp)
    upd_rows = split["update_rows_frac"] * P * G
    upd_flops = 6 * n * (upd_rows / G * prompt + upd_rows * comp)
    if beta > 0:  # the reference model's forward over every row
        upd_flops += 2 * n * (P * prompt + P * G * comp)
    peak = matmul_rate(threads)
    rows = f"{split['update_rows_frac']:.0%}"
    head = (f"rlvr step bound: {n / 1e6:.2f}M matmul parameters, prompts {prompt:.0f} tokens, completions "
            f"{comp:.1f} tokens, {rows} of rows updated; fp32 matmul {peak:.0f} GFLOP/s")  # fmt: skip
    lines = [head]
    for phase, flops, secs in (
        ("generation", gen_flops, split["generate_s"]),
        ("update", upd_flops, split["update_s"]),
    ):
        rate = flops / secs / 1e9
        lines.append(
            f"  {phase:10s} {flops / 1e9:6.2f} GFLOP in {secs:.3f} s = {rate:5.1f} GFLOP/s ({rate / peak:.0%})"
        )
    return "\n".join(lines)


def run_trl(model_path: Path, steps: int, beta: float, out: Path, seed: int, bf16: bool) -> tuple[list, int, dict]:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    probs = load_task("arith", "train", n=P * steps * 2, seed=seed, preset=RUNG)
    ds = Dataset.from_list([{"prompt": format_prompt(p.question), "answer": p.answer} for p in probs])
    counted = {"tokens": 0}

    def outcome_reward(completions, completion_ids, answer, **kw):
        counted["tokens"] += sum(len(c) for c in completion_ids)
        return outcome(completions, answer=answer)

    times: list[float] = []
    zero_std: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t0)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "frac_reward_zero_std" in logs:
                zero_std.append(float(logs["frac_reward_zero_std"]))

    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=P * G, num_generations=G, max_completion_length=MAX_NEW,
        max_steps=steps, learning_rate=1e-6, beta=beta, loss_type="dapo", scale_rewards="group", temperature=1.0,
        top_k=0, use_cpu=True, bf16=bf16, report_to=[], logging_steps=1, save_strategy="no", disable_dropout=True,
        seed=seed, gradient_checkpointing=False,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=load_model(model_path), reward_funcs=[outcome_reward], args=args, train_dataset=ds,
        processing_class=load_tokenizer(model_path), callbacks=[Timer()],
    )  # fmt: skip
    trainer.train()
    return times, counted["tokens"], {"zero_std_frac": statistics.mean(zero_std) if zero_std else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--beta", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true", help="bfloat16 autocast in both systems")
    args = ap.parse_args()
    if args.steps < 2:
        ap.error("--steps must be at least 2 (each run's first step is a warm-up and is not timed)")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = args.model or default_model(work)
        print(
            f"model {model}, {P} prompts x {G} generations, {MAX_NEW} new tokens, beta {args.beta}, "
            f"{'bf16 autocast' if args.bf16 else 'float32'}, {args.threads} threads"
        )
        res: dict[str, list[tuple[list[float], int]]] = {"rlvr": [], "trl": []}
        splits: list[dict] = []
        for name, fn in (("rlvr", run_rlvr), ("trl", run_trl)):  # warm-up: first kernels, allocator, imports
            fn(model, 2, args.beta, work / f"{name}-warmup", seed=99, bf16=args.bf16)
        for r in range(args.rounds):
            for name, fn in (("rlvr", run_rlvr), ("trl", run_trl)):
                times, tokens, info = fn(model, args.steps, args.beta, work / f"{name}{r}", seed=r, bf16=args.bf16)
                res[name].append((times[1:], tokens))  # drop each run's first (warm-up) step
                if name == "rlvr":
                    splits.append(info)
                extra = ", ".join(
                    f"{k} {v:.3f}" for k, v in info.items() if k in ("generate_s", "update_s", "zero_std_frac")
                )
                print(
                    f"round {r} {name:4s}: {statistics.median(times[1:]):.3f} s/step, "
                    f"{tokens / sum(times):.0f} tok/s ({extra})"
                )
        median = {k: statistics.median(s[k] for s in splits) for k in splits[0]}
        bound = step_bound(model, median, args.threads, args.beta)  # while a built model's folder still exists
    summary = {}
    for name, rows in res.items():
        step = statistics.median(t for times, _ in rows for t in times)
        tps = statistics.median(tok / (sum(times) * (len(times) + 1) / len(times)) for times, tok in rows)
        summary[name] = (step, tps)
        print(f"{name:4s}: median {step:.3f} s/step, {tps:.0f} completion tok/s")
    print(f"speed-up rlvr/TRL: {summary['trl'][0] / summary['rlvr'][0]:.2f}x per step")
    print(bound)


if __name__ == "__main__":
    main()
