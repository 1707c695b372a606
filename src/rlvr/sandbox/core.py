"""The host side of the reward sandbox: `validate` (the four stages), `load` and its call wrapper
`SandboxedReward`, and `check_file` (`rlvr rewards check`). Python-level restriction is not a security
boundary, so every execution of candidate code happens in a jailed process (`rlvr.sandbox.jail`).
The stages, the call wrapper and the threat model: docs/sandbox.md."""

from __future__ import annotations

import functools
import math
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.sandbox.jail import (
    DEFAULT_LIMITS,
    SandboxUnavailable,
    WorkerError,
    WorkerProcess,
    get_backend,
    worker_config,
)
from rlvr.sandbox.probe import probe_batch
from rlvr.sandbox.static import DEFAULT_RANGE, ENTRY, check_entry_name, static_check

__all__ = [
    "RewardRejected",
    "SandboxedReward",
    "Validation",
    "check_file",
    "clean_values",
    "load",
    "validate",
]

DEFAULT_MEMORY_MB = DEFAULT_LIMITS["memory_bytes"] >> 20
LOAD_REPLY_BYTES = 64 << 10
MIN_LOAD_TIMEOUT_S = 5.0  # starting a jailed interpreter is not the candidate's time to spend


def _reply_bytes(n: int) -> int:
    """Largest reply accepted for a batch of n items (a value encodes in well under 64 bytes)."""
    return (64 << 10) + 64 * n


@dataclass(frozen=True)
class Validation:
    """The verdict on a candidate: `stage` is the failing stage ("static", "load", "namespace",
    "probe") or None when accepted; `probe_raw` is what the probe call returned, as decoded by the
    host (plain JSON values), when the probe ran."""

    accepted: bool
    stage: str | None
    reason: str
    probe_raw: list | None


class RewardRejected(ValueError):
    """`load` refused a candidate; `.validation` says at which stage and why."""

    def __init__(self, validation: Validation):
        super().__init__(f"reward rejected at stage {validation.stage!r}: {validation.reason}")
        self.validation = validation


def _describe(v: Any, lo: float, hi: float) -> str | None:
    """Why one decoded item is not a valid reward, or None when it is."""
    if v is None:
        return None
    if type(v) in (int, float):
        if type(v) is int and abs(v) > 1e308:
            return "an integer too large for a float"
        if not math.isfinite(v):
            return f"non-finite value {v}"
        return None if lo <= v <= hi else f"value {v:g} outside RANGE [{lo:g}, {hi:g}]"
    if isinstance(v, bool):
        return "a bool, not a number"
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return f"non-finite value {v}"
    if isinstance(v, dict) and isinstance(v.get("type"), str):
        return f"a {v['type'][:40]}, not a number"
    return "not a number"


def clean_values(raw: Any, n: int, value_range: tuple[float, float]) -> tuple[list[float | None], list[str]]:
    """Decoded worker values -> rewards (None where invalid) and the problems found.

    >>> clean_values([1, None, "nan", 99.0, True], 5, (-10, 10))[0]
    [1.0, None, None, None, None]
    >>> clean_values([1.0], 2, (-10, 10))
    ([None, None], ['returned 1 values for 2 completions'])
    """
    if not isinstance(raw, list):
        return [None] * n, [f"returned {type(raw).__name__}, not a list"]
    if len(raw) != n:
        return [None] * n, [f"returned {len(raw)} values for {n} completions"]
    lo, hi = value_range
    out: list[float | None] = []
    problems: list[str] = []
    for i, v in enumerate(raw):
        why = _describe(v, lo, hi)
        if why:
            problems.append(f"item {i}: {why}")
        out.append(float(v) if v is not None and why is None else None)
    return out, problems


