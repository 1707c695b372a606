"""Compare two parsed answers by type: exact rationals, 50-digit numerics, random points, sets, tuples,
intervals, matrices, relations (the rules: docs/rewards.md, "Math answers (LaTeX)").

Every computation is bounded before it runs: an exact number may not pass `Mode.max_bits` bits; the fast
mode raises `SlowPath` where the slow mode (a killable worker) could still decide, and `TooLarge` (the
answer is rejected) beyond that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import mpmath

from rlvr.verify.latex.parse import Node

__all__ = [
    "FAST",
    "SLOW",
    "Mode",
    "SlowPath",
    "TooLarge",
    "Undefined",
    "contains",
    "envs",
    "evaluate",
    "expand_pm",
    "free_vars",
    "has_func",
    "same_value",
    "scalar_equal",
    "size",
]


class SlowPath(Exception):
    """The comparison needs expensive work (a huge exact power, a near-tie at 50 digits): call again with
    `allow_slow=True`, in a process that can be killed at a deadline."""


class TooLarge(ArithmeticError):
    """A number in the answer is too large to evaluate in any mode (`10^{10^{10}}`): the answer is rejected."""


class Undefined(ArithmeticError):
    """Division by zero, a non-number in arithmetic, infinity in arithmetic, a variable with no value."""


@dataclass(frozen=True)
class Mode:
    ctx: Any  # a private mpmath context (never the global one: other threads may use it)
    max_bits: int  # the largest exact number (numerator or denominator bits) or magnitude (binary exponent)
    equal_tol: Any  # relative difference below which two values are equal
    doubt_tol: Any  # relative difference below which they are a near-tie (SlowPath in the fast mode)
    slow: bool


def _mode(dps: int, max_bits: int, slow: bool) -> Mode:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return Mode(ctx, max_bits, ctx.mpf(10) ** (10 - dps), ctx.mpf(10) ** (20 - dps), slow)


FAST = _mode(50, 4096, slow=False)
SLOW = _mode(600, 1 << 16, slow=True)  # 600 digits: above the longest literal (parse.MAX_DIGITS)
LONG_LITERAL = 25  # digits; a numeric (not exact) comparison with a longer literal is decided in the slow mode
_SLOW_BITS = SLOW.max_bits

Value = Any  # Fraction, or an mpf/mpc of the mode's context


def _too_big(bits: float, m: Mode) -> None:
    if bits > m.max_bits:
        if not m.slow and bits <= _SLOW_BITS:
            raise SlowPath(f"a number of more than {m.max_bits} bits")
        raise TooLarge(f"a number of more than {max(m.max_bits, _SLOW_BITS)} bits")


def _mp(x: Value, m: Mode) -> Any:
    if isinstance(x, Fraction):
        return m.ctx.mpf(x.numerator) / x.denominator
    return x


def _check(x: Value, m: Mode) -> Value:
    if isinstance(x, Fraction):
        _too_big(max(x.numerator.bit_length(), x.denominator.bit_length()), m)
    elif x != 0:
        if not m.ctx.isfinite(x):
            raise Undefined("not finite")
        _too_big(m.ctx.mag(x), m)
    return x


def _iroot(n: int, q: int) -> int | None:
    """The exact integer q-th root of n >= 0, or None."""
    if n < 2:
        return n
    x = 1 << -(-n.bit_length() // q)
    while True:
        y = ((q - 1) * x + n // x ** (q - 1)) // q
        if y >= x:
            break
        x = y
    return x if x**q == n else None


def _exact_root(a: Fraction, q: int) -> Fraction | None:
    if a < 0:
        if q % 2 == 0:
            return None
        r = _exact_root(-a, q)
        return -r if r is not None else None
    num, den = _iroot(a.numerator, q), _iroot(a.denominator, q)
    return Fraction(num, den) if num is not None and den is not None else None


def _root(a: Value, q: Value, m: Mode) -> Value:
    if not (isinstance(q, Fraction) and q.denominator == 1 and 2 <= q <= 64):
        return _pow(a, 1 / _mp(q, m) if not isinstance(q, Fraction) else 1 / q, m)
    n = int(q)
    if isinstance(a, Fraction):
        exact = _exact_root(a, n)
        if exact is not None:
            return exact
        if a < 0 and n % 2 == 1:
            return -m.ctx.root(_mp(-a, m), n)
    return m.ctx.sqrt(_mp(a, m)) if n == 2 else m.ctx.root(_mp(a, m), n)


def _pow(a: Value, b: Value, m: Mode) -> Value:
    if isinstance(b, Fraction) and b.denominator == 1:
        n = int(b)
        if isinstance(a, Fraction):
            if a == 0 and n < 0:
                raise Undefined("0 to a negative power")
            if a in (0, 1) or n == 0:
                return Fraction(1) if n == 0 else a
            if a == -1:
                return Fraction(-1 if n % 2 else 1)
            _too_big(abs(n) * max(a.numerator.bit_length(), a.denominator.bit_length()), m)
            return a**n
        if abs(n) > 1 << 40:
            raise TooLarge("exponent too large")
        mag = abs(m.ctx.mag(a)) if a != 0 else 0
        _too_big(abs(n) * mag, m)
        return _check(m.ctx.power(a, n), m)
    if isinstance(b, Fraction) and isinstance(a, Fraction) and b.denominator <= 64:
        r = _exact_root(a, b.denominator) if a >= 0 or b.denominator % 2 else None
        if r is not None:
            return _pow(r, Fraction(b.numerator), m)
        if a < 0 and b.denominator % 2:
            return _pow(-_root(a, Fraction(b.denominator), m), Fraction(b.numerator), m) * (
                -1 if b.numerator % 2 else 1
            )
    ab, bb = _mp(a, m), _mp(b, m)
    if ab == 0:
        if m.ctx.re(bb) > 0:
            return Fraction(0)
        raise Undefined("0 to a non-positive power")
    _too_big(float(abs(bb) * (abs(m.ctx.mag(ab)) + 1)), m)
    return _check(m.ctx.power(ab, bb), m)


def _func(name: str, x: Value, m: Mode) -> Value:
    if name == "abs":
        return abs(x) if isinstance(x, Fraction) else m.ctx.fabs(x) if m.ctx.im(x) == 0 else abs(x)
    c = m.ctx
    y = _mp(x, m)
    table: dict[str, Callable[[Any], Any]] = {
        "sin": c.sin, "cos": c.cos, "tan": c.tan, "cot": c.cot, "sec": c.sec, "csc": c.csc, "arcsin": c.asin,
        "arccos": c.acos, "arctan": c.atan, "arccot": c.acot, "sinh": c.sinh, "cosh": c.cosh, "tanh": c.tanh,
        "log": c.ln, "ln": c.ln, "lg": c.log10, "exp": c.exp,
    }  # fmt: skip
    if name in ("log", "ln", "lg") and y == 0:
        raise Undefined("log 0")
    if name == "exp":
        _too_big(float(abs(y)) * 1.45, m)
    try:
        return _check(table[name](y), m)
    except ZeroDivisionError as e:
        raise Undefined(name) from e


def evaluate(node: Node, env: dict[str, Value], m: Mode) -> Value:
    """The value of a scalar expression: a Fraction when exact, else an mpmath number of `m`'s precision."""
    k = node[0]
    if k == "num":
        return node[1]
    if k == "var":
        name = node[1]
        if name in env:
            return env[name]
        if name == "i":
            return m.ctx.mpc(0, 1)
        if name == "e":
            return m.ctx.e
        raise Undefined(f"free variable {name}")
    if k == "const":
        if node[1] == "pi":
            return m.ctx.pi
        raise Undefined("infinity in arithmetic")
    if k == "add":
        total: Value = Fraction(0)
        for t in node[1]:
            v = evaluate(t, env, m)
            total = total + v if isinstance(total, Fraction) and isinstance(v, Fraction) else _mp(total, m) + _mp(v, m)
            _check(total, m)
        return total
    if k == "neg":
        return -evaluate(node[1], env, m)
    if k == "mul":
        prod: Value = Fraction(1)
        for f in node[1]:
            v = evaluate(f, env, m)
            prod = prod * v if isinstance(prod, Fraction) and isinstance(v, Fraction) else _mp(prod, m) * _mp(v, m)
            _check(prod, m)
        return prod
    if k == "div":
        a, b = evaluate(node[1], env, m), evaluate(node[2], env, m)
        if b == 0:
            raise Undefined("division by zero")
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return _check(a / b, m)
        return _check(_mp(a, m) / _mp(b, m), m)
    if k == "pow":
        return _pow(evaluate(node[1], env, m), evaluate(node[2], env, m), m)
    if k == "root":
        return _root(evaluate(node[1], env, m), evaluate(node[2], env, m), m)
    if k == "func":
        return _func(node[1], evaluate(node[2], env, m), m)
    if k == "base":
        return Fraction(int(node[1], node[2]))
    raise Undefined(f"{k} in arithmetic")


