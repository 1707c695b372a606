"""`verify_math(completion, gold)`: extract (extract.py), parse (parse.py), compare by type (here and
compare.py). Structure where structure is meant: sets unordered, tuples ordered, intervals with their ends,
matrices by shape; relations read as what they name (`x = 3` is 3, `x > 5` is (5, inf))."""

from __future__ import annotations

import functools
import re
from fractions import Fraction

from rlvr.verify.answer import Verdict
from rlvr.verify.latex.compare import (
    FAST,
    SLOW,
    Mode,
    SlowPath,
    TooLarge,
    Undefined,
    contains,
    envs,
    evaluate,
    expand_pm,
    free_vars,
    same_value,
    scalar_equal,
)
from rlvr.verify.latex.extract import final_answers
from rlvr.verify.latex.parse import MAX_ANSWER, Node, ParseError, canonical, parse_answer

__all__ = ["extract_math_answer", "verify_math"]

_ORDER = {"<": (">", False), "<=": (">=", True), ">": ("<", False), ">=": ("<=", True)}
_INF = ("const", "inf")
_NEG_INF = ("neg", _INF)


# -- shapes -------------------------------------------------------------------------------------------------------


class _False(Exception):
    """The answer is wrong for a structural reason (the message)."""


def _is_var(node: Node) -> bool:
    return node[0] == "var" and node[1] not in ("i", "e")


def _interval_of(node: Node) -> list[tuple[bool, Node, Node, bool]] | None:
    """The intervals an interval, union, inequality, or `x \\in S` names; None if it names none."""
    k = node[0]
    if k == "interval":
        return [(node[1], node[2], node[3], node[4])]
    if k == "union":
        out = []
        for p in node[1]:
            part = _interval_of(p)
            if part is None:
                return None
            out += part
        return out
    if k == "tuple" and len(node[1]) == 2:
        return [(False, node[1][0], node[1][1], False)]
    if k == "rel":
        ops, sides = node[1], node[2]
        if ops == ("in",) and _is_var(sides[0]):
            return _interval_of(sides[1])
        if all(o in _ORDER for o in ops):
            var = [i for i, s in enumerate(sides) if _is_var(s)]
            if len(var) != 1:
                return None
            v = var[0]
            if ops[0] in (">", ">="):  # read left to right as increasing
                sides = sides[::-1]
                ops = tuple(_ORDER[o][0] for o in ops[::-1])
                v = len(sides) - 1 - v
            if any(o not in ("<", "<=") for o in ops):
                return None
            lo, lo_closed, hi, hi_closed = _NEG_INF, False, _INF, False
            if v > 0:
                lo, lo_closed = sides[v - 1], ops[v - 1] == "<="
            if v < len(sides) - 1:
                hi, hi_closed = sides[v + 1], ops[v] == "<="
            if v > 1 or v < len(sides) - 2:
                return None
            return [(lo_closed, lo, hi, hi_closed)]
    if k == "list" and node[1] and all(_interval_of(p) is not None and p[0] != "tuple" for p in node[1]):
        out = []
        for p in node[1]:
            out += _interval_of(p) or []
        return out
    return None


def _unwrap(node: Node, m: Mode) -> tuple[str | None, Node]:
    """(variable, value) for `x = value` / `x \\in S`; a numeric chain `2+3 = 5` is its (checked) value."""
    if node[0] != "rel":
        return None, node
    ops, sides = node[1], node[2]
    if ops == ("in",) and _is_var(sides[0]):
        return sides[0][1], sides[1]
    if not all(o == "=" for o in ops):
        return None, node
    if sides[0][0] == "tuple" and all(_is_var(v) for v in sides[0][1]) and len(sides) == 2:
        return "(" + ",".join(v[1] for v in sides[0][1]) + ")", sides[1]  # (r, theta) = (3, pi/2)
    var = sides[0][1] if _is_var(sides[0]) and len(sides) >= 2 else None
    values = sides[1:] if var else sides
    if all(not free_vars(s) for s in values) and len(values) >= 2:
        try:
            first = evaluate(values[-1], {}, m)
            for s in values[:-1]:
                if not _same(evaluate(s, {}, m), first, m):
                    raise _False("false equation")
        except (Undefined, TooLarge) as e:
            raise _False("equation with an undefined side") from e
        return var, values[-1]
    if var and len(sides) == 2:
        return var, sides[1]
    if len(sides) == 2 and free_vars(sides[0]) and not free_vars(sides[1]):
        return None, sides[1]  # `f(2) = 5`, `a + b = 5`: the stated value
    return None, node


