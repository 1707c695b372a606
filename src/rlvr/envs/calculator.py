"""A calculator environment for arithmetic word problems (`Calculator`: one tool, `calc(expr)`, exact
`+ - * /` and parentheses through `rlvr.verify.evaluate_expr`, no `eval`), and `demonstrate(problem)`:
the assistant turns of a gold solution, one `calc` call per step of `Problem.steps`, then the answer
line, for `rlvr sft`'s `demos:` (docs/environments.md, examples/calculator.yaml):

    A:<tool_call>{"name": "calc", "arguments": {"expr": "14*2"}}</tool_call>
    <tool_response>28</tool_response>
    A:<tool_call>{"name": "calc", "arguments": {"expr": "28+10"}}</tool_call>
    <tool_response>38</tool_response>
    A:#### 38
"""

from __future__ import annotations

import json
from typing import Any

from rlvr.tasks import Problem
from rlvr.verify.steps import evaluate_expr

__all__ = ["Calculator", "demonstrate"]


class Calculator:
    """One tool, `calc`; `calls` counts the calls of the conversation."""

    def reset(self, **row: Any) -> None:
        self.calls = 0

    def calc(self, expr: str) -> str:
        """Evaluate an arithmetic expression exactly.

        Args:
            expr: numbers with + - * / and parentheses, e.g. "14*12"
        """
        self.calls += 1
        value = evaluate_expr(expr)
        if value is None:
            raise ValueError(f"cannot evaluate {expr!r}")
        return str(value.numerator) if value.denominator == 1 else f"{float(value):.6g}"


def call_text(expr: str) -> str:
    """One Hermes call of `calc`."""
    return f"<tool_call>{json.dumps({'name': 'calc', 'arguments': {'expr': expr}})}</tool_call>"


def demonstrate(problem: Problem) -> list[str]:
    """The assistant turns of a solution that computes every step with `calc`."""
    return [*(call_text(s.expr) for s in problem.steps), f"#### {problem.answer}"]
