"""Where screening runs: in this process, in a local pool of worker processes (one job per
process, so a crash or leak in one run cannot touch the next), or as Ray tasks on a cluster.

`run_jobs(jobs, on_result, ...)` calls `on_result(job, result)` in this process as each job
finishes, in completion order, so the caller can commit it to the store at once.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from rlvr.search.screen import ScreenJob, run_screen

__all__ = ["run_jobs", "ray_init"]

OnResult = Callable[[ScreenJob, dict[str, Any]], None]


def _local(jobs: Sequence[ScreenJob], on_result: OnResult, workers: int) -> None:
    if workers == 0:
        for job in jobs:
            on_result(job, run_screen(job))
        return
    ctx = mp.get_context("spawn")  # a fresh interpreter: no inherited torch threads or locks
    if sys.version_info >= (3, 11):
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, max_tasks_per_child=1)
    else:  # pragma: no cover - 3.10 has no max_tasks_per_child: workers are reused
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    with pool:
        pending = {pool.submit(run_screen, job): job for job in jobs}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                job = pending.pop(fut)
                try:
                    result = fut.result()
                except Exception as e:  # the worker process died (OOM kill, segfault)
                    result = {"key": job.key, "status": "failed", "error": f"worker died: {type(e).__name__}: {e}"}
                on_result(job, result)


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


def _ray(jobs: Sequence[ScreenJob], on_result: OnResult, address: str, cpus_per_job: int) -> None:
    ray = ray_init(address)
    remote = ray.remote(num_cpus=cpus_per_job, max_retries=0)(run_screen)
    pending = {remote.remote(job): job for job in jobs}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            job = pending.pop(ref)
            try:
                result = ray.get(ref)
            except Exception as e:  # the task's worker died
                result = {"key": job.key, "status": "failed", "error": f"ray task failed: {type(e).__name__}: {e}"}
            on_result(job, result)


def run_jobs(
    jobs: Sequence[ScreenJob], on_result: OnResult, *, workers: int = 1, ray: str | None = None, cpus_per_job: int = 1
) -> None:
    """Run every job and report each result as it arrives (see the module docstring)."""
    if not jobs:
        return
    if ray:
        _ray(jobs, on_result, ray, cpus_per_job)
    else:
        _local(jobs, on_result, workers)
