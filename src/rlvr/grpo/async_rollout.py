"""Asynchronous rollouts (`rollout.async: true`): the batch for step t+1 is drawn while step t's update runs.

A worker thread holds its own copy of the policy (`copy.deepcopy`: the whole model, or the base model with
its LoRA adapters, which the fast decoder merges when it samples) and draws the batches in order; after each
update the trainer publishes its trained parameters (a detached copy, `publish`) and the worker loads them
before the next batch that needs them. Batch b is drawn from policy version `max(0, b - k)` (version v: the
weights after v updates; k = `rollout.max_staleness`), exactly: the schedule never depends on timing, so an
async run is reproducible from its seed, a resumed one equals the uninterrupted one, and k = 0 is the
synchronous trainer bit for bit (the same draws from the same weights in the same order, one batch at a time).
With k = 1 this is verl's one-step-off pipeline: batch t+1 is drawn from the weights before update t.

Every batch records the version that drew it (`Rollout.policy_version`). A stale batch (drawn from an older
version than the one it updates) also carries the behaviour policy's log-probs of its tokens
(`Rollout.rollout_logp`, computed by the worker with the drawing weights, teacher-forced as the trainer
computes its own), so the loss weighs it with the importance correction built for vLLM's mismatch
(`rlvr.grpo.correction`, `objective_overrides.rollout_correction`); a batch of staleness 0 carries none, and
its loss is the synchronous one. A thread, not a process: torch releases the GIL in its kernels, the worker
needs no second copy of the data pipeline, and its reward calls run as the trainer's would (docs/scaling.md
has the measured overlap on CPU).

Checkpoints: `drain` waits for the batches already submitted (all drawn from versions older than the
checkpoint's weights, which a resumed run no longer has) and `state` returns them with the schedule's
position; the trainer saves them beside the sampling RNG, and a resumed run starts with them queued.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.grpo.rollout import Rollout

__all__ = ["AsyncRollouts", "Intervals", "behaviour_logprobs", "overlap_seconds"]

Draw = Callable[[Any], Rollout]  # model -> one batch, drawn from that model's weights
Behaviour = Callable[[Any, Rollout], list[list[float]]]  # model, batch -> each completion's per-token log-probs


def behaviour_logprobs(model, ro: Rollout, micro_batches, logits, all_rows: bool = True) -> list[list[float]]:
    """Each completion's per-token log-probs under `model` (the behaviour policy), teacher-forced in the
    trainer's own micro-batches (`micro_batches(ro, rows) -> [(idx (mb,), batch)]`) and logits
    (`logits(model, batch) -> (mb, Lc, V)`, temperature applied), so that the trainer's and the behaviour
    log-probs differ only by the weights. `all_rows=False`: only the rows with a non-zero advantage (the
    only ones an update without a KL term runs); the others get []. -> (P*G,) lists of len(tokens[i])"""
    from rlvr.grpo.objective import token_logprobs

    out: list[list[float]] = [[] for _ in ro.tokens]
    rows = [i for i in range(len(ro.tokens)) if all_rows or float(ro.advantages[i]) != 0.0]
    with torch.no_grad():
        for idx, b in micro_batches(ro, rows) if rows else []:
            lp = token_logprobs(logits(model, b), b.targets).cpu()  # (mb, Lc)
            for r, i in enumerate(idx.tolist()):
                out[i] = lp[r, : len(ro.tokens[i])].tolist()
    return out


def overlap_seconds(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Seconds of `[lo, hi]` covered by the (disjoint) `intervals`.

    >>> overlap_seconds([(0.0, 2.0), (3.0, 5.0)], 1.0, 4.0)
    2.0
    """
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in intervals)


