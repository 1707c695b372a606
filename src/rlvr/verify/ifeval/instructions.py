"""The 25 IFEval instruction types, one declaration each: arguments (a pydantic model), the check, the words a
generated prompt uses to ask for it, and how a generated prompt draws its arguments.

A check is `check(response, args, prompt) -> (followed, reason)` on the response as given (strict scoring;
`rlvr.verify.ifeval.score` runs the loose variants). Each follows IFEval's reference checker
(instructions.py in google-research, copied by lm-eval) except where docs/instructions.md, "Constraint rules",
says otherwise; the differences are marked "rlvr:" in `words` and `formats`, which hold the declarations.
"""

from rlvr.verify.ifeval import formats, words  # noqa: F401  (importing them declares the instructions)
from rlvr.verify.ifeval.base import REGISTRY, Args, Instruction, declare
from rlvr.verify.ifeval.formats import COMMAS, OPTIONS
from rlvr.verify.ifeval.words import capital_words

__all__ = ["COMMAS", "OPTIONS", "REGISTRY", "Args", "Instruction", "capital_words", "declare"]