def _same(a: object, b: object, m: Mode) -> bool:
    return same_value(a, b, m)


def _items(node: Node) -> list[Node] | None:
    """The members of a list or set (with each `\\pm` expanded), or None for anything else."""
    if node[0] in ("list", "set"):
        out: list[Node] = []
        for it in node[1]:
            out += expand_pm(_unwrap_item(it))
        return out
    if _has_pm(node):
        return expand_pm(node)
    return None


def _unwrap_item(node: Node) -> Node:
    if node[0] == "rel" and node[1] == ("=",) and _is_var(node[2][0]) and len(node[2]) == 2:
        return node[2][1]
    return node


def _has_pm(node: Node) -> bool:
    return contains(node, "pm")


def _equation(node: Node) -> Node | None:
    """lhs - rhs for an equation `lhs = rhs` that holds variables."""
    if node[0] == "rel" and node[1] == ("=",) and node[2][0][0] == "tuple":
        return None
    if node[0] == "rel" and node[1] == ("=",) and (free_vars(node[2][0]) or free_vars(node[2][1])):
        return ("add", (node[2][0], ("neg", node[2][1])))
    return None


def _proportional(a: Node, g: Node, m: Mode) -> bool:
    """Two equations f_a = 0 and f_g = 0 are the same when f_a / f_g is one nonzero constant."""
    names = free_vars(a) | free_vars(g)
    if free_vars(a) != free_vars(g):
        return False
    ratio = ("div", a, g)
    values = []
    for env in envs(names):
        try:
            values.append(evaluate(ratio, env, m))
        except (Undefined, ZeroDivisionError, ValueError):
            continue
    return len(values) >= 2 and values[0] != 0 and all(_same(v, values[0], m) for v in values[1:])


def _equal(a: Node, g: Node, m: Mode) -> tuple[bool, str]:
    """Whether answer `a` equals gold `g` (both parsed), and why not: labels first (choice, text, base),
    then equations, then what a relation names, then structures, then scalars."""
    labelled = _equal_labels(a, g)
    if labelled is not None:
        return labelled
    if a[0] == "base":
        return _equal(("num", Fraction(int(a[1], a[2]))), g, m) if a[2] == 10 else (False, "base subscript")
    ea, eg = _equation(a), _equation(g)
    if eg is not None and not (_is_var(g[2][0]) and ea is None):
        return _equal_equations(a, g, ea, eg, m)
    gvar, g = _unwrap(g, m)
    avar, a = _unwrap(a, m)
    if gvar and avar and gvar != avar:
        return False, f"value of {avar}, not {gvar}"
    if a[0] == "rel" and _interval_of(a) is None:
        return False, "a relation, not a value"
    if g[0] == "rel" and _interval_of(g) is None:
        raise ParseError("gold relation not supported")
    return _equal_structures(a, g, m)


def _equal_labels(a: Node, g: Node) -> tuple[bool, str] | None:
    """Choice letters, text answers and base-b numerals compare as labels (None: neither side is one)."""
    if g[0] == "choice" or a[0] == "choice":
        letter = a[1] if a[0] == "choice" else a[1].upper() if a[0] == "var" and len(a[1]) == 1 else None
        ok = g[0] == "choice" and letter == g[1]
        return ok, "correct" if ok else "wrong choice"
    if g[0] == "text" or a[0] == "text":
        ok = a[0] == g[0] == "text" and a[1].replace(" ", "") == g[1].replace(" ", "")
        return ok, "correct" if ok else "wrong text"
    if g[0] == "base":
        if a[0] == "base":
            ok = a[1:] == g[1:]
        else:
            ok = a[0] == "num" and a[1].denominator == 1 and str(a[1]) == g[1]
        return ok, "correct" if ok else "wrong digits"
    return None


