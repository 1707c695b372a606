"""Stage 4 of the sandbox: the probe batch a candidate reward must score sensibly before it is
accepted (what it holds: docs/sandbox.md), with the columns the trainer passes."""

from __future__ import annotations

from typing import Any

from rlvr.verify.steps import Step

__all__ = ["probe_batch"]

_PROBLEMS: dict[str, tuple[str, str, list[Step]]] = {
    "ducks": (
        "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
        "for her friends every day with four. She sells the remainder at the farmers' market daily for $2 "
        "per fresh duck egg. How much in dollars does she make every day at the farmers' market?",
        "18",
        [Step("16-3-4", "9"), Step("9*2", "18")],
    ),
    "robe": (
        "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does it take?",
        "3",
        [Step("2/2", "1"), Step("2+1", "3")],
    ),
    "house": (
        "Josh decides to try flipping a house. He buys a house for $80,000 and then puts in $50,000 in "
        "repairs. This increased the value of the house by 150%. How much profit did he make?",
        "70000",
        [
            Step("80000+50000", "130000"),
            Step("80000*1.5", "120000"),
            Step("120000+80000", "200000"),
            Step("200000-130000", "70000"),
        ],
    ),
}

# (problem, completion): what each probes is in the comment
_ITEMS: list[tuple[str, str]] = [
    ("ducks", "Janet has 16 - 3 - 4 = <<16-3-4=9>>9 eggs left.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18"),  # correct
    ("ducks", "She has 16 - 3 - 4 = 9 eggs left, so she makes 9 * 2 = $20 every day.\n#### 20"),  # wrong value
    ("robe", "It takes 2 / 2 = 1 bolt of white fiber, so 2 + 1 = 3 bolts in total. The answer is 3."),  # phrase
    ("house", "Cost: 80000 + 50000 = 130000. Value: 80000 * 2.5 = 200000. Profit \\boxed{70000}"),  # boxed
    ("house", "The house is worth 200000 and cost 130000, so the profit is 200000 - 130000 = 70000 dollars"),
    ("ducks", ""),  # empty
    ("robe", "Let me think step by step. " * 1500),  # ~40k characters, no answer
    ("ducks", "她每天赚 ١٨ 美元 🦆✨\n#### ١٨"),  # non-ASCII digits
    ("robe", "I am not sure how to solve this problem."),  # no marker, no number
    ("ducks", "#### 18 or 19"),  # hedged
    ("house", "<think>80000 * 1.5 = 120000 more</think>\n<answer>70000</answer>"),  # tags
    ("robe", "#### 3\nAnswer: 4"),  # conflicting markers
    ("ducks", "\n\n   \t"),  # whitespace only
    ("house", "#### 1\n" * 80),  # marker spam
]


def probe_batch() -> tuple[list[str], dict[str, list[Any]]]:
    """The probe completions and their dataset columns, in the trainer's calling convention.

    >>> completions, columns = probe_batch()
    >>> len(completions) == len(columns["answer"]) == len(columns["steps"])
    True
    """
    completions = [text for _, text in _ITEMS]
    rows = [_PROBLEMS[key] for key, _ in _ITEMS]
    columns: dict[str, list[Any]] = {
        # the plain prompt format's text (rlvr.tasks.format_prompt; the sandbox sits below tasks, and
        # tests/sandbox/test_sandbox.py checks the two agree)
        "prompts": [f"Q: {q.strip()}\nA:" for q, _, _ in rows],
        "answer": [a for _, a, _ in rows],
        "steps": [list(s) for _, _, s in rows],
        "question": [q for q, _, _ in rows],
        "problem_id": [f"probe-{key}" for key, _ in _ITEMS],
    }
    return completions, columns
