"""A Python interpreter as a tool: model-written code runs in rlvr's OS jail (`rlvr.sandbox.jail`),
never in the trainer's process. Usage, limits and failures: docs/environments.md ("The Python tool").

With `persistent=True` (the default) the names a snippet defines stay for the next call of the same
conversation, as in a notebook; with False every call gets a fresh interpreter.
"""

from __future__ import annotations

import itertools
from typing import Any

from rlvr.sandbox.jail import WorkerError, WorkerProcess, get_backend, worker_config

__all__ = ["PythonTool"]

_START_TIMEOUT_S = 15.0


class PythonTool:
    """A jailed Python interpreter; `run(code) -> text` (what it printed, then any error)."""

    def __init__(
        self,
        *,
        timeout_s: float = 5.0,
        max_chars: int = 2000,
        persistent: bool = True,
        memory_bytes: int = 512 << 20,
        unsafe_no_sandbox: bool = False,
    ) -> None:
        self.backend = get_backend(unsafe_no_sandbox)  # SandboxUnavailable here, before any code runs
        self.timeout_s, self.max_chars, self.persistent = timeout_s, max_chars, persistent
        self.limits = {"memory_bytes": memory_bytes, "cpu_s": max(1, int(timeout_s * 60))}
        self._worker: WorkerProcess | None = None
        self._ids = itertools.count()

    def _start(self) -> WorkerProcess:
        cfg = worker_config(restricted=False, limits=self.limits)
        return WorkerProcess(self.backend, cfg, _START_TIMEOUT_S)

    def run(self, code: str) -> str:
        """Run `code`; the text the model reads back."""
        if self._worker is None or not self._worker.alive() or not self.persistent:
            self.close()
            self._worker = self._start()
        msg: dict[str, Any] = {"op": "exec", "id": next(self._ids), "code": code}
        msg.update(cpu_s=self.timeout_s, max_chars=self.max_chars)
        try:
            reply = self._worker.request(msg, self.timeout_s, max_bytes=4 * self.max_chars + 4096)
        except WorkerError as e:
            self._worker = None  # killed with its sandbox; the next call starts a fresh interpreter
            if "timed out" in str(e):
                return f"Error: the code ran past {self.timeout_s:g} s and was stopped; the interpreter was restarted"
            return f"Error: the interpreter stopped ({e}); it was restarted"
        out = str(reply.get("stdout") or "")
        err = reply.get("error")
        return (out + (f"Error: {err}" if err else "")) or "(no output)"

    __call__ = run

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def __del__(self) -> None:  # a conversation's interpreter goes with it
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