# -- structure ----------------------------------------------------------------------------------------------------


def _children(node: Node) -> list[Node]:
    k = node[0]
    if k in ("add", "mul", "tuple", "set", "list", "union"):
        return list(node[1])
    if k in ("neg",):
        return [node[1]]
    if k in ("div", "pow", "root", "pm"):
        return [node[1], node[2]]
    if k == "func":
        return [node[2]]
    if k == "interval":
        return [node[2], node[3]]
    if k == "rel":
        return list(node[2])
    if k == "matrix":
        return [c for row in node[1] for c in row]
    return []


def free_vars(node: Node) -> frozenset[str]:
    if node[0] == "var":
        return frozenset() if node[1] in ("i", "e") else frozenset({node[1]})
    out: frozenset[str] = frozenset()
    for c in _children(node):
        out |= free_vars(c)
    return out


def has_func(node: Node) -> bool:
    return node[0] == "func" and node[1] != "abs" or any(has_func(c) for c in _children(node))


def _sums(node: Node) -> int:
    """Sum nodes that hold variables (an expanded polynomial has one; a restated question has more)."""
    own = 1 if node[0] == "add" and free_vars(node) else 0
    return own + sum(_sums(c) for c in _children(node))


def _unexpanded(node: Node) -> bool:
    """A sum in variables with another sum in variables beneath it: `(-k+4)+(-2+3k)`, `x(x+1)-3(x-2)`,
    `\\frac{4+6a}{5}-\\frac{1+3a}{4}` (a restated or half-worked expression). A product of sums (a factored
    form) is not one."""
    if node[0] == "add" and free_vars(node):
        return any(_sums(c) for c in node[1])
    return any(_unexpanded(c) for c in _children(node))


