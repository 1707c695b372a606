"""rlvr's code verifier: a solution's function is called across the jail's wall, the tests stay outside.

`verify_humaneval(completion, problem)` extracts the code (`rlvr.harness.extract`), loads it into a
jailed worker (`worker.py` under `rlvr.sandbox.jail`: bubblewrap, seccomp, rlimits, uid 65534) and
runs the problem's `check(candidate)` in THIS process (`rlvr.harness.checks`) with `candidate` a proxy:
each call sends its arguments as plain data, the worker calls the solution and sends back the return
value as plain data of exact built-in types (`rlvr.harness.plaindata`), and the assert compares here.
So the verdict never depends on anything the solution can write (its exit status, its output, a
file), the solution never sees a test or an expected value, and no object of the solution's making
reaches the comparison. Rules, statuses, limits and the hack families: docs/code.md.

`CodeVerifier` keeps jailed workers started ahead of use (one per solution; a solution's interpreter
is never reused for another) and is safe to share between threads.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import math
import os
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rlvr.harness import plaindata
from rlvr.harness.checks import Abort, ProblemError, SolutionFailure, TrustedCheck
from rlvr.harness.extract import build_program, extract_code
from rlvr.sandbox.jail import JAIL_UID, Backend, SandboxUnavailable, WorkerError, WorkerProcess, detect
from rlvr.verify import UNSCORED, Verdict

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_TEST_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "CodeStatus",
    "CodeVerdict",
    "CodeVerifier",
    "JailUnavailable",
    "require_jail",
    "verify_humaneval",
]

DEFAULT_TIMEOUT_S = 10.0  # the whole problem: every test, every worker start and import
DEFAULT_TEST_TIMEOUT_S = 3.0  # one test (one top-level statement of check), the solution's import included
SPAWN_TIMEOUT_S = 15.0  # starting a jailed interpreter, at most (never beyond the problem's deadline)
MAX_REPLY_BYTES = 4 << 20  # one return value, encoded
WORKER_SCRIPT = "harness/worker.py"
DEFAULT_LIMITS = {
    "memory_bytes": 512 << 20,  # RLIMIT_AS
    "file_bytes": 1 << 20,  # RLIMIT_FSIZE (the jail's /tmp is a private 16 MiB tmpfs)
    "open_files": 64,  # RLIMIT_NOFILE
    "processes": 32,  # RLIMIT_NPROC (seccomp denies fork/vfork/clone of a process anyway; threads count)
    "cpu_s": 60,  # RLIMIT_CPU for a worker's life (one solution); the wall-clock deadline comes first
    "core_bytes": 0,
}

CodeStatus = Literal["correct", "wrong", "unparseable_answer", "unparseable_gold", "timeout", "infra_error"]


class JailUnavailable(SandboxUnavailable):
    """The code verifier cannot run here: it needs bubblewrap (and never falls back to no jail)."""


class _Timeout(Abort):
    """The problem's deadline passed."""


class _Infra(Abort):
    """rlvr's side failed: a jail did not start, or a test passes an argument that is not plain data."""


@dataclass(frozen=True)
class CodeVerdict:
    """The code verifier's decision on one completion.

    `status`: "correct" (every test passed), "wrong" (some failed, or the solution fails to import),
    "unparseable_answer" (no code that defines the function), "unparseable_gold" (the problem's test
    itself does not run), "timeout" (the problem's deadline passed before every test ran), or
    "infra_error" (rlvr's jail failed). `passed`/`total` count tests (top-level statements of `check`
    that call the candidate); `parsed` is the extracted code, None when there was none."""

    status: CodeStatus
    passed: int
    total: int
    reason: str
    parsed: str | None

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @property
    def scored(self) -> bool:
        """False when no judgement of the completion was reached (timeout, infrastructure, a bad problem)."""
        return self.status not in UNSCORED and self.status != "unparseable_gold"

    @property
    def reward(self) -> float | None:
        """The share of tests passed (partial credit); None when not scored, never 0."""
        if not self.scored:
            return None
        return self.passed / self.total if self.total else 0.0

    def verdict(self) -> Verdict:
        """As `rlvr.verify.Verdict(correct, parsed, reason, status)`."""
        return Verdict(self.correct, self.parsed, self.reason, self.status)


