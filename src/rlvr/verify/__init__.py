"""Verifiers: pure string functions that read completions and say why (no torch, no I/O, bounded time).

`verify_answer` checks a final answer against a gold one; `extract_answer` is the same extractor for
majority voting; `verify_math` and `extract_math_answer` are their counterparts for LaTeX answers
(MATH-style, `rlvr.verify.latex`); `parse_steps`, `check_step` and `match_steps` read worked steps
for process rewards.
"""

from typing import TYPE_CHECKING

from rlvr.lazy import lazy_names
from rlvr.verify.answer import STATUSES, UNSCORED, Status, Verdict, extract_answer, parse_number, verify_answer
from rlvr.verify.numbers import format_number
from rlvr.verify.steps import ParsedStep, check_step, evaluate_expr, match_steps, parse_steps

if TYPE_CHECKING:
    from rlvr.verify.latex import SlowPath, extract_math_answer, verify_math

# The LaTeX verifier on first use: it needs mpmath, which the reward sandbox's jail does not hold (a
# jailed reward imports rlvr.verify for the numeric verifier and the step parser).
__getattr__ = lazy_names(__name__, {"rlvr.verify.latex": ["SlowPath", "extract_math_answer", "verify_math"]})

__all__ = [
    "STATUSES",
    "UNSCORED",
    "ParsedStep",
    "SlowPath",
    "Status",
    "Verdict",
    "check_step",
    "evaluate_expr",
    "extract_answer",
    "extract_math_answer",
    "format_number",
    "match_steps",
    "parse_number",
    "parse_steps",
    "verify_answer",
    "verify_math",
]
