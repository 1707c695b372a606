"""Per-rank training memory of `distributed.strategy: ddp` and `fsdp`, MEASURED from the tensors each
rank holds after a forward, a backward and an AdamW step (a DTensor counts its local shard; AdamW's
state tensors as they are), at two model sizes on 1, 2 and 4 CPU ranks (gloo), and the largest model
each strategy fits on an 80 GB device by that arithmetic (docs/scaling.md has the table).

    nice -n 19 python bench/memory.py              # every row: one torchrun launch each, ~5 min on 2 cores
    nice -n 19 python bench/memory.py --sizes tiny # the small model only

The models are Llamas built from a config with random weights (no download): `tiny` is rlvr's default
tiny shape (hidden 128, 4 layers, tied embeddings, vocabulary 64), `smollm2-135m` SmolLM2-135M's shape
(hidden 576, 30 layers, 9 heads of which 3 key/value, vocabulary 49,152, tied). Everything is float32,
as on the CPU tests; a worker rank runs `python bench/memory.py --worker SIZE STRATEGY` under torchrun.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys

import torch

SIZES: dict[str, dict[str, int]] = {
    "tiny": {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4,
             "intermediate_size": 512, "vocab_size": 64},
    "smollm2-135m": {"hidden_size": 576, "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                     "intermediate_size": 1536, "vocab_size": 49152},
}  # fmt: skip
DEVICE_GB = 80.0
ACTIVATIONS_GB = 10.0  # stated allowance for activations, the KV cache of sampling and allocator slack
MB = 2**20


def build(size: str) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**SIZES[size], tie_word_embeddings=True, max_position_embeddings=256))


def worker(size: str, strategy: str) -> None:
    """One rank: build, wrap, one step, measure; rank 0 prints every rank's bytes as one JSON line."""
    from rlvr.grpo import fsdp
    from rlvr.grpo.distributed import Dist

    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo")
    dist = Dist(torch.distributed.get_rank(), torch.distributed.get_world_size())
    model = build(size).train()
    n_params = sum(p.numel() for p in model.parameters())
    rollout_copy = 0
    if strategy == "fsdp":  # the trainer's whole rollout copy, then the policy sharded
        copy_ = copy.deepcopy(model)
        rollout_copy = sum(p.numel() * p.element_size() for p in copy_.parameters())
        fsdp.shard_model(model, bf16=False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    ids = torch.randint(SIZES[size]["vocab_size"], (2, 16), generator=torch.Generator().manual_seed(dist.rank))
    model(ids).logits.float().mean().backward()
    if strategy == "ddp":
        dist.sum_grads([p for p in model.parameters() if p.requires_grad])
    opt.step()
    mine = {**fsdp.local_bytes(model, opt), "rollout_copy": rollout_copy}
    rows = dist.gather(mine)
    if dist.main:
        out = {"size": size, "strategy": strategy, "ranks": dist.world, "parameters": n_params, "per_rank": rows}
        print(json.dumps(out))
    dist.close()


def launch(size: str, strategy: str, n: int) -> dict:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
           __file__, "--worker", size, strategy]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return json.loads([x for x in r.stdout.splitlines() if x.startswith("{")][-1])


def fits(bytes_per_param: float) -> float:
    """Parameters (billions) that fit on DEVICE_GB less the activation allowance."""
    return (DEVICE_GB - ACTIVATIONS_GB) * 1e9 / bytes_per_param / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, metavar=("SIZE", "STRATEGY"))
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--ranks", nargs="+", type=int, default=[1, 2, 4])
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    print("| model | parameters | strategy | ranks | params MiB/rank | grads MiB/rank | AdamW MiB/rank | "
          "total MiB/rank | bytes/param/rank | rollout copy MiB/rank |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    per_param: dict[tuple[str, int], float] = {}
    for size in args.sizes:
        for strategy in ("ddp", "fsdp"):
            for n in args.ranks:
                res = launch(size, strategy, n)
                top = max(res["per_rank"], key=lambda b: b["params"] + b["grads"] + b["optimizer"])  # the fullest rank
                total = top["params"] + top["grads"] + top["optimizer"]
                bpp = total / res["parameters"]
                per_param[(strategy, n)] = bpp + top["rollout_copy"] / res["parameters"]
                print(f"| {size} | {res['parameters'] / 1e6:.2f}M | {strategy} | {n} | {top['params'] / MB:.1f} | "
                      f"{top['grads'] / MB:.1f} | {top['optimizer'] / MB:.1f} | {total / MB:.1f} | {bpp:.2f} | "
                      f"{top['rollout_copy'] / MB:.1f} |", flush=True)  # fmt: skip
    print(f"\nLargest model on a {DEVICE_GB:.0f} GB device, {ACTIVATIONS_GB:.0f} GB kept for activations, from the "
          f"last size's measured bytes per parameter (rollout copy included), N=8 by the same arithmetic:")  # fmt: skip
    print("| strategy | ranks | bytes/param/rank | largest model |")
    print("|---|---|---|---|")
    for (strategy, n), bpp in sorted(per_param.items()):
        print(f"| {strategy} | {n} | {bpp:.2f} | {fits(bpp):.2f}B |")
    for strategy, bpp in (("ddp", 16.0), ("fsdp", 16.0 / 8 + 4.0)):
        print(f"| {strategy} | 8 (arithmetic) | {bpp:.2f} | {fits(bpp):.2f}B |")


if __name__ == "__main__":
    main()