def require_jail() -> Backend:
    """The bubblewrap backend, or `JailUnavailable` with a one-line reason naming the package."""
    try:
        backend = detect()
    except SandboxUnavailable as e:
        raise JailUnavailable(f"the code verifier needs bubblewrap (apt-get install bubblewrap): {e}") from e
    if backend.kind != "bwrap":  # detect() never returns anything else; never run solutions unjailed
        raise JailUnavailable("the code verifier needs bubblewrap (apt-get install bubblewrap)")
    # Only rlvr/harness/ is mounted: the rest of the package (tasks' vendored data among it) stays outside.
    return dataclasses.replace(backend, expose="harness")


@functools.lru_cache(maxsize=1024)
def _trusted(prompt: str, test: str, entry: str) -> TrustedCheck:
    return TrustedCheck.build(prompt, test, entry)


class CandidateError(SolutionFailure):
    """The solution raised, crashed, timed out or returned something that is not plain data."""


class _Session:
    """One solution against one problem: the proxy `candidate`, its worker(s) and its deadlines."""

    def __init__(self, verifier: CodeVerifier, program: str, entry: str, start: float, timeout_s: float):
        self.verifier, self.program, self.entry = verifier, program, entry
        self.timeout_s, self.test_timeout_s = timeout_s, verifier.test_timeout_s
        self.deadline = deadline = start + timeout_s
        self.test_deadline = deadline
        self.worker: WorkerProcess | None = None
        self.load_error: str | None = None
        self.calls = 0

    def begin(self, index: int | None) -> None:
        now = time.monotonic()
        if now >= self.deadline:
            raise _Timeout(f"the problem's {self.timeout_s:g} s ran out")
        self.test_deadline = self.deadline if index is None else min(self.deadline, now + self.test_timeout_s)

    def _lost(self, e: WorkerError, what: str) -> CandidateError:
        """The worker is gone (WorkerProcess killed it): a timeout of the problem, or the solution's failure."""
        self.worker = None
        now = time.monotonic()
        if now >= self.deadline:
            raise _Timeout(f"the problem's {self.timeout_s:g} s ran out") from e
        if now >= self.test_deadline:
            return CandidateError(f"{what}: the test ran past its {self.test_timeout_s:g} s")
        return CandidateError(f"{what}: {e}")

    def _ensure(self) -> WorkerProcess:
        """The worker with the solution loaded: the current one, or a fresh one (after a crash or a kill)."""
        if self.load_error is not None:
            raise CandidateError(self.load_error)
        if self.worker is not None and self.worker.alive():
            return self.worker
        worker = self.verifier._take(self.test_deadline)
        try:
            reply = worker.request({"op": "load", "source": self.program, "entry": self.entry}, self._left(), 64 << 10)
        except WorkerError as e:
            self.load_error = str(self._lost(e, "the solution fails at import"))
            raise CandidateError(self.load_error) from e
        except BaseException:
            worker.close()
            raise
        if reply.get("ok") is not True:
            worker.close()
            self.load_error = f"the solution fails at import: {str(reply.get('error'))[:300]}"
            raise CandidateError(self.load_error)
        self.worker = worker
        return worker

    def _left(self) -> float:
        left = self.test_deadline - time.monotonic()
        if left <= 0:
            if time.monotonic() >= self.deadline:
                raise _Timeout(f"the problem's {self.timeout_s:g} s ran out")
            raise CandidateError(f"the test ran past its {self.test_timeout_s:g} s")
        return left

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            msg = {"args": plaindata.encode(list(args)), "kwargs": plaindata.encode(kwargs)}
        except plaindata.PlainDataError as e:
            raise _Infra(f"a test passes an argument that is not plain data: {e}") from e
        worker = self._ensure()
        self.calls += 1
        try:
            reply = worker.request({"op": "call", "id": self.calls, **msg}, self._left(), MAX_REPLY_BYTES)
        except WorkerError as e:
            raise self._lost(e, "the solution's call failed") from e
        if reply.get("id") != self.calls:
            self.close()
            raise CandidateError("the worker answered out of turn")
        if reply.get("ok") is not True:
            raise CandidateError(str(reply.get("error"))[:300])
        try:
            return plaindata.decode(reply.get("value"))
        except plaindata.PlainDataError as e:
            raise CandidateError(f"the solution returned something that is not plain data: {e}") from e

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


