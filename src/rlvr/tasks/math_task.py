"""The `math` task: competition math with LaTeX answers. MATH-500 (PRM800K's split of Hendrycks et al.'s
MATH test set, MIT licence) is vendored as the test split; train and dev come from a MATH-format JSONL of
your own (`problem`, `solution`, `answer`; AIME and AMC are MAA-copyrighted and load this way too, never
vendored). The verifier is `rlvr.verify.verify_math` under a hard deadline (`verify_math_answer`): its
fast path runs in-process, and whatever needs more (a sympy comparison, a huge power) runs in a pre-started
worker process killed at the deadline (`rlvr.procs`), the verdict then "timeout" with reward None.
Rules and figures: docs/rewards.md ("Math answers"); the task: docs/tasks.md.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rlvr.procs import LineProcess, WorkerError, WorkerPool, WorkerTimeout, python_worker_argv
from rlvr.tasks.gsm8k import DataError, jsonl_rows, unique_problems
from rlvr.tasks.problem import Problem
from rlvr.tasks.task import Split, Task, hashed_split, register
from rlvr.verify import SlowPath, Verdict, verify_math
from rlvr.verify.probes import Probe, latex_probes

__all__ = [
    "BOXED_INSTRUCTION",
    "DEADLINE_S",
    "MathParams",
    "MathTask",
    "load_math_jsonl",
    "math500_path",
    "verify_math_answer",
]

DEADLINE_S = 5.0  # the slow path's hard wall-clock limit per verdict (math-verify's default is 5 s too)
BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
_SLOW_FN = "rlvr.verify.latex:verify_math"
_POOL_SIZE = 2  # a spare worker starts while a killed one is replaced, so a timeout never delays the next call
_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def _start_worker() -> LineProcess:
    return LineProcess(python_worker_argv(["rlvr.verify.latex"]))


def _slow_pool() -> WorkerPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool(_start_worker, size=_POOL_SIZE, max_reply_bytes=1 << 16)
        return _pool


def verify_math_answer(completion: str, gold: str, *, deadline_s: float = DEADLINE_S) -> Verdict:
    """`verify_math(completion, gold)` with a hard deadline, from any thread or process.

    The fast path answers in-process (almost every case, in microseconds). A comparison that needs the
    slow path runs in a worker process that is killed at `deadline_s`: the verdict is then status
    "timeout" (reward None), and "infra_error" if the worker could not run at all.

    >>> verify_math_answer("so the answer is $\\\\boxed{\\\\dfrac{1}{2}}$", "\\\\frac12").status
    'correct'
    """
    try:
        return verify_math(completion, gold)
    except SlowPath:
        pass
    try:
        reply = _slow_pool().request(
            {"fn": _SLOW_FN, "args": [completion, gold], "kwargs": {"allow_slow": True}, "cpu_s": deadline_s + 1},
            deadline_s,
        )
    except WorkerTimeout:
        return Verdict(False, None, f"no verdict within {deadline_s:g} s", "timeout")
    except WorkerError as e:
        return Verdict(False, None, f"the verifier's worker failed: {e}", "infra_error")
    if not reply.get("ok"):
        return Verdict(False, None, f"the verifier failed: {reply.get('error')}", "infra_error")
    return Verdict(**reply["value"])


def math500_path() -> Path:
    """The vendored MATH-500 file inside the installed package.

    >>> math500_path().name
    'test.jsonl'
    """
    return Path(str(resources.files("rlvr.tasks") / "data" / "math500" / "test.jsonl"))


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and key == "answer":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field '{key}': missing or not a non-empty string")
    return value.strip()


def _gold_of(row: dict[str, Any], where: str) -> str:
    """The row's `answer`, else the last `\\boxed{}` of its `solution` (the original MATH format)."""
    if "answer" in row:
        return _text(row, "answer", where)
    from rlvr.verify import extract_math_answer

    boxed, why = extract_math_answer(_text(row, "solution", where))
    if boxed is None:
        raise DataError(f"{where}: field 'answer': missing, and the solution has no final \\boxed{{}} ({why})")
    return boxed


