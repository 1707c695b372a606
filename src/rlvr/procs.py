"""Child processes with a hard wall-clock deadline: the one mechanism behind every piece of work that
must not outlive its time (the math verifier's slow path, the reward sandbox's jailed workers, the code
harness).

A `LineProcess` is a child that answers one JSON line per request over pipes. Every read and write waits
with `select.poll` against a deadline; at the deadline, or on any failure (the child exited, wrote too
much, or wrote something that is not one JSON object), its whole process group is killed with SIGKILL and
the call raises `WorkerTimeout` or `WorkerError`. Nothing here uses signals in the caller, so the same
call behaves the same from the main thread, another thread, asyncio (in an executor, or blocking) and a
process pool's worker.

A `WorkerPool` keeps such children started ahead of the calls (their interpreter start and imports are
paid once, not per call), hands one to each caller (thread-safe), replaces a killed one at once, and
starts afresh after a fork (a child process never uses its parent's workers).

`python -m rlvr.procs MODULE...` is the plain worker for trusted rlvr functions: it imports the MODULEs,
then answers `{"fn": "rlvr.x.y:name", "args": [...], "kwargs": {...}}` with `{"ok": true, "value": ...}`
(a dataclass as its fields) or `{"ok": false, "error": "..."}`. docs/architecture.md ("Deadlines").
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["LineProcess", "WorkerError", "WorkerPool", "WorkerTimeout", "python_worker_argv", "serve"]

GRACE_S = 0.05  # the least time a request is given, so a call at its deadline still writes once


class WorkerError(Exception):
    """A call to a worker failed: timeout, crash or unreadable output. The worker is gone."""


class WorkerTimeout(WorkerError):
    """The worker did not answer by the deadline; its process group was killed."""


def _signal_name(rc: int | None) -> str:
    if rc is None:
        return "still running"
    if rc < 0:
        return f"killed by {signal.Signals(-rc).name}"
    if rc > 128 and rc - 128 in signal.Signals._value2member_map_:
        return f"killed by {signal.Signals(rc - 128).name}"
    return f"exit status {rc}"


class LineProcess:
    """One child answering JSON lines: `request` writes a line and reads the reply under a deadline.

    `default` encodes what JSON cannot (as `json.dumps(default=)`). Any failure kills the child's
    process group and raises `WorkerError` (`WorkerTimeout` at the deadline); the owner starts a fresh
    one for the next call."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        pass_fds: Sequence[int] = (),
        default: Callable[[Any], Any] | None = None,
        timeout_s: float = 0.0,
    ):
        self.timeout_s = timeout_s
        self._default = default
        try:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=tuple(pass_fds),
                start_new_session=True,  # its own process group: one killpg ends the whole tree
                env=env,
                cwd=cwd,
            )
        except OSError as e:
            raise WorkerError(f"cannot start the worker: {e}") from e
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._in, self._out, self._err = self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.proc.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._buf = b""
        self._err_tail = b""  # the last of what the child wrote to stderr, for the error message

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _fail(self, why: str, kind: type[WorkerError] = WorkerError) -> WorkerError:
        exited = self.proc.poll() is not None
        self.kill()
        detail = ""
        if exited:
            detail = f" ({_signal_name(self.proc.returncode)})"
            self._drain_stderr()
            err = self._err_tail.decode(errors="replace").strip()
            if err:
                detail += f": {err.splitlines()[-1][:300]}"
        self._close_pipes()
        return kind(why + detail)

    def _close_pipes(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None and not f.closed:
                try:
                    f.close()
                except OSError:
                    pass

    def _drain_stderr(self) -> None:
        """Keep the child's stderr pipe from filling (a child blocked on a full pipe never answers)."""
        try:
            while chunk := os.read(self._err, 65536):
                self._err_tail = (self._err_tail + chunk)[-2000:]
        except (BlockingIOError, OSError):
            pass

    def _wait(self, fd: int, event: int, deadline: float) -> None:
        poller = select.poll()
        poller.register(fd, event | select.POLLHUP | select.POLLERR)
        poller.register(self._err, select.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fail(f"timed out after {self.timeout_s:g} s", WorkerTimeout)
            ready = dict(poller.poll(remaining * 1000))
            if self._err in ready:
                self._drain_stderr()
                if ready[self._err] & (select.POLLHUP | select.POLLERR) and fd not in ready:
                    poller.unregister(self._err)
            if fd in ready:
                return

    def write(self, obj: dict[str, Any], deadline: float) -> None:
        data = (json.dumps(obj, default=self._default) + "\n").encode()
        while data:
            self._wait(self._in, select.POLLOUT, deadline)
            try:
                data = data[os.write(self._in, data) :]
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError) as e:
                raise self._fail("the worker exited") from e

    def read(self, deadline: float, max_bytes: int) -> dict[str, Any]:
        while b"\n" not in self._buf:
            self._wait(self._out, select.POLLIN, deadline)
            try:
                chunk = os.read(self._out, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                try:
                    self.proc.wait(timeout=0.5)  # let the exit status land
                except subprocess.TimeoutExpired:
                    pass
                raise self._fail("the worker exited")
            self._buf += chunk
            if len(self._buf) > max_bytes:
                raise self._fail(f"the worker wrote more than {max_bytes} bytes")
        line, _, rest = self._buf.partition(b"\n")
        self._buf = b""
        if rest:
            raise self._fail("the worker wrote more than one reply")
        try:
            reply = json.loads(line, parse_constant=str)
        except (ValueError, RecursionError) as e:
            raise self._fail("the worker wrote something that is not a JSON reply") from e
        if not isinstance(reply, dict):
            raise self._fail("the worker wrote something that is not a JSON object")
        return reply

    def request(self, obj: dict[str, Any], timeout_s: float, max_bytes: int) -> dict[str, Any]:
        self.timeout_s = timeout_s
        deadline = time.monotonic() + max(timeout_s, GRACE_S)
        self.write(obj, deadline)
        return self.read(deadline, max_bytes)

    def kill(self) -> None:
        """Kill the child's process group and reap the child."""
        if self.proc.returncode is None:  # once reaped, the pid (and group id) may be reused
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        """End the worker (it keeps no state worth a graceful exit)."""
        self.kill()
        self._close_pipes()


class WorkerPool:
    """Up to `size` workers started by `start()` (a `LineProcess` factory) ahead of the calls.

    `request(obj, timeout_s)` takes an idle worker (waiting for one counts against the deadline), sends
    `obj` and returns the reply; a worker that failed is replaced by a fresh one at once, so the next
    call does not pay its start. Safe from any thread; after a fork the child builds its own workers."""

    def __init__(self, start: Callable[[], LineProcess], *, size: int = 1, max_reply_bytes: int = 1 << 20):
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._start, self.size, self.max_reply_bytes = start, size, max_reply_bytes
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._idle: queue.LifoQueue[LineProcess] = queue.LifoQueue()
        self._started = 0

    def _check_fork(self) -> None:
        if self._pid != os.getpid():  # a forked child: the parent's workers are not ours to use or kill
            self._reset()

    def warm(self) -> None:
        """Start the workers now (their start-up overlaps whatever the caller does next)."""
        with self._lock:
            self._check_fork()
            while self._started < self.size:
                self._idle.put(self._start())
                self._started += 1

    def _take(self, deadline: float) -> LineProcess:
        with self._lock:
            self._check_fork()
            if self._idle.empty() and self._started < self.size:
                self._started += 1
                try:
                    return self._start()
                except BaseException:
                    self._started -= 1
                    raise
        try:
            return self._idle.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise WorkerTimeout("no worker was free before the deadline") from None

    def _give_back(self, worker: LineProcess, pid: int) -> None:
        with self._lock:
            if pid != os.getpid() or self._pid != pid:
                return
            if worker.alive():
                self._idle.put(worker)
                return
            try:
                self._idle.put(self._start())  # replace the dead one now, so its start-up overlaps
            except WorkerError:
                self._started -= 1

    def request(self, obj: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + max(timeout_s, GRACE_S)
        pid = os.getpid()
        worker = self._take(deadline)
        try:
            return worker.request(obj, max(deadline - time.monotonic(), 0.0), self.max_reply_bytes)
        finally:
            self._give_back(worker, pid)

    def close(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                while not self._idle.empty():
                    self._idle.get_nowait().close()
            self._reset()


def python_worker_argv(preload: Sequence[str] = ()) -> list[str]:
    """The command line of a plain worker (`serve`) in this interpreter, importing `preload` first."""
    return [sys.executable, "-m", "rlvr.procs", *preload]


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"cannot send a {type(value).__name__}")


def _watch_parent(parent: int) -> None:
    """End this worker when its parent is gone (a killed parent never sends EOF to a busy worker)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def serve(preload: Sequence[str] = ()) -> int:
    """The worker loop: import `preload`, then answer one request a line until EOF. Only functions of
    the rlvr package are called. A request's `cpu_s` sets a CPU-time limit for it, a backstop for when
    the parent is gone and cannot kill it."""
    import resource

    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    for name in preload:
        importlib.import_module(name)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
            module, _, name = str(msg["fn"]).partition(":")
            if not module.startswith("rlvr."):
                raise ValueError(f"not an rlvr function: {msg['fn']!r}")
            if msg.get("cpu_s"):
                used = resource.getrusage(resource.RUSAGE_SELF)
                soft = math.ceil(used.ru_utime + used.ru_stime + float(msg["cpu_s"])) + 1
                _, hard = resource.getrlimit(resource.RLIMIT_CPU)
                resource.setrlimit(resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard), hard))
            fn = getattr(importlib.import_module(module), name)
            reply = {"ok": True, "value": fn(*msg.get("args", []), **msg.get("kwargs", {}))}
            out = json.dumps(reply, default=_encode)
        except Exception as e:  # noqa: BLE001 - the caller gets the error as data
            out = json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"[:500]})
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