class Intervals:
    """When the worker was busy drawing: closed intervals and the open one (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: list[tuple[float, float]] = []
        self._open: float | None = None

    def start(self) -> None:
        with self._lock:
            self._open = time.perf_counter()

    def stop(self) -> None:
        with self._lock:
            if self._open is not None:
                self._done.append((self._open, time.perf_counter()))
            self._open = None

    def busy(self, lo: float, hi: float) -> float:
        """Busy seconds within `[lo, hi]`; intervals that ended before `lo` are forgotten."""
        with self._lock:
            spans = [*self._done, *([(self._open, hi)] if self._open is not None else [])]
            self._done = [s for s in self._done if s[1] > lo]
        return overlap_seconds(spans, lo, hi)


@dataclass
class _Batch:
    index: int  # the update it feeds
    version: int  # the policy version that drew it
    rollout: Rollout


class AsyncRollouts:
    """The rollout worker: batch b is drawn from version `max(0, b - staleness)` in a thread of its own.

    `draw(model)` samples and scores one batch (it owns the data cursor and the sampling RNG: only the
    worker calls it while batches are in flight); `behaviour(model, ro)` gives a stale batch's behaviour
    log-probs (None: not needed, e.g. rejection-sampling fine-tuning). `version` is the policy's version
    now (the trainer's step; > 0 on resume); `state` a checkpoint's `state()`. `last` bounds the batches
    drawn (the run's steps)."""

    def __init__(
        self,
        policy,
        draw: Draw,
        behaviour: Behaviour | None,
        *,
        staleness: int,
        version: int,
        last: int,
        threads: int | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        self.draw, self.behaviour, self.k, self.last = draw, behaviour, staleness, last
        self.model = copy.deepcopy(policy).eval()  # the worker's own weights (eval: no dropout, no RNG drawn)
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.names = [n for n, p in policy.named_parameters() if p.requires_grad]  # what an update changes
        self.worker_version = version
        self._snapshots: dict[int, dict[str, torch.Tensor]] = {}
        self._lock = threading.Lock()
        device = next(policy.parameters()).device
        self.cuda = device.type == "cuda"
        if self.cuda:  # the copy is done before the worker's stream reads it
            torch.cuda.synchronize(device)
        self.pool = ThreadPoolExecutor(1, "rlvr-rollout", initializer=_init_worker, initargs=(threads, device))
        self.busy = Intervals()
        self.futures: dict[int, Future[_Batch]] = {}
        self.next = version  # the next batch to submit
        for b in (state or {}).get("pending", []):  # saved by a checkpoint: drawn from weights gone now
            done: Future[_Batch] = Future()
            done.set_result(b)
            self.futures[b.index] = done
            self.next = max(self.next, b.index + 1)
        self.next = (state or {}).get("next", self.next)

    # ------------------------------------------------------------------ trainer side
    def get(self, step: int) -> tuple[Rollout, float]:
        """The batch for update `step` (the policy is at version `step`), and the seconds the trainer
        waited for it. Submits every batch the schedule allows first (those drawn from versions <= step)."""
        self._submit(step)
        t0 = time.perf_counter()
        batch = self.futures.pop(step).result()  # a worker's exception is raised here
        ro = batch.rollout
        ro.policy_version = batch.version
        return ro, time.perf_counter() - t0

    def publish(self, policy, version: int) -> float:
        """After an update: a detached copy of the trained parameters, version `version`, for the worker
        to load before its next batch that needs it; returns the seconds it took."""
        t0 = time.perf_counter()
        if version + self.k < self.last:  # batch version + k draws from it; none after the last step
            params = dict(policy.named_parameters())
            snap = {n: params[n].detach().clone() for n in self.names}
            if self.cuda:  # the worker reads the copy on its own stream
                torch.cuda.current_stream().synchronize()
            with self._lock:
                self._snapshots[version] = snap
            self._submit(version)
        return time.perf_counter() - t0

    def drain(self) -> None:
        """Wait until every submitted batch is drawn (the sampling RNG and the data cursor then stand
        between two batches: what a checkpoint saves)."""
        for f in list(self.futures.values()):
            f.result()

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps: the drawn batches not yet used, and the next batch to draw."""
        self.drain()
        return {"pending": [f.result() for _, f in sorted(self.futures.items())], "next": self.next}

    def close(self) -> None:
        """Stop the worker: batches not started are dropped; one being drawn finishes first."""
        for f in self.futures.values():
            f.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, version: int) -> None:
        while self.next < self.last and max(0, self.next - self.k) <= version:
            b = self.next
            self.futures[b] = self.pool.submit(self._draw, b, max(0, b - self.k))
            self.next += 1

    # ------------------------------------------------------------------ worker side
    def _draw(self, index: int, version: int) -> _Batch:
        self.busy.start()
        try:
            self._load(version)
            ro = self.draw(self.model)
            if self.behaviour is not None and index > version:  # stale: the loss needs the behaviour log-probs
                ro.rollout_logp = self.behaviour(self.model, ro)
            return _Batch(index, version, ro)
        finally:
            self.busy.stop()

    def _load(self, version: int) -> None:
        """Make the worker's weights those of `version` (published by the trainer, or the ones it has)."""
        if version == self.worker_version:
            return
        with self._lock:
            snap = self._snapshots.pop(version)
            for v in [v for v in self._snapshots if v < version]:
                del self._snapshots[v]
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for n, t in snap.items():
                params[n].copy_(t)
        self.worker_version = version


def _init_worker(n: int | None, device: torch.device) -> None:
    if n:  # the trainer's intra-op threads: the same kernels split the same way (bitwise equal results)
        torch.set_num_threads(n)
    if device.type == "cuda":  # a stream of its own (the current stream is per thread), or its kernels
        torch.cuda.set_stream(torch.cuda.Stream(device))  # would queue behind the update's on the default one
