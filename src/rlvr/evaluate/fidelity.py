"""Reasoning fidelity: is the chain of thought sound, not only the final answer? Per completion, its
parsed steps against the gold steps (trace validity, chain-length deviation, process-step ratio), overall
and by gold step count, beside CoT pass@1; docs/evaluation.md ("Fidelity") defines each.
"""

from __future__ import annotations

import numpy as np

from rlvr.runs.eval import Fidelity, FidelityBlock
from rlvr.tasks import Problem
from rlvr.verify import match_steps, parse_number, parse_steps

__all__ = ["trace_fidelity", "fidelity_metrics"]


def trace_fidelity(text: str, parsed: str | None, gold_steps) -> tuple[bool, int, float]:
    """(trace valid, |generated - gold| steps, process-step ratio) of one completion.

    >>> from rlvr.tasks import Step
    >>> trace_fidelity("3+4=<<3+4=7>>7\\n#### 7", "7", [Step("3+4", "7"), Step("7*2", "14")])
    (True, 1, 1.0)
    >>> trace_fidelity("3+4=<<3+4=8>>8\\n#### 8", "8", [Step("3+4", "7")])
    (False, 0, 0.0)
    """
    steps = parse_steps(text)
    dev = abs(len(steps) - len(gold_steps))
    if not steps:
        return False, dev, 0.0
    matched = match_steps(steps, gold_steps)
    ratio = sum(matched) / len(steps)
    last = parse_number(steps[-1].result)
    consistent = parsed is not None and last is not None and parse_number(parsed) == last
    return all(s.valid for s in steps) and consistent, dev, ratio


def fidelity_metrics(problems: list[Problem], scored) -> Fidelity:
    """eval.json's `fidelity` over all samples, overall and by gold step count; `scored` is a runner.Scored."""
    rows = []
    for i, p in enumerate(problems):
        for j, text in enumerate(scored.texts[i]):
            valid, dev, ratio = trace_fidelity(text, scored.parsed[i][j], p.steps)
            rows.append((p.n_steps, bool(scored.correct[i, j]), valid, dev, ratio))
    arr = np.array(rows, dtype=np.float64).reshape(-1, 5)

    def block(m: np.ndarray) -> FidelityBlock:
        a = arr[m]
        return FidelityBlock(
            n_completions=int(m.sum()),
            cot_pass_at_1=float(a[:, 1].mean()),
            trace_validity=float(a[:, 2].mean()),
            chain_length_deviation=float(a[:, 3].mean()),
            process_step_ratio=float(a[:, 4].mean()),
            valid_given_correct=float(a[a[:, 1] == 1, 2].mean()) if (a[:, 1] == 1).any() else float("nan"),
        )

    return Fidelity(
        overall=block(np.ones(len(arr), dtype=bool)),
        by_steps={str(int(s)): block(arr[:, 0] == s) for s in np.unique(arr[:, 0])},
    )
