"""Interruption as a checkpoint, not a loss (docs/outputs.md): a SIGTERM or a Ctrl-C asks a long command
to stop at the end of its current unit, save, and exit 143 or 130 with one line saying how to resume:

    with StopRequest() as stop:
        for step in ...:
            work()
            if stop.signum is not None:
                save(); raise Interrupted(stop.signum, f"step {step}", "rlvr train --resume RUN")

Handlers are installed only in the main thread (Python's rule); elsewhere the request never fires.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["Interrupted", "StopRequest", "exit_code"]

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_code(signum: int) -> int:
    """The shell's status for a process ended by `signum`: 143 for SIGTERM, 130 for SIGINT."""
    return 128 + signum


class Interrupted(BaseException):
    """A command stopped cleanly on a signal: `where` it stopped and the command that resumes it.

    A BaseException, like KeyboardInterrupt, so that code which turns a failed unit into a result
    (`except Exception`) lets a stop through."""

    def __init__(self, signum: int, where: str, resume: str | None, how: str = "resume") -> None:
        self.signum, self.where, self.resume = signum, where, resume
        name = signal.Signals(signum).name
        then = f"; {how} with: {resume}" if resume else ""
        super().__init__(f"interrupted by {name} at {where}{then}")

    @property
    def code(self) -> int:
        return exit_code(self.signum)


class StopRequest:
    """Catches SIGTERM and SIGINT while active: the first sets `signum` (the work checks it at its
    next boundary) or, with `where` given, raises `Interrupted(signum, where, resume)` at once (work
    with no boundary to wait for: the unit is abandoned); a second ends the process with 128 + signum.
    Nested requests: the innermost handles the signal; leaving it restores the outer one."""

    def __init__(self, where: str | None = None, resume: str | None = None, how: str = "resume") -> None:
        self.signum: int | None = None
        self.where, self.resume, self.how = where, resume, how
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            print(f"{signal.Signals(signum).name} again: exiting now; the last checkpoint stays", file=sys.stderr)
            os._exit(exit_code(signum))
        self.signum = signum
        if self.where is not None:
            raise Interrupted(signum, self.where, self.resume, self.how)
        name = signal.Signals(signum).name
        print(f"{name}: stopping after the current unit (send it again to exit at once)", file=sys.stderr, flush=True)

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for s in _SIGNALS:
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old.clear()