def _terms(node: Node) -> list[Node]:
    if node[0] == "add":
        return [t for c in node[1] for t in _terms(c)]
    if node[0] == "neg":
        return _terms(node[1]) if node[1][0] == "add" else [node[1]]
    return [node]


def _factors(node: Node) -> list[Node]:
    if node[0] == "mul":
        return [f for c in node[1] for f in _factors(c)]
    if node[0] == "neg":
        return _factors(node[1])
    if node[0] == "div":
        return _factors(node[1]) + _factors(node[2])
    return [node]


def _monomial(node: Node) -> str | None:
    if node[0] == "var":
        return node[1]
    if node[0] == "pow" and node[1][0] == "var" and not free_vars(node[2]):
        return node[1][1]
    return None


def _signature(term: Node) -> tuple[str, ...]:
    return tuple(sorted(repr(f) for f in _factors(term) if free_vars(f)))


def unsimplified(a: Node, g: Node) -> str | None:
    """Why an expression in variables is not in final form where the gold is (None if it is): a sum
    holding a sum (an unexpanded or restated expression), like terms not combined, a variable in two
    monomial factors, a factored gold answered expanded, or far larger than the gold."""
    if size(a) > 2 * size(g) + 6:
        return "expression much larger than the gold (a restated question?)"
    if _unexpanded(a) and not _unexpanded(g):
        return "unsimplified expression (a sum holding another sum)"
    signatures = [_signature(t) for t in _terms(a)]
    if len(signatures) != len(set(signatures)):
        return "like terms not combined"
    for t in _terms(a):
        names = [n for n in map(_monomial, _factors(t)) if n is not None]
        if len(names) != len(set(names)):
            return "a variable in two factors (not simplified)"
    core = [f for f in _factors(g) if free_vars(f)]
    if len(core) >= 2 and g[0] in ("mul", "neg") and _sums(g) >= 2:
        if len([f for f in _factors(a) if free_vars(f)]) != len(core) or a[0] not in ("mul", "neg"):
            return "not factored like the gold"
    return None


def longest_literal(node: Node) -> int:
    """Digits of the longest number literal (numerator and denominator of a decimal)."""
    if node[0] == "num":
        return len(str(node[1].numerator)) + len(str(node[1].denominator)) - 1
    return max((longest_literal(c) for c in _children(node)), default=0)


def size(node: Node) -> int:
    return 1 + sum(size(c) for c in _children(node))


def contains(node: Node, kind: str) -> bool:
    return node[0] == kind or any(contains(c, kind) for c in _children(node))


