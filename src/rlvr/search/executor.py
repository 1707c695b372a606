"""Where screening runs (and a study's runs) go: in this process, in a local pool of worker processes
(one job per process, so a crash or leak in one run cannot touch the next), or as Ray tasks.

A job is any picklable object with a `key`; `fn(job)` runs it, never raises, and returns a picklable
result (`run_screen` by default, `rlvr.study.run.run_study_job` for a study). `run_jobs` calls
`on_result(job, result)` here as each job finishes, so the caller commits it at once; a job whose
worker died twice gives `JobDied`, which the caller records as a failed, retryable run."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from rlvr.interrupt import Interrupted, StopRequest
from rlvr.search.screen import run_screen

__all__ = ["JobDied", "run_jobs", "ray_init", "MAX_ATTEMPTS"]


@dataclass(frozen=True)
class JobDied:
    """The result of a job whose worker died on every try: its key and what happened."""

    key: str
    error: str


Job = Any  # picklable, with a `key: str`
OnResult = Callable[[Job, Any], None]  # (job, what fn returned, or JobDied)
RunFn = Callable[[Job], Any]
MAX_ATTEMPTS = 2  # tries of a job whose worker process died


def _exit_with_parent(parent: int) -> None:
    """Pool initializer: a daemon thread ends this worker when the driver process is gone."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(3)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _pool(workers: int) -> ProcessPoolExecutor:
    ctx = mp.get_context("spawn")  # a fresh interpreter: no inherited torch threads or locks
    kw: dict[str, Any] = {"initializer": _exit_with_parent, "initargs": (os.getpid(),)}
    if sys.version_info >= (3, 11):
        return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, max_tasks_per_child=1, **kw)
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, **kw)  # pragma: no cover - 3.10


def _local(jobs: Sequence[Job], on_result: OnResult, workers: int, fn: RunFn, stop: StopRequest) -> None:
    if workers == 0:
        for job in jobs:
            if stop.signum is not None:
                return
            on_result(job, fn(job))
        return
    attempts = dict.fromkeys((j.key for j in jobs), 0)
    queue = list(jobs)
    while queue and stop.signum is None:
        retry: list[Job] = []
        with _pool(workers) as pool:
            pending = {pool.submit(fn, job): job for job in queue}
            for job in queue:
                attempts[job.key] += 1
            while pending:
                done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if stop.signum is not None:  # jobs not started stay for --resume; running ones finish
                    for fut in [f for f in pending if f not in done and f.cancel()]:
                        del pending[fut]
                for fut in done:
                    job = pending.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool as e:  # some worker died; every pending job sees this
                        if attempts[job.key] < MAX_ATTEMPTS:
                            retry.append(job)
                            continue
                        result = JobDied(job.key, f"worker died: {e}")
                    except Exception as e:
                        result = JobDied(job.key, f"worker failed: {type(e).__name__}: {e}")
                    on_result(job, result)
        queue = retry


def ray_init(address: str) -> Any:
    """Connect to a Ray cluster (`auto`, `ray://host:port`), or start a local one (`local`)."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("--ray needs the ray extra: pip install 'rlvr[ray]'") from e
    if not ray.is_initialized():
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    return ray


def _ray(jobs: Sequence[Job], on_result: OnResult, address: str, cpus_per_job: int, fn: RunFn) -> None:
    ray = ray_init(address)
    remote = ray.remote(num_cpus=cpus_per_job, max_retries=MAX_ATTEMPTS - 1)(fn)
    pending = {remote.remote(job): job for job in jobs}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            job = pending.pop(ref)
            try:
                result = ray.get(ref)
            except Exception as e:  # the task's worker died on every try
                result = JobDied(job.key, f"ray task failed: {type(e).__name__}: {e}")
            on_result(job, result)


def run_jobs(
    jobs: Sequence[Job],
    on_result: OnResult,
    *,
    workers: int = 1,
    ray: str | None = None,
    cpus_per_job: int = 1,
    fn: RunFn = run_screen,
) -> None:
    """Run every job with `fn` and report each result as it arrives (see the module docstring). On
    SIGTERM or SIGINT no new job starts, running local jobs finish and are reported, and
    `Interrupted` is raised (a Ray run stops at once: its tasks' results are not waited for)."""
    if not jobs:
        return
    with StopRequest(where=f"{len(jobs)} job(s)" if ray else None) as stop:
        if ray:
            _ray(jobs, on_result, ray, cpus_per_job, fn)
        else:
            _local(jobs, on_result, workers, fn, stop)
    if stop.signum is not None:
        raise Interrupted(stop.signum, "the end of the running job(s); the rest are left for --resume", None)