class SandboxedReward:
    """A candidate reward behind a jailed worker, callable as `f(completions, **columns)`; every call
    returns one float or None per completion and never raises (docs/sandbox.md, "The call wrapper").
    `restricted=False` (tests of the OS layer only) gives the module the real builtins and imports.
    """

    def __init__(
        self,
        source: str,
        *,
        timeout_s: float = 10.0,
        memory_mb: int = DEFAULT_MEMORY_MB,
        value_range: tuple[float, float] = DEFAULT_RANGE,
        name: str = "sandboxed_reward",
        unsafe_no_sandbox: bool = False,
        restricted: bool = True,
        function: str = ENTRY,
    ):
        self.source = source
        self.function = check_entry_name(function)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.value_range = value_range
        self.__name__ = name  # TRL logs reward functions by __name__
        self.unsafe_no_sandbox = unsafe_no_sandbox
        self.restricted = restricted
        self.backend = get_backend(unsafe_no_sandbox)
        self.last_error: str | None = None
        self.errors = 0
        self.restarts = 0
        self._lock = threading.Lock()
        self._worker: WorkerProcess | None = None
        self._finalizer: weakref.finalize | None = None
        self._next_id = 0
        self._start()

    # --- worker lifecycle ---------------------------------------------------------------------

    def _start(self) -> None:
        """Start a worker and load the candidate; raise RewardRejected when the module fails."""
        limits = {"memory_bytes": self.memory_mb << 20}
        cfg = worker_config(restricted=self.restricted, limits=limits, entry=self.function)
        load_timeout_s = max(self.timeout_s, MIN_LOAD_TIMEOUT_S)
        try:
            worker = WorkerProcess(self.backend, cfg, load_timeout_s)
            reply = worker.request({"op": "load", "source": self.source}, load_timeout_s, LOAD_REPLY_BYTES)
        except WorkerError as e:
            raise RewardRejected(Validation(False, "load", f"the module did not load: {e}", None)) from e
        if reply.get("ok") is not True:
            worker.close()
            stage = "namespace" if reply.get("stage") == "namespace" else "load"
            raise RewardRejected(Validation(False, stage, str(reply.get("error", "unknown error"))[:500], None))
        self._worker = worker
        self._finalizer = weakref.finalize(self, worker.close)

    def _stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the worker once, even if called again
        self._worker = None
        self._finalizer = None

    @property
    def pid(self) -> int | None:
        """Host pid of the worker's sandbox (bwrap), or None when none is running."""
        return self._worker.pid if self._worker is not None else None

    @property
    def tag(self) -> str | None:
        """A token on the worker's command line, to find its processes."""
        return self._worker.tag if self._worker is not None else None

    def close(self) -> None:
        """End the worker (and everything in its sandbox). The next call would start a new one."""
        with self._lock:
            self._stop()

    def __enter__(self) -> SandboxedReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the configuration, not the process (e.g. for screening workers)."""
        settings = ("timeout_s", "memory_mb", "value_range", "unsafe_no_sandbox", "restricted", "function")
        kw = {k: getattr(self, k) for k in settings}
        return (functools.partial(SandboxedReward, name=self.__name__, **kw), (self.source,))

    # --- calls --------------------------------------------------------------------------------

    def raw_call(self, completions: list[Any], columns: dict[str, Any]) -> tuple[list | None, str | None]:
        """One call as decoded JSON values (what the probe records), or None and why it failed."""
        with self._lock:
            try:
                if self._worker is None or not self._worker.alive():
                    self._stop()
                    self._start()
                    self.restarts += 1
                assert self._worker is not None
                self._next_id += 1
                request = {"op": "call", "id": self._next_id, "completions": list(completions), "kwargs": columns}
                request["cpu_s"] = math.ceil(self.timeout_s)
                reply = self._worker.request(request, self.timeout_s, _reply_bytes(len(completions)))
            except (WorkerError, RewardRejected) as e:
                self._stop()
                return None, str(e)
            if reply.get("id") != self._next_id:
                self._stop()
                return None, "the worker replied out of turn"
            if isinstance(reply.get("cpu"), int | float) and reply["cpu"] > DEFAULT_LIMITS["cpu_s"] / 2:
                self._stop()  # recycle before the lifetime CPU cap kills it mid-call
            if reply.get("ok") is not True:
                return None, str(reply.get("error", "unknown error"))[:500]
            return reply.get("values"), None

    def __call__(self, completions: list[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        self.last_error = None
        if n == 0:
            return []
        raw, error = self.raw_call(completions, kwargs)
        if error is not None:
            values: list[float | None] = [None] * n
            problems = [error]
            self.errors += n
        else:
            values, problems = clean_values(raw, n, self.value_range)
            whole_batch = bool(problems) and not problems[0].startswith("item ")
            self.errors += n if whole_batch else len(problems)
        if problems:
            self.last_error = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        return values


def load(
    source: str,
    *,
    timeout_s: float = 10.0,
    memory_mb: int = DEFAULT_MEMORY_MB,
    name: str = "sandboxed_reward",
    unsafe_no_sandbox: bool = False,
    function: str = ENTRY,
    _skip_checks: bool = False,
) -> SandboxedReward:
    """A `SandboxedReward` for candidate source after stages 1-3 (`RewardRejected` says which failed);
    does not probe: call `validate` first. `_skip_checks` (tests only) skips stages 1 and 3 so that
    only the OS layer stands between the code and the machine."""
    declared = DEFAULT_RANGE
    if not _skip_checks:
        st = static_check(source, function)
        if not st.ok:
            raise RewardRejected(Validation(False, "static", st.reason, None))
        declared = st.range
    return SandboxedReward(
        source,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        value_range=declared,
        name=name,
        unsafe_no_sandbox=unsafe_no_sandbox,
        restricted=not _skip_checks,
        function=function,
    )


def _probe(reward: SandboxedReward) -> Validation:
    completions, columns = probe_batch()
    values_raw, error = reward.raw_call(completions, columns)
    raw = values_raw if isinstance(values_raw, list) else None
    if error is not None:
        return Validation(False, "probe", error, raw)
    values, problems = clean_values(values_raw, len(completions), reward.value_range)
    if problems:
        return Validation(False, "probe", "; ".join(problems[:5]), raw)
    scored = [v for v in values if v is not None]
    if not scored:
        return Validation(False, "probe", "returned None for every probe completion", raw)
    reason = f"scored {len(scored)}/{len(values)} probe completions, values in [{min(scored):g}, {max(scored):g}]"
    return Validation(True, None, reason, raw)


def validate(
    source: str,
    *,
    timeout_s: float = 10.0,
    memory_mb: int = DEFAULT_MEMORY_MB,
    unsafe_no_sandbox: bool = False,
    function: str = ENTRY,
) -> Validation:
    """Run the four stages on candidate source; never raises for a bad candidate, only
    `SandboxUnavailable` (no isolation, and not `unsafe_no_sandbox`) and ValueError (`function` is not
    an identifier)."""
    try:
        reward = load(
            source,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            name="candidate",
            unsafe_no_sandbox=unsafe_no_sandbox,
            function=function,
        )
    except RewardRejected as e:
        return e.validation
    with reward:
        return _probe(reward)


def check_file(
    path: str | Path,
    *,
    timeout_s: float = 10.0,
    unsafe_no_sandbox: bool = False,
    console: Any = None,
    function: str = ENTRY,
) -> int:
    """`rlvr rewards check FILE.py`: validate a reward file (entry point `function`) and print the
    verdict and probe values. Exit codes: 0 accepted, 1 rejected, 2 unreadable file, 3 no sandbox."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rlvr.textfile import TextFileError, read_text

    errors = console or Console(stderr=True)  # bad input goes to stderr, the verdict to stdout
    console = console or Console()
    try:
        source = read_text(Path(path))  # a bad byte is named by line and column
    except TextFileError as e:
        errors.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        return 2
    try:
        result = validate(source, timeout_s=timeout_s, unsafe_no_sandbox=unsafe_no_sandbox, function=function)
    except SandboxUnavailable as e:
        console.print(f"[red]no sandbox:[/red] {escape(str(e))}", soft_wrap=True)
        return 3
    if result.probe_raw is not None:
        completions, columns = probe_batch()
        table = Table("#", "completion", "gold", "returned", title="probe")
        raw = result.probe_raw
        for i, (c, gold) in enumerate(zip(completions, columns["answer"], strict=True)):
            shown = c if len(c) <= 50 else c[:47] + "..."
            value = repr(raw[i]) if i < len(raw) else "-"
            table.add_row(str(i), escape(repr(shown)), gold, escape(value))
        console.print(table)
    if result.accepted:
        console.print(f"[green]accepted[/green]: {escape(result.reason)}", soft_wrap=True)
        return 0
    reason = " ".join(result.reason.split())  # one line, whatever the sandbox's stderr held
    console.print(
        f"{escape(str(path))}: [red]rejected[/red] at stage [bold]{result.stage}[/bold]: {escape(reason)}",
        soft_wrap=True,
    )
    return 1
