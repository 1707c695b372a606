"""Score completions with the configured rewards (`RewardRunner`) without letting any reward stop or
poison training: a reward that raises, times out, or returns the wrong length or a non-finite value gives
`None` for the items it failed on, counted in `reward/<name>/errors`; the total is the weighted sum, NaN
where any part is `None` (left out of the group statistics). docs/rewards.md says where each reward runs.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.rewards import RewardSpec, build_reward
from rlvr.rewards.combine import weighted_sum
from rlvr.rewards.user import RewardLoadError, UserReward, file_sha256

__all__ = ["RewardRunner", "Scored", "RewardLoadError"]


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


def _build(spec: RewardSpec, timeout_s: float) -> Callable[..., Any]:
    """The callable a spec names: a built-in, a stoppable worker for a file, or the OS sandbox."""
    if spec.file is None:
        return build_reward(spec)
    if not spec.sandbox:
        return UserReward(spec.file, spec.function, timeout_s=timeout_s)
    from rlvr.sandbox import RewardRejected, SandboxUnavailable, load

    try:
        return load(
            Path(spec.file).read_text(encoding="utf-8"), function=spec.function, timeout_s=timeout_s, name=spec.label
        )
    except RewardRejected as e:
        v = e.validation
        raise RewardLoadError(f"{spec.file}: rejected by the sandbox at {v.stage}: {v.reason}") from None
    except SandboxUnavailable as e:
        raise RewardLoadError(f"{spec.file}: sandbox: true needs the OS sandbox: {e}") from None
    except UnicodeDecodeError:
        raise RewardLoadError(f"{spec.file}: not UTF-8 text") from None


def _isolated(fn: Any) -> bool:
    """A callable that runs its calls in a process of its own, with its own timeout."""
    return isinstance(fn, UserReward) or type(fn).__name__ == "SandboxedReward"


class _ThreadCall:
    """Call an in-process callable with a timeout in a daemon thread (which cannot be stopped)."""

    def __init__(self, fn: Callable[..., Any], name: str, timeout_s: float) -> None:
        self.fn, self.name, self.timeout_s, self.warned = fn, name, timeout_s, False

    def __call__(self, completions: list[Any], **columns: Any) -> Any:
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = self.fn(completions, **columns)
            except Exception as e:  # noqa: BLE001 - reported as an error count
                box["error"] = e

        t = threading.Thread(target=run, daemon=True, name=f"reward:{self.name}")
        t.start()
        t.join(self.timeout_s)
        if t.is_alive():
            if not self.warned:
                warnings.warn(
                    f"reward {self.name!r} ran past its {self.timeout_s:g} s timeout; an in-process "
                    "callable cannot be stopped and keeps running: give it as a reward file "
                    "(rewards: [{file: ..., function: ...}]) to run it in a stoppable worker",
                    stacklevel=2,
                )
                self.warned = True
            raise TimeoutError(self.name)
        if "error" in box:
            raise box["error"]
        return box.get("value")


class RewardRunner:
    """Calls each configured reward with TRL's convention and combines them by weight.

    Building it starts the workers of file rewards, so a missing file or function is a
    `RewardLoadError` (one line) before a run folder is touched.
    """

    def __init__(self, specs: Sequence[RewardSpec], timeout_s: float = 30.0, extra: dict[str, Any] | None = None):
        if not specs:
            raise ValueError("at least one reward is needed")
        self.specs = list(specs)
        self.names = [s.label for s in self.specs] + list((extra or {}).keys())
        self.weights = [s.weight for s in self.specs] + [1.0] * len(extra or {})
        if len(set(self.names)) != len(self.names):
            self.names = [f"{n}_{i}" for i, n in enumerate(self.names)]
        self.timeout_s = timeout_s
        self.fns: list[Callable[..., Any]] = []
        try:
            for s in self.specs:
                self.fns.append(_build(s, timeout_s))
        except BaseException:
            self.close()
            raise
        for name, fn in (extra or {}).items():
            self.fns.append(fn if _isolated(fn) else _ThreadCall(fn, name, timeout_s))
        # what reproduces the run: the content of every reward file
        self.files = {s.file: file_sha256(s.file) for s in self.specs if s.file is not None}

    def score(self, completions: list[Any], columns: dict[str, list[Any]]) -> Scored:
        t0 = time.perf_counter()
        n = len(completions)
        values: dict[str, list[float | None]] = {}
        errors: dict[str, int] = {}
        for name, fn in zip(self.names, self.fns, strict=True):
            try:
                vals, bad = _clean(fn(completions, **columns), n)
            except Exception:  # raised, timed out, or its worker died: the whole batch is unscorable
                vals, bad = [None] * n, n
            values[name], errors[name] = vals, bad
        summed = weighted_sum([values[name] for name in self.names], self.weights)
        total = [math.nan if v is None else v for v in summed]
        return Scored(values, total, errors, time.perf_counter() - t0)

    def close(self) -> None:
        """Stop the workers of file rewards (extra callables belong to the caller)."""
        for fn in self.fns[: len(self.specs)]:
            close = getattr(fn, "close", None)
            if close is not None:
                close()
