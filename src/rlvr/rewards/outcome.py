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
    """1.0 when the task's verifier says the final answer is correct, else 0.0. Range {0, 1}.

    `answer` is the gold final answer or a full GSM8K solution ending in `#### N`; `task` (a column
    rlvr's trainer passes) names the task whose `verify` decides; without it, the numeric final-answer
    verifier `rlvr.verify.verify_answer` (every built-in task's).

    >>> outcome(["<<2+3=5>>5\\n#### 5", "#### 6"], answer=["5", "5"])
    [1.0, 0.0]
    """
    golds = column(answer, "answer", len(completions))
    names = column(task, "task", len(completions)) if task is not None else [None] * len(completions)
    return [
        1.0 if (get_task(name).verify if name else verify_answer)(completion_text(c), gold_answer(g)).correct else 0.0
        for c, g, name in zip(completions, golds, names, strict=True)
    ]


def env_reward(completions: list[Any], env_reward: list[float] | None = None, **kwargs: Any) -> list[float | None]:
    """The environment's own `get_reward()` for each conversation (the `env_reward` column rlvr passes
    when the environment defines it); None for every completion when it does not.

    >>> env_reward(["a", "b"], env_reward=[1.0, 0.0])
    [1.0, 0.0]
    """
    if env_reward is None:
        return [None] * len(completions)
    return [None if v is None else float(v) for v in column(env_reward, "env_reward", len(completions))]
