"""The one prompt template. Training, SFT, evaluation, search and audit all import it from here.

The prompt ends with ``A:`` and every target starts with a space, so the tokenizer cuts prompt and
completion at the same place during SFT, sampling and the GRPO update (see NOTES.md, pitfalls).
"""

from __future__ import annotations

from rlvr.tasks.problem import Problem

__all__ = ["format_prompt", "format_target", "PROMPT_TEMPLATE"]

PROMPT_TEMPLATE = "Q: {question}\nA:"


def format_prompt(question: str) -> str:
    """The prompt a model sees for a question.

    >>> format_prompt("What is 2 plus 3?")
    'Q: What is 2 plus 3?\\nA:'
    """
    return PROMPT_TEMPLATE.format(question=question.strip())


def format_target(problem: Problem) -> str:
    """The SFT target for a problem: its gold solution, starting with a space.

    >>> from rlvr.tasks.problem import Problem
    >>> format_target(Problem("p", "q", "7", [], "t", solution="<<3+4=7>>7\\n#### 7"))
    ' <<3+4=7>>7\\n#### 7'
    """
    return " " + problem.solution.strip()
