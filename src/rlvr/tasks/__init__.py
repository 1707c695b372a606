"""Tasks: problems with gold answers and gold steps, each task declared once (`rlvr.tasks.task`, docs/tasks.md).

`load_task(name, split, ...)` is `get_task(name).load(split, ...)`. The private holdout is only returned when
the caller passes `allow_holdout=True`; the trainer and every selection step never do (the audit checks it).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rlvr.tasks import code_task, ifeval_task, math_task, pyfunc  # noqa: F401 - register these tasks
from rlvr.tasks.gsm8k import DataError
from rlvr.tasks.problem import GoldFormatError, Problem, Step, parse_gsm8k_solution
from rlvr.tasks.prompt import (
    PromptFormatError,
    PromptFormatter,
    format_prompt,
    format_target,
    refuse_unused_system_prompt,
)
from rlvr.tasks.task import SPLITS, Construction, HoldoutError, Split, Task, get_task, register, replay, task_names

__all__ = [
    "Construction",
    "DataError",
    "GoldFormatError",
    "HoldoutError",
    "Problem",
    "PromptFormatError",
    "PromptFormatter",
    "refuse_unused_system_prompt",
    "SPLITS",
    "Step",
    "Split",
    "Task",
    "format_prompt",
    "format_target",
    "get_task",
    "load_task",
    "parse_gsm8k_solution",
    "problems_hash",
    "register",
    "replay",
    "task_names",
]


def load_task(
    name: str, split: Split, *, n: int | None = None, seed: int = 0, allow_holdout: bool = False, **settings: Any
) -> list[Problem]:
    """Problems of a task split: `get_task(name).load(split, ...)`; `settings` are the task's own
    (`preset` for `arith`; a setting the task does not declare is ignored).

    >>> len(load_task("gsm8k", "test", n=3))
    3
    >>> load_task("arith", "holdout", n=3)
    Traceback (most recent call last):
    ...
    rlvr.tasks.task.HoldoutError: the private holdout of 'arith' is not available to training or selection
    """
    return get_task(name).load(split, n=n, seed=seed, allow_holdout=allow_holdout, **settings)


def problems_hash(problems: list[Problem]) -> str:
    """A content hash of a problem list (ids, questions, answers), recorded in run manifests.

    >>> problems_hash(load_task("arith", "test", n=5)) == problems_hash(load_task("arith", "test", n=5))
    True
    """
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.id, p.question, p.answer], ensure_ascii=False).encode())
    return h.hexdigest()[:16]
