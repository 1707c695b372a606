"""Tasks: problems with gold answers and gold steps.

`load_task(name, split, ...)` is the one entry point the trainer, evaluation and search use. The
private holdout is only returned when the caller passes `allow_holdout=True`; the trainer and every
selection step never do, so they cannot train or select on it (see the audit's holdout check).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from rlvr.tasks.gsm8k import DataError, load_gsm8k, load_jsonl
from rlvr.tasks.problem import GoldFormatError, Problem, Step, parse_gsm8k_solution
from rlvr.tasks.prompt import (
    PromptFormat,
    PromptFormatError,
    PromptFormatter,
    format_prompt,
    format_target,
    resolve_format,
)

__all__ = [
    "DataError",
    "GoldFormatError",
    "HoldoutError",
    "Problem",
    "PromptFormat",
    "PromptFormatError",
    "PromptFormatter",
    "Step",
    "Split",
    "format_prompt",
    "format_target",
    "load_task",
    "parse_gsm8k_solution",
    "problems_hash",
    "resolve_format",
]

Split = Literal["train", "dev", "test", "holdout"]


class HoldoutError(PermissionError):
    """Raised when code that trains or selects asks for the private holdout."""


def _bucket(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % 100


def load_task(
    name: str,
    split: Split,
    *,
    n: int | None = None,
    seed: int = 0,
    preset: str = "easy",
    allow_holdout: bool = False,
) -> list[Problem]:
    """Problems of a task split. `name` is `arith`, `gsm8k` or a path to a GSM8K-format JSONL.

    GSM8K's `dev` split is the 5% of its train split whose question hashes into bucket < 5, and
    `train` is the rest, so dev is disjoint from train; GSM8K has no private holdout.

    >>> len(load_task("gsm8k", "test", n=3))
    3
    >>> load_task("arith", "holdout", n=3)
    Traceback (most recent call last):
    ...
    rlvr.tasks.HoldoutError: the private holdout of 'arith' is not available to training or selection
    """
    if split not in ("train", "dev", "test", "holdout"):
        raise DataError(f"unknown split {split!r}: use train, dev, test or holdout")
    if split == "holdout" and not allow_holdout:
        raise HoldoutError(f"the private holdout of {name!r} is not available to training or selection")
    if name == "arith":
        from rlvr.tasks import arith

        return arith.generate(split, n if n is not None else 1000, seed=seed, preset=preset)
    if name == "gsm8k":
        if split == "holdout":
            raise DataError("gsm8k has no private holdout; evaluate a JSONL file of your own instead")
        if split == "test":
            probs = load_gsm8k("test")
        else:
            train = load_gsm8k("train")
            probs = [p for p in train if (_bucket(p.question) < 5) == (split == "dev")]
        return probs[:n] if n is not None else probs
    path = Path(name)
    if path.suffix == ".jsonl" or path.exists():
        return load_jsonl(path, limit=n)
    raise DataError(f"unknown task {name!r}: use 'arith', 'gsm8k' or a path to a .jsonl file")


def problems_hash(problems: list[Problem]) -> str:
    """A content hash of a problem list (ids, questions, answers), recorded in run manifests.

    >>> problems_hash(load_task("arith", "test", n=5)) == problems_hash(load_task("arith", "test", n=5))
    True
    """
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.id, p.question, p.answer], ensure_ascii=False).encode())
    return h.hexdigest()[:16]