def load_math_jsonl(path: Path, *, limit: int | None = None, instruction: str = BOXED_INSTRUCTION) -> list[Problem]:
    """Problems of a MATH-format JSONL file (`problem`, `solution`, `answer`; `unique_id`, `subject`,
    `level` kept when present). Every gold must round-trip through the verifier (`\\boxed{gold}` verified
    against itself is correct): a gold it cannot read is a DataError naming the line, never a problem
    that silently scores 0. `instruction` is appended to each question (the `\\boxed{}` request)."""
    rows: list[tuple[int, Problem]] = []
    for where, lineno, row in jsonl_rows(path, limit=limit):
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object")
        question, gold = _text(row, "problem", where), _gold_of(row, where)
        check = verify_math_answer(f"\\boxed{{{gold}}}", gold)
        if not check.correct:
            raise DataError(
                f"{where}: field 'answer': the verifier cannot read this gold ({check.reason}): {gold[:80]}"
            )
        meta = {k: row[k] for k in ("subject", "level") if isinstance(row.get(k), str | int)}
        pid = str(row.get("unique_id") or f"{path.stem}-{lineno}")
        text = f"{question}\n\n{instruction}" if instruction else question
        solution = str(row.get("solution", ""))
        columns = {"question": question}  # what the verifier reads to know which variable is asked
        rows.append((lineno, Problem(pid, text, gold, [], str(path), solution=solution, meta=meta, columns=columns)))
    return unique_problems(rows, path, "problem, solution, answer", limit)


# "Find $k$", "what is $b$?", "the largest value of $x$": the one variable a question asks for
_ASKED = re.compile(
    r"(?i)(?:find|compute|determine|solve for|what is|what's|value of|evaluate|calculate)\s+(?:all\s+|the\s+"
    r"(?:positive\s+|smallest\s+|largest\s+|greatest\s+|least\s+)?(?:value|values|integer|number)s?\s+of\s+)?"
    r"\$([a-zA-Z])\$"
)
_NAMED = re.compile(r"^\s*([a-zA-Z])\s*=(?!=)")  # an answer that names its variable: `b = 41`


def asked_variables(question: str) -> frozenset[str]:
    """The variables a question asks for by name (empty when it names none: nothing to check).

    >>> sorted(asked_variables("If $f(q(1)) = -3$, what is $b$?")), sorted(asked_variables("Find $x+y$."))
    (['b'], [])
    """
    return frozenset(_ASKED.findall(question))


@functools.cache
def _math500_asked() -> dict[str, frozenset[str]]:
    """MATH-500's gold -> the variables its questions ask for, for a call without the question: kept only
    where every question with that gold names one (else nothing is known, and nothing is refused)."""
    by_gold: dict[str, list[frozenset[str]]] = {}
    for line in math500_path().read_text().splitlines():
        row = json.loads(line)
        by_gold.setdefault(row["answer"].strip(), []).append(asked_variables(row["problem"]))
    return {g: frozenset().union(*sets) for g, sets in by_gold.items() if all(sets)}


def other_variable(verdict: Verdict, gold: str, question: str | None) -> Verdict:
    """A correct verdict on `b = 41` becomes wrong when the question asks for another variable (`a`):
    the same value for another variable is not the answer. A gold that names its variable is the
    verifier's own rule; a question (or MATH-500 gold) that names none leaves the verdict as it is."""
    named = _NAMED.match(verdict.parsed or "") if verdict.correct and "=" not in gold else None
    if named is None:
        return verdict
    asked = asked_variables(question) if question else _math500_asked().get(gold.strip(), frozenset())
    if not asked or named[1] in asked:
        return verdict
    return Verdict(False, verdict.parsed, f"value of {named[1]}, not {', '.join(sorted(asked))}", "wrong")


class MathParams(BaseModel):
    """The `math` task's load settings: `math_file` is a MATH-format JSONL for train and dev (dev is
    the 5% of it whose question hashes into bucket < 5); `test_file` replaces MATH-500 as the test split;
    `instruction` follows each question."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    math_file: str | None = None
    test_file: str | None = None  # another MATH-format test set (AIME, AMC: not vendored) instead of MATH-500
    instruction: str = BOXED_INSTRUCTION


class MathTask(Task):
    """Competition math with LaTeX answers: `test` is the vendored MATH-500; `train` and `dev` read
    `math_file` (a MATH-format JSONL of your own). No private holdout."""

    name = "math"
    params = MathParams
    columns = ("question",)

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        if split == "test":
            path = Path(params.test_file) if params.test_file else math500_path()
            return load_math_jsonl(path, limit=n, instruction=params.instruction)
        if params.math_file is None:
            raise DataError(
                f"math has no vendored {split} split (MATH-500 is its test split): give `math_file:` "
                "a MATH-format JSONL (problem, solution, answer)"
            )
        return hashed_split(load_math_jsonl(Path(params.math_file), instruction=params.instruction), split, n)

    def verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """`verify_math_answer`: the LaTeX answer verifier under a hard deadline; with the problem's
        `question` (or, without it, MATH-500's questions for this gold), the value of a variable the
        question does not ask for is wrong (`other_variable`)."""
        return other_variable(verify_math_answer(completion, gold), gold, columns.get("question"))

    def probes(self, problem: Problem) -> list[Probe]:
        """LaTeX rewritings, wrong values and hacks of the gold (`rlvr.verify.probes.latex_probes`)."""
        return latex_probes(problem.answer)


register(MathTask())
