"""The trusted side of a HumanEval test: its `check(candidate)` split into tests, run in the host process.

HumanEval's `test` string defines `check(candidate)` (asserts; sometimes imports, loops, METADATA) and
may rely on helpers that come with the prompt (HumanEval/32's `poly`, /38's `encode_cyclic`). Here:
- the prompt's own top-level statements other than the stub of the entry point (its imports and
  helpers) and the test's top-level statements other than calls of `check` run in a fresh namespace of
  the TRUSTED process, so the tests use the prompt's helpers, never the solution's versions;
- each top-level statement of `check` that mentions `candidate` (or the entry point by name, or a
  name that an earlier test assigned) is one test; the others (imports, set-up, `assert True`) run but
  do not count, and one of them that fails anyway counts as a failed test (`setup_errors`). A test with no `check`
  (top-level asserts, MBPP's style) is read as the body of one. `check` is rewritten so that each statement runs under
  its own try: any exception (an AssertionError, the solution's error, a timeout) fails that test and
  the next one runs; `Abort` (the problem's deadline, an infrastructure failure) ends the run;
- `candidate` is whatever callable the caller passes (the verifier's proxy to the jailed solution); the
  entry point's own name is bound to it too, since a test may call the function by name (HumanEval/33).

>>> t = TrustedCheck.build("def f(x):\\n    pass\\n", "def check(candidate):\\n    assert candidate(1) == 2\\n"
...                        "    assert True\\n    assert candidate(2) == 3\\n", "f")
>>> t.total, t.run(lambda x: x + 1, lambda i: None).passed
(2, 2)
>>> t.run(lambda x: 2, lambda i: None).failures
[(2, 'AssertionError')]
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Abort", "CheckRun", "ProblemError", "SolutionFailure", "TrustedCheck"]

_HOOK = "_rlvr_test"


class Abort(BaseException):  # noqa: N818 - a control-flow signal, not an error of the test
    """Ends a run of `check` at once (the problem's deadline passed, or the infrastructure failed);
    a BaseException so that a test's own `except Exception` cannot swallow it."""


class SolutionFailure(Exception):
    """Raised by a candidate proxy when the solution failed (its message says how); a test that gets it fails."""


class ProblemError(ValueError):
    """The problem itself is unusable: its test or prompt does not compile, or defines no `check`."""


@dataclass
class CheckRun:
    """What one run of `check` found: tests passed, and (test number from 1, error summary) for each failure."""

    passed: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)
    setup_errors: list[str] = field(default_factory=list)
    aborted: Abort | None = None  # what ended the run early, if anything


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _summary(exc: BaseException) -> str:
    if isinstance(exc, SolutionFailure):
        return str(exc)[:300]
    text = type(exc).__name__
    detail = str(exc)[:200] if not isinstance(exc, AssertionError) else ""
    return f"{text}: {detail}" if detail else text


def _wrap(stmt: ast.stmt, index: int | None) -> ast.stmt:
    """`try: _rlvr_test(index, None); STMT / except (Abort, KeyboardInterrupt): raise / except BaseException as e:
    _rlvr_test(index, e) / else: _rlvr_test(index, True)` (index None for a set-up statement)."""
    tpl = ast.parse(
        f"try:\n    {_HOOK}({index!r}, None)\n    pass\nexcept (_rlvr_Abort, KeyboardInterrupt):\n    raise\n"
        f"except BaseException as _rlvr_e:\n    {_HOOK}({index!r}, _rlvr_e)\nelse:\n    {_HOOK}({index!r}, True)\n"
    ).body[0]
    assert isinstance(tpl, ast.Try)
    tpl.body[1] = stmt
    for node in ast.walk(tpl):
        ast.copy_location(node, stmt)
    return tpl


@dataclass(frozen=True)
class TrustedCheck:
    """A problem's test, compiled once: `run(candidate, begin)` runs it in a fresh trusted namespace."""

    setup: Any  # code object: the prompt's helpers and the test's top-level statements
    check: Any  # code object defining the rewritten `check`
    total: int
    entry: str

    @classmethod
    def build(cls, prompt: str, test: str, entry: str) -> TrustedCheck:
        try:
            prompt_tree, test_tree = ast.parse(prompt), ast.parse(test)
        except (SyntaxError, ValueError) as e:
            raise ProblemError(f"the problem's prompt or test does not parse: {e}") from e
        checks = [n for n in test_tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
        if checks:
            chk = checks[-1]
        else:  # top-level asserts (MBPP's test_list style): they become check's body
            chk = ast.parse("def check(candidate):\n    pass\n").body[0]  # type: ignore[assignment]
            chk.body, test_tree.body = test_tree.body or chk.body, []
        if not chk.args.args:
            raise ProblemError("check() takes no candidate")
        cand = chk.args.args[0].arg

        def is_call_of_check(n: ast.stmt) -> bool:
            return isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and _mentions(n.value.func, "check")

        helpers = [
            n
            for n in prompt_tree.body
            if not (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry)
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        ]
        rest = [n for n in test_tree.body if n is not chk and not is_call_of_check(n)]
        counted = 0
        body: list[ast.stmt] = []
        tainted = {cand, entry}  # names that hold what the solution returned (`r = candidate(x)`; `assert r == 3`)
        for stmt in chk.body:
            is_test = any(_mentions(stmt, name) for name in tainted)
            is_test = is_test and not isinstance(stmt, ast.FunctionDef | ast.ClassDef)
            if is_test:
                tainted |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            counted += is_test
            body.append(_wrap(stmt, counted if is_test else None))
        chk.body = body
        try:
            setup = compile(ast.fix_missing_locations(ast.Module(helpers + rest, [])), "<test>", "exec")
            check = compile(ast.fix_missing_locations(ast.Module([chk], [])), "<test>", "exec")
        except (SyntaxError, ValueError, TypeError) as e:
            raise ProblemError(f"the problem's test does not compile: {e}") from e
        if counted == 0:
            raise ProblemError(f"the test has no statement that calls the candidate (or {entry})")
        return cls(setup, check, counted, entry)

    def run(self, candidate: Callable[..., Any], begin: Callable[[int | None], None]) -> CheckRun:
        """Run every test against `candidate`; `begin(i)` is called before test i (None: a set-up
        statement) and may raise `Abort`, which ends the run (kept in `aborted`). Raises `ProblemError`
        if the test's own set-up (the prompt's helpers, the test's top level) fails."""
        out = CheckRun()

        def hook(index: int | None, what: Any) -> None:
            if what is None:
                begin(index)
            elif what is True:
                out.passed += index is not None
            elif index is None:
                out.setup_errors.append(_summary(what))
            else:
                out.failures.append((index, _summary(what)))

        ns: dict[str, Any] = {"__name__": "__test__", _HOOK: hook, "_rlvr_Abort": Abort}
        try:
            exec(self.setup, ns)
        except Exception as e:
            raise ProblemError(f"the problem's test set-up fails: {_summary(e)}") from e
        ns[self.entry] = candidate  # a test may name the function itself (HumanEval/33): the solution's, via the proxy
        exec(self.check, ns)
        try:
            ns["check"](candidate)
        except Abort as e:
            out.aborted = e
        except Exception as e:  # outside every wrapped statement: check() itself cannot be called
            raise ProblemError(f"the problem's check() cannot run: {_summary(e)}") from e
        return out
