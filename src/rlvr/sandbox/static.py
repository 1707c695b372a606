"""Stage 1 of the sandbox: a static (AST) check of candidate reward source, and the allowlists that the
in-jail worker enforces again at run time (stage 3). A filter for honest mistakes and obvious escapes,
not a security boundary; it runs on untrusted text, so it never executes or imports anything, bounds
the input before parsing, and walks the tree iteratively (`ast.walk`)."""

from __future__ import annotations

import ast
import keyword
import math
import string
from dataclasses import dataclass

__all__ = [
    "ALLOWED_MODULES",
    "DEFAULT_RANGE",
    "ENTRY",
    "FROM_ONLY",
    "HIDDEN_ATTRS",
    "MAX_SOURCE_CHARS",
    "SAFE_BUILTINS",
    "StaticResult",
    "check_entry_name",
    "static_check",
]

ENTRY = "reward"  # the top-level function a candidate must define, unless the caller names another
DEFAULT_RANGE = (-10.0, 10.0)  # reward range when the candidate declares no `RANGE = (lo, hi)`
MAX_SOURCE_CHARS = 50_000
MAX_LINES = 1_000
MAX_NODES = 20_000
MAX_RANGE_ABS = 1e6
MAX_REPORTED = 5  # violations listed in a rejection reason

# Importable modules (each is handed to the candidate as a read-only namespace of its public,
# non-module attributes, so `re.enum.sys` and friends do not exist in the sandbox).
ALLOWED_MODULES = frozenset(
    "bisect collections collections.abc decimal difflib fractions functools heapq itertools json math re "
    "rlvr.verify statistics string unicodedata".split()
)
# Modules that may only be used as `from M import NAME` with these names.
FROM_ONLY: dict[str, frozenset[str]] = {
    "__future__": frozenset({"annotations"}),
    "typing": frozenset(
        "Any Callable Dict FrozenSet Iterable Iterator List Mapping Optional Sequence Set Tuple Union".split()
    ),
}
# Public attributes hidden from a module's namespace (attribute/field traversal by string).
# rlvr.verify's LaTeX verifier needs mpmath, which the jail does not hold (its names load on first use)
HIDDEN_ATTRS: dict[str, frozenset[str]] = {
    "string": frozenset({"Formatter"}),
    "rlvr.verify": frozenset({"SlowPath", "extract_math_answer", "verify_math"}),
}

# The candidate's `__builtins__` (plus a guarded `__import__`); everything else is absent.
SAFE_BUILTINS = frozenset(
    "abs all any ascii bin bool bytes callable chr dict divmod enumerate filter float format frozenset "
    "hash hex int isinstance issubclass iter len list map max min next oct ord pow print range repr "
    "reversed round set slice sorted str sum tuple zip ArithmeticError AssertionError AttributeError "
    "Exception IndexError KeyError LookupError NotImplementedError OverflowError RecursionError "
    "RuntimeError StopIteration TypeError UnicodeError ValueError ZeroDivisionError True False None".split()
)

# Names that may never appear, even as a local variable (they name escape hatches).
BANNED_NAMES = frozenset(
    "eval exec compile open getattr setattr delattr hasattr globals locals vars dir breakpoint input help "
    "memoryview type object super classmethod staticmethod property exit quit copyright credits license".split()
)
ALLOWED_DUNDERS = frozenset({"__name__"})
BANNED_ATTRS = frozenset({"format_map", "vformat", "get_field", "Formatter", "mro"})
BANNED_ATTR_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_")
BANNED_NODES: dict[type, str] = {
    ast.ClassDef: "class definitions are not allowed",
    ast.AsyncFunctionDef: "async functions are not allowed",
    ast.Await: "await is not allowed",
    ast.AsyncFor: "async for is not allowed",
    ast.AsyncWith: "async with is not allowed",
    ast.Global: "global statements are not allowed (rewards must be pure functions)",
    ast.Match: "match statements are not allowed",
}


