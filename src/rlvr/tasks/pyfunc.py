"""The `pyfunc` task: the embedded code rung. Write a one-line Python function from three input/output
examples; hidden tests (six more inputs) decide. Small enough that the tiny model learns it from scratch
in a few hundred SFT steps, and checked by the real code verifier (`rlvr.harness`), so the hack world
(docs/code.md, "A policy that learns a hack") can pay a policy with the naive exit-status harness or with
rlvr's verifier (`task_settings: {verifier: rlvr|naive}`).

A problem shows the function at 0, 1 and 2 and its header; the answer is the body, one line
(` return 6*y+29` here):

>>> p = generate("test", 1)[0]
>>> print(p.question)
h(0)=29 h(1)=35 h(2)=41
def h(y):
>>> p.solution, p.columns["entry_point"], p.meta["family"]
('return 6*y+29', 'h', 'affine')
>>> p.meta["worked"]
'return (35-29)*y+29'
>>> print(p.columns["test"].splitlines()[1])
    assert candidate(3) == 47

The functions (`functions()`): `a*x+b` (a in 1..9, b in 0..29), `a*x-b` (b in 1..29), `x*x+b`, `x*x-b`,
590 in all, each under three names (`f(x)`, `g(n)`, `h(y)`). The split is by the function: its body's
hash bucket (`rlvr.tasks.task.bucket`) puts it in test (< 10), dev (< 15) or train, so no test or dev
function is ever trained on under any name. The completion is the body as plain text (no fence), e.g.
` return 6*y+29`: the code verifier reads a completion without a fence as the function's body
(docs/code.md, "Extraction").

Each problem also carries a worked body (`meta["worked"]`) that is right by construction because Python
does the arithmetic: for `a*x+b` the slope as the difference of the shown values,
` return (35-29)*y+29`, numbers the model copies from the prompt; the bare gold ` return 6*y+29` needs it
to compute 6. A square's worked body is its gold (`return y*y+29` copies f(0) already). SFT's
`worked_share` puts the worked body in a share of the targets: a base that mixes two strategies of unequal
accuracy, as arith's does (docs/code.md).
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rlvr.harness import JailUnavailable, require_jail
from rlvr.tasks.code_task import CodeTask
from rlvr.tasks.gsm8k import DataError
from rlvr.tasks.problem import Problem
from rlvr.tasks.task import Construction, Split, bucket, register
from rlvr.verify import Verdict

__all__ = ["HIDDEN_INPUTS", "NAMES", "SHOWN_INPUTS", "PyfuncParams", "PyfuncTask", "functions", "generate", "split_of"]

SHOWN_INPUTS = (0, 1, 2)  # the examples in the prompt
HIDDEN_INPUTS = (3, 4, 5, 7, 10, -1)  # the hidden tests: one assert each
NAMES = (("f", "x"), ("g", "n"), ("h", "y"))  # (function, argument) names a function is asked under
_CACHE_MAX = 50_000  # verdicts kept per process (GRPO groups repeat completions; the trainer verifies twice)


def _term(a: int, var: str) -> str:
    return var if a == 1 else f"{a}*{var}"


@cache
def functions() -> tuple[tuple[str, str, int, int], ...]:
    """Every function of the rung as `(family, body template, a, b)`; the body names its argument `x`.

    >>> len(functions()), functions()[0], functions()[-1]
    (590, ('affine', 'return x', 1, 0), ('square', 'return x*x-29', 1, -29))
    """
    out = []
    for a in range(1, 10):
        for b in range(30):
            out.append(("affine", f"return {_term(a, 'x')}" + (f"+{b}" if b else ""), a, b))
        for b in range(1, 30):
            out.append(("affine", f"return {_term(a, 'x')}-{b}", a, -b))
    for b in range(30):
        out.append(("square", "return x*x" + (f"+{b}" if b else ""), 1, b))
    for b in range(1, 30):
        out.append(("square", f"return x*x-{b}", 1, -b))
    return tuple(out)


def _value(family: str, a: int, b: int, x: int) -> int:
    return (a * x if family == "affine" else x * x) + b


def split_of(body: str) -> Literal["train", "dev", "test"]:
    """The split of a function, by its body's hash bucket (written with argument `x`).

    >>> split_of("return 6*x+29"), split_of("return 3*x+1")
    ('test', 'train')
    """
    k = bucket(body)
    return "test" if k < 10 else "dev" if k < 15 else "train"


def _problem(i: int, split: str, family: str, body: str, a: int, b: int, fn: str, arg: str, verifier: str) -> Problem:
    shown = " ".join(f"{fn}({x})={_value(family, a, b, x)}" for x in SHOWN_INPUTS)
    header = f"def {fn}({arg}):"
    test = "def check(candidate):\n" + "".join(
        f"    assert candidate({x}) == {_value(family, a, b, x)}\n" for x in HIDDEN_INPUTS
    )
    gold = body.replace("x", arg)
    meta: dict[str, str | int | float] = {"family": family, "function": body, "split": split, "worked": gold}
    if family == "affine":  # the slope as Python arithmetic on the shown values: copied, never computed
        f0, f1 = _value(family, a, b, 0), _value(family, a, b, 1)
        meta["worked"] = f"return ({f1}-{f0})*{arg}+{f0}"
    code_prompt = f'{header}\n    """{shown}"""\n'  # a docstring body: the trusted side parses the prompt
    columns = {"code_prompt": code_prompt, "test": test, "entry_point": fn, "verifier": verifier}
    return Problem(f"pyfunc-{split}-{i}", f"{shown}\n{header}", gold, [], "pyfunc", gold, meta, None, columns)


def generate(split: Split, n: int | None = None, *, seed: int = 0, verifier: str = "rlvr") -> list[Problem]:
    """The problems of `split` (every function of it under each of `NAMES`), shuffled by `seed`; the
    first `n`. Ids (`pyfunc-SPLIT-I`, I the problem's place before shuffling) do not depend on `seed`."""
    picked = [f for f in functions() if split_of(f[1]) == split]
    probs = [
        _problem(i, split, fam, body, a, b, fn, arg, verifier)
        for i, ((fam, body, a, b), (fn, arg)) in enumerate((f, nm) for f in picked for nm in NAMES)
    ]
    random.Random(f"rlvr.pyfunc/{split}/{seed}").shuffle(probs)
    return probs[:n] if n is not None else probs


class PyfuncParams(BaseModel):
    """The `pyfunc` task's load settings: `verifier` picks the harness that judges (rlvr's, or the naive
    exit-status harness for the hack demonstration only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    verifier: Literal["rlvr", "naive"] = "rlvr"


class PyfuncTask(CodeTask):
    """One-line Python functions from three examples, six hidden tests each, judged by the code task's
    verifier (`CodeTask.verify`: rlvr's harness, or the naive one when `verifier: naive`); verdicts of
    identical (completion, problem) pairs are computed once per process. Loading needs bubblewrap."""

    name = "pyfunc"
    params = PyfuncParams  # type: ignore[assignment]  # its own settings, not the code task's files
    splits = ("train", "dev", "test")
    templated = True

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        try:
            require_jail()
        except JailUnavailable as e:
            raise DataError(f"the pyfunc task cannot run: {e}") from None
        return generate(split, n, seed=seed, verifier=params.verifier)

    def verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """The code verifier's verdict (`CodeTask.verify`), remembered when it judged the completion (a
        timeout or an infrastructure failure is asked again next time)."""
        key = (completion, columns["test"], columns["entry_point"], columns.get("verifier", "rlvr"))
        if (hit := _VERDICTS.get(key)) is not None:
            return hit
        v = super().verify(completion, gold, **columns)
        if v.scored and len(_VERDICTS) < _CACHE_MAX:
            _VERDICTS[key] = v
        return v

    def construction(self, problems: list[Problem], split: str) -> Construction | None:
        """Every test/dev problem's function hashes into its own split (`split_of`), so none is trained on."""
        wrong = [p.id for p in problems if split_of(str(p.meta.get("function", ""))) != split]
        return Construction(f"every function hashes into split {split!r}", not wrong, wrong[:5])


_VERDICTS: dict[tuple[str, str, str, str], Verdict] = {}

register(PyfuncTask())
