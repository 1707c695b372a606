"""Process reward: step-level checks against GSM8K's `<<expr=result>>` calculator annotations.

For m generated steps, r right (exact arithmetic, value matching a gold step not yet used), w = m - r
wrong, and n >= 1 gold steps:

    process = clip((r - w - missing_penalty * max(0, (n - r) - w)) / n, -1, 1)
              - overlong_penalty * [m > 1.5 n], clipped to [-1, 1]

A bare answer scores -1 (0 with `missing_penalty: 0`, which pays a model for not showing work:
docs/studies.md section 1b). Problems without gold steps are not scorable (`None`), never silently 0."""

from __future__ import annotations

from typing import Any

from rlvr.rewards.columns import RewardFn, completion_text, gold_steps
from rlvr.verify import match_steps, parse_steps

__all__ = ["process", "make_process", "process_score", "make_hybrid", "hybrid"]


def process_score(
    text: str, gold, *, max_ratio: float = 1.5, overlong_penalty: float = 0.5, missing_penalty: float = 1.0
) -> float | None:
    """The process score of one completion against gold steps (see the module docstring).

    >>> from rlvr.tasks import Step
    >>> gold = [Step("3+4", "7"), Step("7*2", "14")]
    >>> process_score("<<3+4=7>>7\\n<<7*2=14>>14\\n#### 14", gold)
    1.0
    >>> process_score("<<3+4=8>>8\\n<<7*2=14>>14\\n#### 14", gold)
    0.0
    >>> process_score("#### 14", gold), process_score("#### 14", gold, missing_penalty=0.0)
    (-1.0, 0.0)
    """
    if not gold:
        return None
    steps = parse_steps(text)
    matched = match_steps(steps, gold)
    right = sum(1 for s, ok in zip(steps, matched, strict=True) if s.valid and ok)
    wrong = len(steps) - right
    total = right - wrong - missing_penalty * max(0, len(gold) - right - wrong)
    score = max(-1.0, min(1.0, total / len(gold)))
    if len(steps) > max_ratio * len(gold):
        score = max(-1.0, score - overlong_penalty)
    return score


def make_process(max_ratio: float = 1.5, overlong_penalty: float = 0.5, missing_penalty: float = 1.0) -> RewardFn:
    """A process reward with its own chain-length limit and penalties.

    >>> from rlvr.tasks import Step
    >>> make_process(overlong_penalty=0.0)(["<<3+4=7>>7\\n<<7*2=14>>14"], steps=[[Step("3+4", "7")]])
    [0.0]
    """

    def process(completions: list[Any], steps: list[Any] | None = None, **kwargs: Any) -> list[float | None]:
        answers = kwargs.get("answer") or [None] * len(completions)
        step_cols = steps if steps is not None else [None] * len(completions)
        kw = {"max_ratio": max_ratio, "overlong_penalty": overlong_penalty, "missing_penalty": missing_penalty}
        return [
            process_score(completion_text(c), gold_steps(s, a), **kw)
            for c, s, a in zip(completions, step_cols, answers, strict=True)
        ]

    return process


process = make_process()


def make_hybrid(lam: float = 0.5, **process_kwargs: float) -> RewardFn:
    """`lam * process + (1 - lam) * outcome`. Range [-lam, 1]. Where the problem has no gold steps
    the process term is unscorable and the reward is the outcome alone.

    >>> from rlvr.tasks import Step
    >>> make_hybrid(0.5)(["<<3+4=8>>8\\n#### 7"], answer=["7"], steps=[[Step("3+4", "7")]])
    [0.0]
    """
    from rlvr.rewards.outcome import outcome

    proc = make_process(**process_kwargs)

    def hybrid(completions: list[Any], answer: list[Any], **kwargs: Any) -> list[float | None]:
        p = proc(completions, answer=answer, **kwargs)
        o = outcome(completions, answer=answer)
        return [oi if pi is None or oi is None else lam * pi + (1 - lam) * oi for pi, oi in zip(p, o, strict=True)]

    hybrid.__name__ = f"hybrid_{lam:g}"
    return hybrid


hybrid = make_hybrid(0.5)
