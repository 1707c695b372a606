"""The LaTeX answer verifier for MATH-style tasks: `verify_math(completion, gold, *, allow_slow=False)`.

A pipeline you can read in one screen: `extract` (the last box or marked answer, refusing hidden and
macro-built ones), `parse` (canonicalise, tokenize, recursive descent to a small tuple tree), `compare`
(exact rationals, 50-digit numerics, random points, sets, tuples, intervals, matrices). The fast mode is
bounded (lengths, depth, number sizes are capped before anything is computed) and raises `SlowPath` where
only expensive work could decide; `allow_slow=True` does that work, meant for a process killed at a deadline.
Rules: docs/rewards.md, "Math answers (LaTeX)".
"""

from rlvr.verify.latex.compare import SlowPath
from rlvr.verify.latex.verify import extract_math_answer, verify_math

__all__ = ["SlowPath", "extract_math_answer", "verify_math"]
