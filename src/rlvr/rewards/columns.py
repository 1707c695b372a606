"""Read TRL-style reward inputs: completions as strings or chat messages, golds as numbers or full
GSM8K solutions, gold steps as `Step`s, dicts or absent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rlvr.tasks.problem import GoldFormatError, Step, parse_gsm8k_solution

__all__ = ["RewardFn", "completion_text", "gold_answer", "gold_steps", "column"]

RewardFn = Callable[..., list[float | None]]  # TRL's convention: f(completions, **columns)


def completion_text(completion: Any) -> str:
    """A completion as text: TRL passes plain strings or, for chat data, a list of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return "" if completion is None else str(completion)


def gold_answer(answer: Any) -> str:
    """The final gold answer; a full GSM8K solution (`... #### 18`) gives `18`."""
    text = str(answer)
    if "####" in text:
        try:
            return parse_gsm8k_solution(text)[0]
        except GoldFormatError:
            return text
    return text.strip()


def gold_steps(steps: Any, answer: Any = None) -> list[Step] | None:
    """Gold steps from a `steps` column (Steps or {expr, result} dicts), else from a GSM8K
    solution in `answer`; None when neither has any."""
    if steps is not None:
        out = []
        for s in steps:
            if isinstance(s, Step):
                out.append(s)
            elif isinstance(s, dict):
                out.append(Step(str(s["expr"]), str(s["result"])))
            else:
                out.append(Step(str(s[0]), str(s[1])))
        return out
    if answer is not None and "<<" in str(answer):
        try:
            return parse_gsm8k_solution(str(answer))[1]
        except GoldFormatError:
            return None
    return None


def column(values: Sequence[Any], name: str, n: int) -> Sequence[Any]:
    """The dataset column `name`, checked to hold one value for each of the n completions."""
    if len(values) != n:
        raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
    return values
