"""Data-parallel GRPO over torch.distributed (`torchrun --nproc-per-node N -m rlvr train ...` or
`accelerate launch -m rlvr train ...`): N ranks train exactly like one process with the same global
batch; docs/scaling.md says how a step is split. gloo on CPU, nccl on CUDA (rank r on `cuda:LOCAL_RANK`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.grpo.losses import Reduce, merge_stats

__all__ = ["Dist", "init_distributed", "merge_update_stats"]


@dataclass(frozen=True)
class Dist:
    """This process's place in the data-parallel group (rank 0 of 1 when not launched by torchrun)."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def block(self, n: int) -> range:
        """The contiguous share of n items that this rank handles.

        >>> [list(Dist(r, 2).block(5)) for r in range(2)]
        [[0, 1], [2, 3, 4]]
        """
        return range(self.rank * n // self.world, (self.rank + 1) * n // self.world)

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in rank order (picklable objects; `[obj]` in one process)."""
        if self.world == 1:
            return [obj]
        out: list[Any] = [None] * self.world
        torch.distributed.all_gather_object(out, obj)
        return out

    def sum_grads(self, params: list[torch.nn.Parameter]) -> None:
        """Sum the gradients over ranks (a parameter without one contributes zeros)."""
        if self.world == 1:
            return
        grads = []
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            grads.append(p.grad)
        flat = torch.cat([g.reshape(-1) for g in grads])  # one collective per step
        torch.distributed.all_reduce(flat)
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def any(self, flag: bool) -> bool:
        """True on every rank when `flag` is true on any rank (so all ranks stop at the same step)."""
        if self.world == 1:
            return flag
        t = torch.tensor([int(flag)])
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return bool(t.item())

    def barrier(self) -> None:
        if self.world > 1:
            torch.distributed.barrier()

    def close(self) -> None:
        if self.world > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def merge_update_stats(
    parts: list[tuple[dict[str, float], float, float]], reduce: Mapping[str, Reduce]
) -> dict[str, float]:
    """One step's update statistics over ranks, from each rank's (stats, tokens it ran, sequences it
    ran): losses and row shares add up, the loss's declared statistics merge as `reduce` says (over the
    ranks that ran), grad norm and learning rate are rank 0's (the same on every rank).

    >>> merge_update_stats([({"loss": 1.0, "clip_frac": 0.5, "seq_clip_frac": 0.5, "ratio_min": 0.9,
    ...                       "ratio_max": 1.1, "update_rows_frac": 0.25, "grad_norm": 2.0, "lr": 0.1}, 30.0, 2.0),
    ...                      ({"loss": 0.5, "clip_frac": 0.0, "seq_clip_frac": 0.0, "ratio_min": 1.0,
    ...                        "ratio_max": 1.0, "update_rows_frac": 0.5, "grad_norm": 2.0, "lr": 0.1}, 10.0, 6.0)],
    ...                     {"clip_frac": "token", "seq_clip_frac": "seq", "ratio_min": "min", "ratio_max": "max"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'update_rows_frac': 0.75, 'grad_norm': 2.0, 'lr': 0.1, 'loss': 1.5, 'clip_frac': 0.375, 'seq_clip_frac': 0.125,
     'ratio_min': 0.9, 'ratio_max': 1.1}
    """
    ran = [(st, n, q) for st, n, q in parts if n > 0]
    out = dict(parts[0][0])  # grad_norm and lr are the same on every rank (summed gradients)
    out["update_rows_frac"] = sum(st.get("update_rows_frac", 0.0) for st, _, _ in parts)
    for k in ("loss", *reduce):
        out.pop(k, None)
    if not ran:
        return out
    out["loss"] = sum(st.get("loss", 0.0) for st, _, _ in parts)
    return {**out, **merge_stats(ran, reduce)}


def init_distributed(device: str) -> tuple[Dist, str]:
    """Join the process group that torchrun/accelerate set up in the environment, if any. Returns the
    rank's place and its device (`cuda` becomes `cuda:LOCAL_RANK`)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist(), device
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device.startswith("cuda")
    if cuda:
        device = f"cuda:{local}"
        torch.cuda.set_device(device)
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend="nccl" if cuda else "gloo")
    return Dist(rank, world), device
