"""Score completions with the configured rewards without letting any reward stop or poison training.

A reward that raises, runs past its timeout, returns the wrong length, or returns NaN/inf/non-numbers
gives `None` for the items it failed on (the whole batch when the call itself failed), and
`reward/<name>/errors` counts it. The total reward of an item is the weighted sum of its rewards,
`None` (NaN in the tensor) when any of them is `None`; NaN rewards are left out of the group
statistics by `objective.group_advantages` and get advantage 0.

Timeouts run the reward in a worker thread: a Python function cannot be killed from outside its
process, so a hung in-process reward is abandoned (the thread keeps running) and training goes on.
Untrusted reward code (reward search) runs in an OS sandbox in its own process instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from rlvr.rewards import RewardSpec, build_reward

__all__ = ["RewardRunner", "Scored"]


@dataclass
class Scored:
    """Rewards for one batch: per reward `values[name]` (None where unscorable) and the total."""

    values: dict[str, list[float | None]]
    total: list[float]  # NaN where unscorable
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _clean(raw: Any, n: int) -> tuple[list[float | None], int]:
    """Validate a reward's return value; returns the values and the number of bad items."""
    if not isinstance(raw, list | tuple) or len(raw) != n:
        return [None] * n, n
    out: list[float | None] = []
    bad = 0
    for v in raw:
        if v is None:
            out.append(None)
        elif isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            out.append(None)
            bad += 1
        else:
            out.append(float(v))
    return out, bad


class RewardRunner:
    """Calls each configured reward with TRL's convention and combines them by weight."""

    def __init__(self, specs: Sequence[RewardSpec], timeout_s: float = 30.0, extra: dict[str, Any] | None = None):
        if not specs:
            raise ValueError("at least one reward is needed")
        self.specs = list(specs)
        self.fns = [build_reward(s) for s in self.specs] + list((extra or {}).values())
        self.names = [s.name for s in self.specs] + list((extra or {}).keys())
        self.weights = [s.weight for s in self.specs] + [1.0] * len(extra or {})
        if len(set(self.names)) != len(self.names):
            self.names = [f"{n}_{i}" for i, n in enumerate(self.names)]
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward")

    def _call(self, fn, completions: list[str], columns: dict[str, list[Any]]) -> tuple[Any, bool]:
        future = self._pool.submit(fn, completions, **columns)
        try:
            return future.result(timeout=self.timeout_s), True
        except FutureTimeout:
            # abandon the hung call; a fresh worker serves the next reward
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward")
            return None, False
        except Exception:
            return None, False

    def score(self, completions: list[Any], columns: dict[str, list[Any]]) -> Scored:
        t0 = time.perf_counter()
        n = len(completions)
        values: dict[str, list[float | None]] = {}
        errors: dict[str, int] = {}
        for name, fn in zip(self.names, self.fns, strict=True):
            raw, ok = self._call(fn, completions, columns)
            vals: list[float | None] = [None for _ in range(n)]
            bad = n
            if ok:
                vals, bad = _clean(raw, n)
            values[name], errors[name] = vals, bad
        total: list[float] = []
        for i in range(n):
            parts = [values[name][i] for name in self.names]
            present = [p for p in parts if p is not None]
            if len(present) < len(parts):
                total.append(math.nan)
            else:
                total.append(sum(w * p for w, p in zip(self.weights, present, strict=True)))
        return Scored(values, total, errors, time.perf_counter() - t0)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
