"""Outcome reward: is the final answer correct? (TRL convention.)"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.columns import column, completion_text, gold_answer
from rlvr.tasks import get_task
from rlvr.verify import verify_answer

__all__ = ["env_reward", "outcome"]


def outcome(
    completions: list[Any], answer: list[Any], task: list[str] | None = None, **kwargs: Any
) -> list[float | None]:
    """1.0 when the task's verifier says the final answer is correct, 0.0 when it says wrong, None when it
    reached no verdict (a timeout or an infrastructure error: left out of the group statistics). Range {0, 1}.

    `answer` is the gold final answer or a full GSM8K solution ending in `#### N`; `task` (a column
    rlvr's trainer passes) names the task whose `verify` decides, with the gold columns it declares
    (`Task.columns`: a code problem's tests, an instruction prompt's constraints) taken from `kwargs`;
    without `task`, the numeric final-answer verifier `rlvr.verify.verify_answer`.

    >>> outcome(["<<2+3=5>>5\\n#### 5", "#### 6"], answer=["5", "5"])
    [1.0, 0.0]
    """
    n = len(completions)
    golds = column(answer, "answer", n)
    names = column(task, "task", n) if task is not None else [None] * n
    out: list[float | None] = []
    for i, (c, g, name) in enumerate(zip(completions, golds, names, strict=True)):
        if name:
            t = get_task(name)
            extra = {k: column(kwargs[k], k, n)[i] for k in t.columns if k in kwargs}
            v = t.verify(completion_text(c), gold_answer(g), **extra)
        else:
            v = verify_answer(completion_text(c), gold_answer(g))
        out.append(None if not v.scored else 1.0 if v.correct else 0.0)
    return out


def env_reward(completions: list[Any], env_reward: list[float] | None = None, **kwargs: Any) -> list[float | None]:
    """The environment's own `get_reward()` for each conversation (the `env_reward` column rlvr passes
    when the environment defines it); None for every completion when it does not.

    >>> env_reward(["a", "b"], env_reward=[1.0, 0.0])
    [1.0, 0.0]
    """
    if env_reward is None:
        return [None] * len(completions)
    return [None if v is None else float(v) for v in column(env_reward, "env_reward", len(completions))]
