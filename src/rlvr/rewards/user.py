"""User reward functions from the user's own Python file (`rewards: [{file: my_rewards.py, function:
brevity}]`): `UserReward` runs each in a "spawn" worker process of its own, which a call past its timeout
kills (docs/rewards.md). This runs trusted code: code you did not write goes through the OS sandbox
(`sandbox: true`, `rlvr.sandbox`)."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import multiprocessing as mp
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

__all__ = ["RewardCallError", "RewardLoadError", "UserReward", "file_sha256"]

START_TIMEOUT_S = 60.0  # importing the user's file (it may import numpy, sympy, ...)


class RewardLoadError(ValueError):
    """The reward file cannot be used: missing, not importable, or without the function. One line."""


class RewardCallError(RuntimeError):
    """A call failed: it raised in the worker, ran past its timeout, or the worker died."""


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _import_function(path: str, function: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"rlvr_user_reward_{Path(path).stem}", path)
    if spec is None or spec.loader is None:
        raise RewardLoadError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(path).parent))  # the file may import its neighbours
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise RewardLoadError(f"{path}: no function {function!r} in it")
    if (why := convention_error(fn)) is not None:
        raise RewardLoadError(
            f"{path}: function {function!r} {why}; a reward takes TRL's convention {function}(completions, **columns)"
        )
    return fn


def convention_error(fn: Any) -> str | None:
    """Why `fn` cannot be called as `fn(completions, **columns)` (TRL's reward convention: the
    completions first, the dataset columns as keywords), or None when it can.

    >>> convention_error(lambda completions, **kw: [])
    >>> convention_error(lambda: [])
    'takes ()'
    >>> convention_error(lambda completions: [])
    'takes (completions), no **columns'
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable: nothing to read, so nothing to refuse
        return None
    params = list(sig.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    takes_first = bool(params) and params[0].kind in (*positional, inspect.Parameter.VAR_POSITIONAL)
    if not takes_first:
        return f"takes {sig}"
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return f"takes {sig}, no **columns"
    return None


def _last_line(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = next((f"{Path(f.filename).name}:{f.lineno}: " for f in reversed(frames)), "")
    return f"{where}{type(exc).__name__}: {exc}"


def _serve(conn: Connection, path: str, function: str) -> None:
    """The worker: import once, then answer `(completions, columns)` requests until the pipe closes."""
    try:
        fn = _import_function(path, function)
    except BaseException as e:  # noqa: BLE001 - everything goes back to the parent as one line
        conn.send(("error", str(e) if isinstance(e, RewardLoadError) else f"{path}: cannot import: {_last_line(e)}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            completions, columns = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", fn(completions, **columns)))
        except BaseException as e:  # noqa: BLE001
            conn.send(("error", _last_line(e)))


class UserReward:
    """`fn(completions, **columns)` of `path`, called in a stoppable worker process. Construction waits
    until the file is imported, so a missing file or function is a `RewardLoadError` before training."""

    def __init__(self, path: str | Path, function: str = "reward", timeout_s: float = 30.0) -> None:
        self.path, self.function, self.timeout_s = str(Path(path).resolve()), function, timeout_s
        if not Path(self.path).is_file():
            raise RewardLoadError(f"{path}: no such reward file")
        self.__name__ = function
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=_serve, args=(child, self.path, self.function), daemon=True, name=f"reward:{self.function}"
        )
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        if not parent.poll(START_TIMEOUT_S):
            self.close()
            raise RewardLoadError(f"{self.path}: importing it took over {START_TIMEOUT_S:.0f} s")
        try:
            kind, value = parent.recv()
        except EOFError:
            self.close()
            raise RewardLoadError(f"{self.path}: the reward worker exited while importing it") from None
        if kind != "ready":
            self.close()
            raise RewardLoadError(value)

    def __call__(self, completions: list[Any], **columns: Any) -> Any:
        if self._proc is None or not self._proc.is_alive():
            self.restarts += 1
            self._start()
        assert self._conn is not None
        try:
            self._conn.send((list(completions), columns))
            ready = self._conn.poll(self.timeout_s)
            kind, value = self._conn.recv() if ready else ("timeout", None)
        except (EOFError, OSError, BrokenPipeError):
            kind, value = "died", None
        if kind == "ok":
            return value
        if kind in ("timeout", "died"):
            self.close()  # the next call starts a fresh worker
            what = f"ran past its {self.timeout_s:g} s timeout" if kind == "timeout" else "the worker died"
            raise RewardCallError(f"{self.function} ({self.path}): {what}")
        raise RewardCallError(f"{self.function} ({self.path}): {value}")

    def close(self) -> None:
        """Stop the worker (kill: it may be stuck in the user's code)."""
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=5)
        self._proc, self._conn = None, None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:
            pass
