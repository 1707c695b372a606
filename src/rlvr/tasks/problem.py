"""The unit of data every part of rlvr shares: a `Problem` with its gold answer and gold `Step`s
(docs/architecture.md): tasks produce them; verifiers, rewards, trainers, evaluation and audit read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rlvr.verify.steps import Step

__all__ = ["Problem", "Step", "parse_gsm8k_solution", "GoldFormatError"]


@dataclass(frozen=True)
class Problem:
    """A problem with its gold final answer and gold steps.

    `answer` is the gold final answer (the text after `#### `); `solution` is the full worked
    solution in GSM8K's format (used for SFT and shown to reviewers); `steps` are its calculator
    annotations in order. `meta` holds task-specific facts (template, difficulty) as plain values.
    `messages` is the prompt of a conversational dataset (TRL's `prompt` as a list of
    `{"role", "content"}` messages), `None` for a plain question. `columns` holds the gold that is more
    than one answer string, as dataset columns of JSON values (a code problem's `test` and
    `entry_point`, an instruction prompt's `instruction_id_list` and `kwargs`): the trainer passes them
    to the rewards under these names, and the task's `verify` reads the ones its `Task.columns` names.
    """

    id: str
    question: str
    answer: str
    steps: list[Step]
    source: str
    solution: str = ""
    meta: dict[str, str | int | float] = field(default_factory=dict)
    messages: tuple[dict[str, str], ...] | None = None
    columns: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        """Number of gold steps (the difficulty axis used by evaluation breakdowns)."""
        return len(self.steps)


class GoldFormatError(ValueError):
    """A GSM8K-format solution without a `#### answer` line."""


_ANNOT = re.compile(r"<<([^<>=]*)=([^<>]*)>>")


def parse_gsm8k_solution(solution: str) -> tuple[str, list[Step]]:
    """Split a GSM8K solution into its final answer and its calculator-annotated steps.

    >>> parse_gsm8k_solution("She has 3+4=<<3+4=7>>7 cats.\\n#### 7")
    ('7', [Step(expr='3+4', result='7')])
    """
    head, sep, tail = solution.rpartition("####")
    if not sep or not tail.strip():
        raise GoldFormatError("no '#### <answer>' line")
    answer = tail.strip().replace(",", "")
    steps = [Step(m.group(1).strip(), m.group(2).strip()) for m in _ANNOT.finditer(head)]
    return answer, steps