def _equal_equations(a: Node, g: Node, ea: Node | None, eg: Node, m: Mode) -> tuple[bool, str]:
    """A gold equation in variables: the same variable's value, or the same equation up to a factor."""
    if ea is None:
        return False, "not an equation"
    if _is_var(g[2][0]) and _is_var(a[2][0]) and g[2][0] == a[2][0]:
        return _equal(a[2][1], g[2][1], m)
    if _is_var(g[2][0]) and _is_var(a[2][0]) and not free_vars(g[2][1]):
        return False, f"value of {a[2][0][1]}, not {g[2][0][1]}"
    ok = _proportional(ea, eg, m)
    return ok, "correct" if ok else "different equation"


def _equal_structures(a: Node, g: Node, m: Mode) -> tuple[bool, str]:
    """Intervals (and the inequalities naming them), sets and lists, tuples and matrices, else scalars."""
    gi = _interval_of(g) if g[0] != "tuple" or any(x in (_INF, _NEG_INF) for x in g[1]) else None
    ai = _interval_of(a) if a[0] != "tuple" or gi is not None else None
    if gi is not None or (ai is not None and a[0] != "tuple" and g[0] == "tuple"):
        gi = gi if gi is not None else _interval_of(g)
        if ai is None or gi is None:
            return False, "not an interval"
        return _intervals_equal(ai, gi, m)
    gl, al = _items(g), _items(a)
    if gl is not None:
        if g[0] == "set" and a[0] == "tuple":
            return False, "an ordered tuple, not a set"
        if a[0] == "tuple" and g[0] == "list":
            return False, "an ordered tuple, not a list of answers"
        return _unordered(al if al is not None else [a], gl, m)
    if al is not None and len(al) > 1:
        if g[0] in ("tuple", "matrix") and a[0] == "list":
            return _ordered(list(a[1]), _entries(g), m)
        return False, "several answers"
    if g[0] in ("tuple", "matrix"):
        if a[0] not in ("tuple", "matrix", "list"):
            return False, "not a tuple"
        if g[0] == "matrix" and a[0] == "matrix" and len(g[1]) != len(a[1]):
            return False, "different shape"
        return _ordered(_entries(a), _entries(g), m)
    if a[0] in ("tuple", "matrix", "set", "list", "interval", "union"):
        return False, f"a {a[0]}, not a value"
    return scalar_equal(a, g, m)


def _entries(node: Node) -> list[Node]:
    if node[0] == "matrix":
        rows = node[1]
        if len(rows) == 1 or all(len(r) == 1 for r in rows):
            return [c for r in rows for c in r]
        return [("tuple", r) for r in rows]
    return list(node[1])


def _ordered(a: list[Node], g: list[Node], m: Mode) -> tuple[bool, str]:
    if len(a) != len(g):
        return False, "different length"
    for x, y in zip(a, g, strict=True):
        ok, why = _equal(x, y, m)
        if not ok:
            return False, why
    return True, "correct"


def _unordered(a: list[Node], g: list[Node], m: Mode) -> tuple[bool, str]:
    if len(a) != len(g):
        return False, "different number of answers"
    left = list(g)
    for x in a:
        for j, y in enumerate(left):
            if _equal(x, y, m)[0]:
                del left[j]
                break
        else:
            return False, "an answer not in the gold"
    return True, "correct"


def _intervals_equal(a: list[tuple[bool, Node, Node, bool]], g: list[tuple[bool, Node, Node, bool]], m: Mode):
    if len(a) != len(g):
        return False, "different intervals"
    left = list(g)
    for lc, lo, hi, hc in a:
        for j, (glc, glo, ghi, ghc) in enumerate(left):
            if lc == glc and hc == ghc and _equal(lo, glo, m)[0] and _equal(hi, ghi, m)[0]:
                del left[j]
                break
        else:
            return False, "different interval"
    return True, "correct"