class CodeVerifier:
    """Runs solutions against HumanEval-style tests, each solution in a fresh jailed worker.

    `workers` jailed interpreters are kept started ahead of use by a background thread (it owns them:
    bubblewrap's --die-with-parent follows the thread that started it, so that thread lives until
    `close()`); after `idle_s` seconds without a call they are ended, and started again by the next.
    A solution's worker is never reused for another solution (its code may have patched modules, left
    threads or handlers behind); within one solution a crash or a kill brings a fresh worker, with the
    solution loaded again, for the next test. Thread-safe; a context manager.
    Raises `JailUnavailable` where bubblewrap cannot run."""

    def __init__(
        self,
        *,
        workers: int = 2,
        idle_s: float = 30.0,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
        limits: Mapping[str, int] | None = None,
    ) -> None:
        self.backend = require_jail()
        self.timeout_s, self.test_timeout_s = timeout_s, test_timeout_s
        self.limits = {**DEFAULT_LIMITS, **(limits or {})}
        self._ready: queue.Queue[WorkerProcess] = queue.Queue(maxsize=max(workers, 1))
        self._closed, self._wake = threading.Event(), threading.Event()
        self.idle_s = idle_s
        self._last_use = time.monotonic()
        self._filler: threading.Thread | None = None
        if workers > 0:
            self._filler = threading.Thread(target=self._fill, name="rlvr-code-workers", daemon=True)
            self._filler.start()

    def __enter__(self) -> CodeVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self, deadline: float) -> WorkerProcess:
        """A started worker that has said it is ready as uid 65534 (raises WorkerError)."""
        cfg = {"limits": self.limits, "tag": os.urandom(8).hex()}
        timeout = max(min(SPAWN_TIMEOUT_S, deadline - time.monotonic()), 0.001)
        w = WorkerProcess(self.backend, cfg, timeout, script=WORKER_SCRIPT)
        try:
            hello = w.read(time.monotonic() + timeout, 4096)
        except WorkerError:
            w.close()
            raise
        if hello.get("ready") is not True or hello.get("uid") != JAIL_UID:
            w.close()
            raise WorkerError(f"the jailed worker did not start as uid {JAIL_UID}: {hello!r:.200}")
        return w

    def _fill(self) -> None:
        """Keep the queue of started workers full while the verifier is in use; after `idle_s` without a
        call, end them and sleep until the next call (or `close`)."""
        while not self._closed.is_set():
            if time.monotonic() - self._last_use > self.idle_s:
                self._drain()
                self._wake.clear()
                if time.monotonic() - self._last_use > self.idle_s:
                    self._wake.wait()
                continue
            if self._ready.full():
                self._closed.wait(0.1)
                continue
            try:
                w = self._spawn(time.monotonic() + SPAWN_TIMEOUT_S)
            except WorkerError:
                self._closed.wait(1.0)  # callers start jails themselves (and report the error) meanwhile
                continue
            try:
                self._ready.put_nowait(w)
            except queue.Full:
                w.close()
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                self._ready.get_nowait().close()
            except queue.Empty:
                return

    def _take(self, deadline: float) -> WorkerProcess:
        while True:
            try:
                w = self._ready.get_nowait()
            except queue.Empty:
                break
            if w.alive():
                return w
            w.close()
        try:
            return self._spawn(deadline)
        except WorkerError as e:
            if time.monotonic() >= deadline:
                raise _Timeout("the deadline passed while a jail was starting") from e
            raise _Infra(f"the jail did not start: {e}") from e

    def verify(self, completion: str, problem: Mapping[str, str], *, timeout_s: float | None = None) -> CodeVerdict:
        """The verdict on `completion` for a HumanEval problem (`prompt`, `test`, `entry_point`)."""
        if self._closed.is_set():
            raise RuntimeError("this CodeVerifier is closed")
        self._last_use = time.monotonic()
        self._wake.set()
        start = time.monotonic()
        prompt, test, entry = problem.get("prompt", ""), problem["test"], problem["entry_point"]
        code = extract_code(completion)
        try:
            check = _trusted(prompt, test, entry)
        except ProblemError as e:
            return CodeVerdict("unparseable_gold", 0, 0, str(e), code or None)
        program, why = build_program(code, prompt, entry)
        if program is None:
            return CodeVerdict("unparseable_answer", 0, check.total, why, None)
        session = _Session(self, program, entry, start, timeout_s or self.timeout_s)
        try:
            run = check.run(session, session.begin)
        except ProblemError as e:
            return CodeVerdict("unparseable_gold", 0, check.total, str(e), code)
        finally:
            session.close()
        passed, total = run.passed, check.total + len(run.setup_errors)  # a failing non-test statement fails too
        first = f"; test {run.failures[0][0]}: {run.failures[0][1]}" if run.failures else ""
        if run.setup_errors and not first:
            first = f"; a statement of check() outside the tests: {run.setup_errors[0]}"
        if isinstance(run.aborted, _Timeout):
            return CodeVerdict("timeout", passed, total, f"{run.aborted} after {passed}/{total} tests passed", code)
        if isinstance(run.aborted, _Infra):
            return CodeVerdict("infra_error", passed, total, str(run.aborted), code)
        if run.aborted is not None:
            return CodeVerdict("infra_error", passed, total, f"run aborted: {run.aborted}", code)
        if passed == total:
            return CodeVerdict("correct", passed, total, f"all {total} tests passed", code)
        return CodeVerdict("wrong", passed, total, f"{passed}/{total} tests passed{first}", code)

    def close(self) -> None:
        """Stop the background starter and end every started worker."""
        self._closed.set()
        self._wake.set()
        if self._filler is not None and self._filler is not threading.current_thread():
            self._filler.join(timeout=SPAWN_TIMEOUT_S + 1)
        self._drain()


_shared: CodeVerifier | None = None
_shared_pid = 0
_shared_lock = threading.Lock()


def _reset_after_fork() -> None:
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()  # the parent's workers and thread are not ours


os.register_at_fork(after_in_child=_reset_after_fork)


def _close_shared() -> None:
    if _shared is not None and _shared_pid == os.getpid():
        _shared.close()


atexit.register(_close_shared)


def _shared_verifier() -> CodeVerifier:
    global _shared, _shared_pid
    with _shared_lock:
        if _shared is None or _shared_pid != os.getpid():
            _shared, _shared_pid = CodeVerifier(), os.getpid()
        return _shared


def verify_humaneval(
    completion: str, problem: Mapping[str, str], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> CodeVerdict:
    """rlvr's verdict on `completion` for a HumanEval-style problem: a mapping with `prompt` (may be
    absent: ""), `test` (defining `check(candidate)`, or top-level asserts) and `entry_point`; other keys
    are ignored. Uses one shared
    `CodeVerifier` per process (created on first use). Raises `JailUnavailable` without bubblewrap."""
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return _shared_verifier().verify(completion, problem, timeout_s=timeout_s)
