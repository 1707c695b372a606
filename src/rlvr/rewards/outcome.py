"""Outcome reward: is the final answer correct? (TRL convention.)"""

from __future__ import annotations

from typing import Any

from rlvr.rewards.columns import column, completion_text, gold_answer
from rlvr.verify import verify_answer

__all__ = ["outcome"]


def outcome(completions: list[Any], answer: list[Any], **kwargs: Any) -> list[float | None]:
    """1.0 when `verify_answer(completion, gold)` says correct, else 0.0. Range {0, 1}.

    `answer` is the gold final answer or a full GSM8K solution ending in `#### N`.

    >>> outcome(["<<2+3=5>>5\\n#### 5", "#### 6"], answer=["5", "5"])
    [1.0, 0.0]
    """
    golds = column({"answer": answer}, "answer", len(completions))
    return [
        1.0 if verify_answer(completion_text(c), gold_answer(g)).correct else 0.0
        for c, g in zip(completions, golds, strict=True)
    ]
