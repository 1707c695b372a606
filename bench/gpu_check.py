"""The Python half of bench/gpu_check.sh (see there). `MODEL` names an HF folder; without weights in
it, its architecture is initialised at random (seeded), which is what this check needs.

`python bench/gpu_check.py --dry-run` runs the fsdp section on CPU (2 gloo ranks, a tiny model, 2 steps),
to check the script before device time is spent on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rlvr.config import SamplingConfig, load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.models.decoding import FastDecoder, HFDecoder
from rlvr.models.load import load_tokenizer
from rlvr.models.sampling import _left_pad, sample
from rlvr.tasks import PromptFormatter, load_task


def model_folder(src: Path, work: Path) -> Path:
    """`src` itself when it holds weights, else a copy with seeded random weights of its config."""
    if any(src.glob("*.safetensors")):
        return src
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(src))
    out = work / "model"
    model.save_pretrained(out)
    load_tokenizer(src).save_pretrained(out)
    print(f"{src}: no weights, so {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M random parameters")
    return out


def decoder_check(path: Path) -> None:
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).cuda().eval()
    fmt = PromptFormatter.create(tok)
    prompts = [tok(fmt.prompt(p), add_special_tokens=False)["input_ids"] for p in load_task("gsm8k", "test", n=8)]
    ids, mask = _left_pad(prompts, tok.pad_token_id)
    ids, mask = ids.cuda(), mask.cuda()
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    worst = 0.0
    with torch.no_grad():
        decs = [HFDecoder(model), FastDecoder(model)]
        logits = [d.start(ids, mask, pos, 8) for d in decs]
        nxt = pos[:, -1] + 1
        for _ in range(8):
            p = [torch.softmax(x.float(), -1) for x in logits]
            worst = max(worst, float((p[1] - p[0]).abs().max()))
            t = logits[0].argmax(-1)
            logits = [d.step(t, nxt) for d in decs]
            nxt = nxt + 1
    print(f"fast vs HF decoder on cuda, bf16, prefill + 8 steps: max |p_fast - p_hf| = {worst:.4f} (bf16 rounding)")
    for fast in (False, True):
        for _ in range(2):  # the first call warms the kernels up
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            c = sample(model, tok, [fmt.prompt(p) for p in load_task("gsm8k", "test", n=64)], 1,
                       SamplingConfig(max_new_tokens=256), stop_ids=sorted(fmt.end_ids), fast=fast)  # fmt: skip
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
        n = sum(c.lengths)
        name = "fast" if fast else "hf"
        print(f"sample 64 x <=256 tokens, {name} decoder: {n} tokens in {dt:.2f} s = {n / dt:.0f} tok/s")


def grpo_steps(path: Path, work: Path, steps: int = 20) -> None:
    cfg = load_config(TrainConfig, None, {
        "model": str(path), "task": "gsm8k", "n_train": 512, "steps": steps, "prompts_per_step": 8, "group_size": 8,
        "sampling": {"max_new_tokens": 256, "prompt_format": "chat"}, "objective_overrides": {"beta": 0.04},
        "device": "cuda", "bf16": True, "threads": None, "eval_every": 0, "save_every": 0, "micro_batch_size": 64,
        "out": str(work / "run"),
    })  # fmt: skip
    t0 = time.perf_counter()
    GRPOTrainer(cfg).train()
    rows = [json.loads(x) for x in (work / "run" / "metrics.jsonl").read_text().splitlines()]
    late = rows[2:] or rows
    med = lambda k: sorted(r[k] for r in late)[len(late) // 2]  # noqa: E731
    print(
        f"GRPO {steps} steps on cuda (8 x 8, 256 tokens, beta 0.04, bf16 autocast): {time.perf_counter() - t0:.0f} s;"
        f" median s/step {med('time/step_s'):.2f} (generate {med('time/generate_s'):.2f}, update "
        f"{med('time/update_s'):.2f}), {med('time/tokens_per_s'):.0f} tok/s, completion length "
        f"{med('train/completion_len/mean'):.0f}, peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"
    )


def fsdp_vs_ddp(path: Path, work: Path, steps: int = 8, device: str = "cuda", **overrides) -> None:
    """The same short GRPO run launched by torchrun under `distributed.strategy: ddp` and `fsdp`, one after
    the other in this call: two ranks when two GPUs are visible, else one (one rank under fsdp is the
    unsharded path with sharded checkpoints: the collectives and the rollout-copy gather only run with
    two). Prints each one's median s/step and the fsdp/ddp ratio."""
    n = min(2, torch.cuda.device_count()) if device == "cuda" else 2
    base = {
        "model": str(path), "task": "gsm8k", "n_train": 512, "steps": steps, "prompts_per_step": 8, "group_size": 8,
        "sampling": {"max_new_tokens": 256, "prompt_format": "chat"}, "objective_overrides": {"beta": 0.04},
        "device": device, "bf16": device == "cuda", "threads": None, "eval_every": 0, "save_every": 0,
        "micro_batch_size": 64, **overrides,
    }  # fmt: skip
    med: dict[str, float] = {}
    for strategy in ("ddp", "fsdp"):
        out = work / f"run-{strategy}"
        cfg = work / f"{strategy}.yaml"
        cfg.write_text(json.dumps({**base, "out": str(out), "distributed": {"strategy": strategy}}))  # JSON is YAML
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
               "-m", "rlvr", "train", "--config", str(cfg)]  # fmt: skip
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if r.returncode:
            print(f"{strategy}: torchrun exit {r.returncode}\n{r.stderr[-2000:]}")
            return
        rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
        late = rows[2:] or rows
        m = {k: sorted(r[k] for r in late)[len(late) // 2] for k in ("time/step_s", "time/generate_s", "time/update_s")}
        med[strategy] = m["time/step_s"]
        print(
            f"{strategy}, {n} rank(s) on {device}, {steps} steps: {time.perf_counter() - t0:.0f} s with start-up; "
            f"median s/step {m['time/step_s']:.2f} (generate {m['time/generate_s']:.2f}, "
            f"update {m['time/update_s']:.2f})"
        )
    print(f"fsdp / ddp median s/step: {med['fsdp'] / med['ddp']:.2f} ({n} rank(s))")


def dry_run() -> None:
    """The fsdp section on CPU: 2 gloo ranks, the tiny arith model, 2 steps."""
    from rlvr.models.tiny import TinyConfig, build_for_task
    from rlvr.tasks import format_prompt, format_target

    with tempfile.TemporaryDirectory() as tmp:
        texts = [format_prompt(p.question) + format_target(p) for p in load_task("arith", "train", n=300)]
        model = build_for_task(Path(tmp) / "model", texts, TinyConfig(hidden_size=32, num_layers=2, num_heads=2,
                               intermediate_size=64, max_position_embeddings=160))  # fmt: skip
        fsdp_vs_ddp(model, Path(tmp), steps=2, device="cpu", task="arith", n_train=32, threads=1, prompts_per_step=4,
                    group_size=4, sampling={"max_new_tokens": 10}, micro_batch_size=8)  # fmt: skip


def async_steps(path: Path, work: Path, steps: int = 12, device: str = "cuda") -> None:
    """Asynchronous rollouts (`rollout.async`, max_staleness 1) against the synchronous trainer in the same
    call: the grpo_steps settings at `steps` steps each (about a minute each on an H100 for SmolLM2-135M),
    the worker on its own CUDA stream. Prints the median s/step of each, tokens/s, the seconds of
    drawing that overlapped an update, and the speed-up."""
    med = lambda rows, k: sorted(r[k] for r in rows)[len(rows) // 2]  # noqa: E731
    out = {}
    for name, rollout in (("sync", {}), ("async k=1", {"async": True, "max_staleness": 1})):
        run = work / f"async-{len(out)}"
        cfg = load_config(TrainConfig, None, {
            "model": str(path), "task": "gsm8k", "n_train": 512, "steps": steps, "prompts_per_step": 8,
            "group_size": 8, "sampling": {"max_new_tokens": 256, "prompt_format": "chat"},
            "objective_overrides": {"beta": 0.04}, "device": device, "bf16": device == "cuda", "threads": None,
            "eval_every": 0, "save_every": 0, "micro_batch_size": 64, "rollout": rollout, "out": str(run),
        })  # fmt: skip
        t0 = time.perf_counter()
        GRPOTrainer(cfg).train()
        wall = time.perf_counter() - t0
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        late = rows[2:] or rows
        tokens = sum(r["train/completion_len/mean"] * 64 for r in rows)
        out[name] = med(late, "time/step_s")
        extra = ""
        if rollout:
            extra = (f", overlap {med(late, 'async/overlap_s'):.2f} s/step, trainer wait "
                     f"{med(late, 'async/trainer_wait_s'):.2f} s, worker idle {med(late, 'async/worker_idle_s'):.2f} s,"
                     f" staleness max {max(r['async/staleness/max'] for r in rows):.0f}")  # fmt: skip
        print(
            f"GRPO {steps} steps on {device}, {name}: {wall:.0f} s; median s/step {out[name]:.2f} (generate "
            f"{med(late, 'time/generate_s'):.2f}, update {med(late, 'time/update_s'):.2f}), {tokens / wall:.0f} tok/s"
            f" over the run, accuracy {rows[-1]['train/accuracy']:.2f}{extra}"
        )
    print(f"async k=1 against sync: {out['sync'] / out['async k=1']:.2f}x steps per second (median s/step)")


def math500_eval(path: Path, work: Path, n: int = 100) -> None:
    """MATH-500 through the chat template on cuda: `n` problems x 4 samples, 1,024 tokens, scored by the
    math task's verifier (its status counts say how many verdicts needed the slow path's deadline)."""
    from rlvr.evaluate.evaluation import EvalConfig, run_eval

    cfg = load_config(EvalConfig, None, {
        "model": str(path), "task": "math", "n_problems": n, "n_samples": 4, "ks": [1, 4], "greedy": False,
        "sampling": {"max_new_tokens": 1024, "prompt_format": "chat", "temperature": 0.6},
        "device": "cuda", "bf16": True, "threads": None, "out": str(work / "math500"),
    })  # fmt: skip
    t0 = time.perf_counter()
    run_eval(cfg)
    res = json.loads((work / "math500" / "eval.json").read_text())
    print(
        f"MATH-500 on cuda, {n} problems x 4 x <=1024 tokens: {time.perf_counter() - t0:.0f} s; pass@1 "
        f"{res['metrics']['pass@1']['value']:.3f}, pass@4 {res['metrics']['pass@4']['value']:.3f}, "
        f"truncated {res['truncated_frac']:.1%}, statuses {res['statuses']}"
    )


def code_eval(path: Path, work: Path, n: int = 164) -> None:
    """HumanEval through the chat template on cuda: `n` problems x 4 samples, 512 tokens, scored by the
    code task's jailed test verifier (needs bubblewrap on the device; skipped in one line without it)."""
    from rlvr.evaluate.evaluation import EvalConfig, run_eval
    from rlvr.harness import JailUnavailable, require_jail

    try:
        require_jail()
    except JailUnavailable as e:
        print(f"HumanEval on cuda: skipped, {e}")
        return
    cfg = load_config(EvalConfig, None, {
        "model": str(path), "task": "code", "n_problems": n, "n_samples": 4, "ks": [1, 4], "greedy": False,
        "sampling": {"max_new_tokens": 512, "prompt_format": "chat", "temperature": 0.6},
        "device": "cuda", "bf16": True, "threads": None, "out": str(work / "humaneval"),
    })  # fmt: skip
    t0 = time.perf_counter()
    run_eval(cfg)
    res = json.loads((work / "humaneval" / "eval.json").read_text())
    print(
        f"HumanEval on cuda, {n} problems x 4 x <=512 tokens: {time.perf_counter() - t0:.0f} s; pass@1 "
        f"{res['metrics']['pass@1']['value']:.3f}, pass@4 {res['metrics']['pass@4']['value']:.3f}, "
        f"truncated {res['truncated_frac']:.1%}, statuses {res['statuses']}"
    )


def main() -> None:
    if "--dry-run" in sys.argv:
        dry_run()
        return
    assert torch.cuda.is_available(), "no CUDA device"
    with tempfile.TemporaryDirectory() as tmp:
        path = model_folder(Path(os.environ.get("MODEL", ".gpu/smollm2")), Path(tmp))
        decoder_check(path)
        grpo_steps(path, Path(tmp))
        fsdp_vs_ddp(path, Path(tmp))  # ~2 min: two torchrun launches of 8 steps
        async_steps(path, Path(tmp))
        math500_eval(path, Path(tmp))
        code_eval(path, Path(tmp))


if __name__ == "__main__":
    main()
