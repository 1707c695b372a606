"""rlvr.procs: a worker answers, a hung worker is killed at its deadline with its whole process tree,
and the pool serves threads, asyncio and forked processes alike."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from rlvr.procs import LineProcess, WorkerError, WorkerPool, WorkerTimeout, python_worker_argv

# A worker that echoes, hangs on request, or leaves a grandchild behind and then hangs.
SCRIPT = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("hang"):
            if msg.get("child"):
                p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                sys.stderr.write(f"{p.pid}\\n"); sys.stderr.flush()
                open(msg["child"], "w").write(str(p.pid))
            while True:
                pass
        if msg.get("exit"):
            os._exit(3)
        sys.stdout.write(json.dumps({"echo": msg.get("x")}) + "\\n"); sys.stdout.flush()
    """
)


def _start() -> LineProcess:
    return LineProcess([sys.executable, "-c", SCRIPT])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead
        return f.read().split()[2] != "Z"


def test_a_worker_answers_and_a_hung_one_is_killed_with_its_children_at_the_deadline(tmp_path):
    w = _start()
    assert w.request({"x": 1}, 5, 1000) == {"echo": 1}
    marker = tmp_path / "child"
    t0 = time.monotonic()
    with pytest.raises(WorkerTimeout):
        w.request({"hang": True, "child": str(marker)}, 1.0, 1000)
    assert time.monotonic() - t0 < 1.5
    assert not w.alive()
    child = int(marker.read_text())
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the worker's child outlived the kill"


def test_a_crashed_worker_is_an_error_and_the_pool_replaces_it():
    pool = WorkerPool(_start, size=1)
    with pytest.raises(WorkerError, match="exited"):
        pool.request({"exit": True}, 5)
    assert pool.request({"x": 2}, 5) == {"echo": 2}
    pool.close()


def _pool_call(pool: WorkerPool, hang: bool) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        reply = pool.request({"hang": hang, "x": 7}, 0.8)
        return str(reply.get("echo")), time.monotonic() - t0
    except WorkerTimeout:
        return "timeout", time.monotonic() - t0


POOL = WorkerPool(_start, size=2)


def _in_child(hang: bool) -> tuple[str, float]:
    return _pool_call(POOL, hang)  # a forked child: the pool starts workers of its own


def test_the_same_deadline_from_threads_asyncio_and_a_process_pool():
    POOL.warm()
    results = [_pool_call(POOL, True), _pool_call(POOL, False)]
    with ThreadPoolExecutor(2) as ex:
        results += list(ex.map(lambda h: _pool_call(POOL, h), [True, False]))

    async def main():
        return await asyncio.gather(*(asyncio.to_thread(_pool_call, POOL, h) for h in (True, False)))

    results += asyncio.run(main())
    with ProcessPoolExecutor(2) as ex:
        results += list(ex.map(_in_child, [True, False]))
    for (got, seconds), hang in zip(results, [True, False] * 4, strict=True):
        assert got == ("timeout" if hang else "7")
        assert seconds < 0.8 + 0.5
    POOL.close()


def test_the_python_worker_calls_rlvr_functions_only():
    pool = WorkerPool(lambda: LineProcess(python_worker_argv(["rlvr.verify"])))
    ok = pool.request({"fn": "rlvr.verify:verify_answer", "args": ["#### 5", "5"]}, 20)
    assert ok["ok"] and ok["value"]["correct"] is True and ok["value"]["status"] == "correct"
    refused = pool.request({"fn": "os:getcwd"}, 20)
    assert not refused["ok"] and "not an rlvr function" in refused["error"]
    pool.close()