# -- entry points -------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Node:
    return parse_answer(text)


def _parse_or_none(text: str) -> tuple[Node | None, str]:
    if len(text) > MAX_ANSWER:
        return None, "answer too long"
    try:
        return _parse(text), "ok"
    except (ParseError, RecursionError, ValueError, ArithmeticError) as e:
        return None, f"unparseable answer ({e})"


def _canonical_string(node: Node, text: str) -> str:
    if node[0] not in ("list", "set", "tuple", "matrix", "interval", "union", "rel", "text", "choice", "base"):
        if not free_vars(node):
            try:
                v = evaluate(node, {}, FAST)
                if isinstance(v, Fraction):
                    return str(v)
            except (Undefined, TooLarge, SlowPath, ZeroDivisionError, ValueError):
                pass
    if node[0] == "text":
        return node[1]
    if node[0] == "choice":
        return f"({node[1]})"
    return re.sub(r"\s+", "", canonical(text))


def _agree(nodes: list[Node], m: Mode) -> bool:
    last = nodes[-1]
    return all(_equal(n, last, m)[0] for n in nodes[:-1])


def extract_math_answer(completion: str) -> tuple[str | None, str]:
    """The final answer in canonical form (for majority voting), or None and the reason.

    >>> extract_math_answer(r"So $x = \\dfrac{28}{6}$, i.e. \\boxed{\\frac{14}{3}}.")
    ('14/3', 'boxed')
    >>> extract_math_answer(r"\\boxed{3} or \\boxed{4}")
    (None, 'conflicting answers')
    """
    texts, how = final_answers(completion)
    if not texts:
        return None, how
    nodes = []
    for t in texts:
        node, why = _parse_or_none(t)
        if node is None:
            return None, why
        nodes.append(node)
    try:
        if not _agree(nodes, FAST):
            return None, "conflicting answers"
    except (SlowPath, ParseError):
        return None, "conflicting answers"
    return _canonical_string(nodes[-1], texts[-1]), how


def verify_math(completion: str, gold: str, *, allow_slow: bool = False) -> Verdict:
    """Whether the completion's final LaTeX answer equals `gold` (a MATH-style answer string).

    Raises `SlowPath` when `allow_slow` is False and the comparison needs expensive work.

    >>> verify_math(r"\\boxed{\\sqrt{117}}", r"3\\sqrt{13}")
    Verdict(correct=True, parsed='\\\\sqrt{117}', reason='correct')
    >>> verify_math(r"\\boxed{74 = 72}", "72").reason
    'false equation'
    """
    m = SLOW if allow_slow else FAST
    try:
        gnode = _parse(gold)
    except (ParseError, RecursionError) as e:
        return Verdict(False, None, f"invalid gold ({e})", "unparseable_gold")
    texts, how = final_answers(completion)
    if not texts:
        return Verdict(False, None, how)
    nodes = []
    for t in texts:
        node, why = _parse_or_none(t)
        if node is None:
            return Verdict(False, None, why)
        nodes.append(node)
    parsed = re.sub(r"\s+", " ", texts[-1].strip())
    try:
        if len(nodes) > 1 and not _agree(nodes, m):
            if _items(gnode) is None and gnode[0] != "tuple":  # a set, list or tuple gold: the boxes are its parts
                return Verdict(False, parsed, "conflicting answers")
            nodes = [("list", tuple(nodes))]
        ok, why = _equal(nodes[-1], gnode, m)
    except _False as e:
        return Verdict(False, parsed, str(e))
    except ParseError as e:
        return Verdict(False, None, f"invalid gold ({e})", "unparseable_gold")
    except (Undefined, TooLarge, ZeroDivisionError, ValueError, RecursionError) as e:
        return Verdict(False, parsed, f"cannot evaluate ({e})")
    return Verdict(ok, parsed, why)