@dataclass(frozen=True)
class StaticResult:
    """Outcome of the static check: `ok`, a reason (violations, or "ok"), and the declared range."""

    ok: bool
    reason: str
    range: tuple[float, float] = DEFAULT_RANGE


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _number(node: ast.expr) -> float | None:
    """A numeric literal (optionally signed), else None."""
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
        node = node.operand
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return sign * float(value)
    return None


def _format_traverses(template: str, depth: int = 0) -> bool:
    """Whether a `str.format` template reaches into attributes or items (`{0.__class__}`, `{x[0]}`)."""
    if depth > 2:
        return True
    try:
        for _, field, spec, _ in string.Formatter().parse(template):
            if field is not None and ("." in field or "[" in field):
                return True
            if spec and "{" in spec and _format_traverses(spec, depth + 1):
                return True
    except ValueError:
        return True  # malformed template: it would fail anyway
    return False


def _identifiers(node: ast.AST) -> list[str]:
    """The identifiers a node binds or names (not attribute names)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.FunctionDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg is not None:
        return [node.arg]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, ast.Nonlocal):
        return list(node.names)
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    return []


def _check_import(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return ["relative imports are not allowed"]
        mod = node.module or ""
        names = [a.name for a in node.names]
        if mod in FROM_ONLY:
            bad = [n for n in names if n not in FROM_ONLY[mod]]
            return [f"from {mod} import {', '.join(bad)} is not allowed"] if bad else []
        if mod not in ALLOWED_MODULES:
            return [f"import of {mod!r} is not allowed"]
        if "*" in names:
            return ["star imports are not allowed"]
        hidden = HIDDEN_ATTRS.get(mod, frozenset())
        return [f"{mod}.{n} is not allowed" for n in names if n in hidden or n.startswith("_")]
    out = []
    for alias in node.names:
        if alias.name in FROM_ONLY:
            out.append(f"use `from {alias.name} import ...` (only some names are allowed)")
        elif alias.name not in ALLOWED_MODULES:
            out.append(f"import of {alias.name!r} is not allowed")
    return out


def check_entry_name(function: str) -> str:
    """The entry point's name if it can name a top-level function, else raise ValueError (a caller's
    mistake, e.g. in a config, not the candidate's).

    >>> check_entry_name("score")
    'score'
    >>> check_entry_name("my.score")
    Traceback (most recent call last):
    ...
    ValueError: the reward function name must be a Python identifier, got 'my.score'
    """
    if not isinstance(function, str) or not function.isidentifier() or keyword.iskeyword(function):
        raise ValueError(f"the reward function name must be a Python identifier, got {function!r}")
    return function


def _check_signature(fn: ast.FunctionDef, entry: str) -> list[str]:
    a = fn.args
    params = a.posonlyargs + a.args
    if a.posonlyargs or not params or params[0].arg != "completions" or a.kwarg is None:
        return [f"`{entry}` must have the signature ({entry}(completions, **kwargs))"]
    if fn.decorator_list:
        return [f"`{entry}` must not be decorated"]
    return []


def _check_node(node: ast.AST) -> list[str]:
    """Violations of one node (its children are visited separately)."""
    out: list[str] = []
    out += [msg for kind, msg in BANNED_NODES.items() if isinstance(node, kind)]
    if isinstance(node, ast.Import | ast.ImportFrom):
        out += _check_import(node)
    for name in _identifiers(node):
        if name in BANNED_NAMES:
            out.append(f"use of {name!r} is not allowed")
        elif _is_dunder(name) and name not in ALLOWED_DUNDERS:
            out.append(f"dunder name {name!r} is not allowed")
    if isinstance(node, ast.Attribute):
        attr = node.attr
        if attr in BANNED_ATTRS or attr.startswith(BANNED_ATTR_PREFIXES):
            out.append(f"attribute .{attr} is not allowed")
        elif attr == "format":
            recv = node.value
            if not (isinstance(recv, ast.Constant) and isinstance(recv.value, str)):
                out.append(".format is only allowed on a string literal")
            elif _format_traverses(recv.value):
                out.append("format fields may not reach into attributes or items ({x.attr}, {x[i]})")
    return out


def _check_range(tree: ast.Module) -> tuple[list[str], tuple[float, float]]:
    stores = [
        n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "RANGE" and not isinstance(n.ctx, ast.Load)
    ]
    decls = [
        s for s in tree.body if isinstance(s, ast.Assign) and [getattr(t, "id", None) for t in s.targets] == ["RANGE"]
    ]
    if not stores:
        return [], DEFAULT_RANGE
    if len(stores) != 1 or len(decls) != 1:
        return ["RANGE must be assigned exactly once, at module level: RANGE = (lo, hi)"], DEFAULT_RANGE
    value = decls[0].value
    if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == 2:
        lo, hi = _number(value.elts[0]), _number(value.elts[1])
        if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
            if lo < hi and max(abs(lo), abs(hi)) <= MAX_RANGE_ABS:
                return [], (lo, hi)
    return [f"RANGE must be two numeric literals lo < hi with |lo|, |hi| <= {MAX_RANGE_ABS:g}"], DEFAULT_RANGE


def _check_entry(tree: ast.Module, entry: str) -> list[str]:
    defs = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == entry]
    if not defs:
        return [f"no top-level function named `{entry}`: define `def {entry}(completions, **kwargs)`"]
    binds = sum(
        1
        for n in ast.walk(tree)
        if (isinstance(n, ast.FunctionDef) and n.name == entry)
        or (isinstance(n, ast.Name) and n.id == entry and not isinstance(n.ctx, ast.Load))
        or (isinstance(n, ast.alias) and (n.asname or n.name) == entry)
    )
    if len(defs) > 1 or binds > 1:
        return [f"`{entry}` must be defined exactly once and never rebound"]
    return _check_signature(defs[0], entry)


def static_check(source: str, function: str = ENTRY) -> StaticResult:
    """Check candidate source without running it (see docs/sandbox.md for the rules). `function`
    names the entry point, a top-level `def function(completions, **kwargs)`; other top-level
    functions are helpers. A name that is not an identifier raises ValueError.

    >>> static_check("def reward(completions, **kwargs):\\n    return [0.0 for _ in completions]").ok
    True
    >>> static_check("import os\\ndef reward(completions, **kwargs):\\n    return []").reason
    "line 1: import of 'os' is not allowed"
    >>> static_check("def score(completions, **kwargs):\\n    return []", function="score").ok
    True
    """
    entry = check_entry_name(function)
    if not isinstance(source, str):
        return StaticResult(False, "source must be a str")
    if len(source) > MAX_SOURCE_CHARS or source.count("\n") >= MAX_LINES:
        return StaticResult(False, f"source too large (limits: {MAX_SOURCE_CHARS} characters, {MAX_LINES} lines)")
    try:
        tree = ast.parse(source, "<candidate>")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        detail = f"line {e.lineno}: {e.msg}" if isinstance(e, SyntaxError) else type(e).__name__
        return StaticResult(False, f"does not parse ({detail})")
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        return StaticResult(False, f"source too complex ({len(nodes)} syntax nodes, limit {MAX_NODES})")
    problems: list[tuple[int, str]] = []
    for node in nodes:
        problems += [(getattr(node, "lineno", 0), msg) for msg in _check_node(node)]
    range_problems, declared = _check_range(tree)
    problems += [(0, msg) for msg in range_problems + _check_entry(tree, entry)]
    if problems:
        problems = sorted(set(problems))
        shown = [f"line {ln}: {msg}" if ln else msg for ln, msg in problems[:MAX_REPORTED]]
        more = f" (+{len(problems) - MAX_REPORTED} more)" if len(problems) > MAX_REPORTED else ""
        return StaticResult(False, "; ".join(shown) + more)
    return StaticResult(True, "ok", declared)
