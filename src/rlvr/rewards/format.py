"""Format rewards: does the completion have the expected shape? They pay regardless of correctness,
which is why the audit measures how much of the training reward came from them (docs/rewards.md)."""

from __future__ import annotations

import re
from typing import Any

from rlvr.rewards.columns import RewardFn, completion_text

__all__ = ["format_exact", "format_approx", "format_gsm8k", "format_r1", "make_format_exact", "make_format_approx"]

DEFAULT_TAGS = ("thinking", "solution")


def make_format_exact(tags: tuple[str, str] = DEFAULT_TAGS) -> RewardFn:
    """Reward 1.0 when the completion is exactly `<a>...</a>` then `<b>...</b>` (whitespace around
    allowed, both bodies non-empty, each tag once), else 0.0. Range {0, 1}.

    >>> make_format_exact(("think", "answer"))(["<think>2+2=4</think> <answer>4</answer>", "4"])
    [1.0, 0.0]
    """
    a, b = (re.escape(t) for t in tags)
    pattern = re.compile(rf"\s*<{a}>(?:(?!</?{a}>).)+</{a}>\s*<{b}>(?:(?!</?{b}>).)+</{b}>\s*", re.S)

    def format_exact(completions: list[Any], **kwargs: Any) -> list[float | None]:
        return [1.0 if pattern.fullmatch(completion_text(c)) else 0.0 for c in completions]

    return format_exact


def make_format_approx(tags: tuple[str, str] = DEFAULT_TAGS) -> RewardFn:
    """Partial credit: 0.25 for each of the four tags that appears exactly once. Range [0, 1].

    >>> make_format_approx(("think", "answer"))(["<think>2+2=4</think> 4"])
    [0.5]
    """
    names = [f"<{tags[0]}>", f"</{tags[0]}>", f"<{tags[1]}>", f"</{tags[1]}>"]

    def format_approx(completions: list[Any], **kwargs: Any) -> list[float | None]:
        texts = [completion_text(c) for c in completions]
        return [sum(0.25 for n in names if t.count(n) == 1) for t in texts]

    return format_approx


format_exact = make_format_exact()
format_exact.__doc__ = """Default-tag exact format reward.

>>> format_exact(["<thinking>2+3=5</thinking><solution>5</solution>", "5"])
[1.0, 0.0]
"""
format_approx = make_format_approx()
format_approx.__doc__ = """Default-tag approximate format reward.

>>> format_approx(["<thinking>2+3=5</thinking> 5", "<solution>5</solution><solution>"])
[0.5, 0.25]
"""

format_r1 = make_format_exact(("think", "answer"))
format_r1.__name__ = "format_r1"
format_r1.__doc__ = """The `r1` prompt format's reward (DeepSeek-R1-Zero, open-r1's `format_reward`): 1.0 when the
completion is exactly `<think>...</think>` then `<answer>...</answer>`, else 0.0.

>>> format_r1(["<think>2+3=5</think>\\n<answer>5</answer>", "<answer>5</answer>"])
[1.0, 0.0]
"""

_GSM8K_END = re.compile(r"(?:^|\n)#### ?-?[\d,]+(?:\.\d+)?\s*\Z")


def format_gsm8k(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """1.0 when the completion ends with a single `#### N` line (GSM8K's answer format), else 0.0.

    >>> format_gsm8k(["<<2+3=5>>5\\n#### 5", "#### 5\\n#### 6", "5"])
    [1.0, 0.0, 0.0]
    """
    out: list[float | None] = []
    for c in completions:
        text = completion_text(c)
        out.append(1.0 if _GSM8K_END.search(text) and text.count("####") == 1 else 0.0)
    return out