def expand_pm(node: Node, limit: int = 8) -> list[Node]:
    """`1 \\pm \\sqrt{19}` -> [1 + sqrt 19, 1 - sqrt 19] (every pm, at most `limit` results)."""
    if node[0] == "pm":
        a, b = node[1], node[2]
        return [("add", (a, b)), ("add", (a, ("neg", b)))]
    kids = _children(node)
    for i, c in enumerate(kids):
        if contains(c, "pm"):
            out = []
            for variant in expand_pm(c, limit):
                new = list(kids)
                new[i] = variant
                out += expand_pm(_rebuild(node, new), limit)
                if len(out) > limit:
                    raise Undefined("too many \\pm")
            return out
    return [node]


def _rebuild(node: Node, kids: list[Node]) -> Node:
    k = node[0]
    if k in ("add", "mul", "tuple", "set", "list", "union"):
        return (k, tuple(kids))
    if k == "neg":
        return (k, kids[0])
    if k in ("div", "pow", "root"):
        return (k, kids[0], kids[1])
    if k == "func":
        return (k, node[1], kids[0])
    raise Undefined("\\pm inside a structure")


# -- equality -----------------------------------------------------------------------------------------------------

_POINTS = (
    (Fraction(7, 5), Fraction(11, 7), Fraction(13, 3), Fraction(5, 11), Fraction(17, 6), Fraction(3, 13)),
    (Fraction(-9, 4), Fraction(19, 5), Fraction(2, 9), Fraction(23, 7), Fraction(-7, 10), Fraction(29, 3)),
    (Fraction(31, 8), Fraction(-5, 3), Fraction(41, 11), Fraction(3, 16), Fraction(43, 9), Fraction(-11, 5)),
    (Fraction(3, 10), Fraction(37, 12), Fraction(-13, 7), Fraction(53, 6), Fraction(1, 7), Fraction(47, 13)),
)


def same_value(a: Value, b: Value, m: Mode) -> bool:
    """Exact equality for two rationals; otherwise equal to `m`'s precision (a near-tie: SlowPath)."""
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    x, y = _mp(a, m), _mp(b, m)
    diff = abs(x - y)
    scale = max(abs(x), abs(y), 1)
    if diff <= scale * m.equal_tol:
        return True
    if diff <= scale * m.doubt_tol and not m.slow:
        raise SlowPath("a near-tie at 50 digits")
    return False


def envs(names: frozenset[str]) -> list[dict[str, Value]]:
    order = sorted(names)
    if len(order) > len(_POINTS[0]):
        raise Undefined("too many variables")
    return [dict(zip(order, pts, strict=False)) for pts in _POINTS]


def same_function(a: Node, b: Node, names: frozenset[str], m: Mode) -> bool:
    """Equal at every random point where both are defined (at least two such points)."""
    agreed = 0
    for env in envs(names):
        try:
            va, vb = evaluate(a, env, m), evaluate(b, env, m)
        except (Undefined, ZeroDivisionError, ValueError):
            continue
        if not same_value(va, vb, m):
            return False
        agreed += 1
    return agreed >= 2


def _inf_sign(node: Node) -> int | None:
    if node == ("const", "inf"):
        return 1
    if node[0] == "neg" and node[1] == ("const", "inf"):
        return -1
    if node[0] == "add" and len(node[1]) == 1:
        return _inf_sign(node[1][0])
    return None


def scalar_equal(a: Node, g: Node, m: Mode) -> tuple[bool, str]:
    """Two scalar expressions: value for numbers, random points for expressions in variables."""
    ia, ig = _inf_sign(a), _inf_sign(g)
    if ia is not None or ig is not None:
        return (ia == ig, "correct" if ia == ig else "wrong value")
    fa, fg = free_vars(a), free_vars(g)
    if fa - fg:
        return False, "unevaluated expression (variables the gold does not have)"
    if has_func(a) and not has_func(g):
        return False, "unevaluated function"
    if fg:
        why = unsimplified(a, g)
        if why:
            return False, why
        ok = same_function(a, g, fg, m)
        return ok, "correct" if ok else "wrong expression"
    try:
        va = evaluate(a, {}, m)
    except TooLarge:
        return False, "number too large"
    except (Undefined, ZeroDivisionError, ValueError) as e:
        return False, f"undefined ({e})"
    vg = evaluate(g, {}, m)
    if not m.slow and not (isinstance(va, Fraction) and isinstance(vg, Fraction)):
        if max(longest_literal(a), longest_literal(g)) > LONG_LITERAL:
            raise SlowPath("a long decimal compared with an inexact value")
    ok = same_value(va, vg, m)
    return ok, "correct" if ok else "wrong value"
