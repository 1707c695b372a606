"""Code rewards in TRL's convention, over a code problem's gold columns (`code_prompt`, `test`,
`entry_point`: the `code` task's `Problem.columns`, or a HumanEval-style dataset's own): `tests_passed`
is the share of tests passed (partial credit); `outcome` (all tests pass) is the task's verdict.
A completion the verifier could not judge (timeout, jail failure) gets None, never 0. docs/code.md."""

from __future__ import annotations

from typing import Any

from rlvr.harness import naive_verify_humaneval, verify_humaneval
from rlvr.rewards.columns import column, completion_text

__all__ = ["tests_passed"]


def tests_passed(
    completions: list[Any],
    code_prompt: list[str],
    test: list[str],
    entry_point: list[str],
    verifier: list[str] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """The share of the problem's tests the completion's code passes, in [0, 1]; None when unscored.
    A `verifier` column of "naive" judges with the exit-status harness (the hack demonstration)."""
    n = len(completions)
    harnesses = column(verifier, "verifier", n) if verifier is not None else ["rlvr"] * n
    rows = zip(completions, column(code_prompt, "code_prompt", n), column(test, "test", n),
               column(entry_point, "entry_point", n), harnesses, strict=True)  # fmt: skip
    return [
        (naive_verify_humaneval if h == "naive" else verify_humaneval)(
            completion_text(c), {"prompt": p, "test": t, "entry_point": e}
        ).reward
        for c, p, t, e, h in rows
    ]
