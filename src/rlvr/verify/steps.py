"""Worked steps for process rewards: `parse_steps` reads the arithmetic a completion writes (`<<expr=result>>`
annotations and plain `a op b = c` equations, an annotated equation counted once), `evaluate_expr` checks it
exactly with a small recursive-descent parser (no `eval`), `match_steps` compares steps with the gold by value.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from rlvr.verify.numbers import format_number, parse_number

__all__ = [
    "MAX_EQUALS",
    "MAX_EXPR",
    "MAX_STEPS",
    "ParsedStep",
    "Step",
    "check_step",
    "evaluate_expr",
    "match_steps",
    "parse_steps",
]

MAX_EXPR = 512  # longer expressions are not evaluated
MAX_STEPS = 256  # steps returned by `parse_steps`
MAX_EQUALS = 4096  # plain "=" signs `parse_steps` examines
_MAX_DEPTH = 40  # nesting of parentheses and unary signs


@dataclass(frozen=True)
class Step:
    """One calculator annotation `<<expr=result>>` of a GSM8K-style solution (a gold step; tasks
    attach them to each `Problem`, `rlvr.tasks.Step` is this class).

    >>> Step("48/2", "24")
    Step(expr='48/2', result='24')
    """

    expr: str
    result: str


_NUMBER = r"[$€£]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
_ANNOTATION = re.compile(rf"<<(?P<expr>[^<>=]{{0,{MAX_EXPR}}})=(?P<result>[^<>]{{0,64}})>>")
_EQUALS = re.compile("=")
# A result is a number or a fraction; one followed by an operator and a number is the start of an
# expression ("= 6 + 6 = 12"), not a result, and the next "=" reads it.
_RESULT = re.compile(
    rf"[ \t]*(?P<sign>[-−]?)[ \t]*(?P<num>(?<![\w.]){_NUMBER}(?:/\d+(?!\.\d))?)"
    r"(?![ \t]*(?:[-+*/×÷−xX][ \t]*[$\d(.]|\d))"
)
_LHS_CHARS = re.compile(r"[\d.,$€£()+\-*/×÷−xX \t]*")  # matched on the reversed text before an "="
_VARIABLE_END = re.compile(r"(?:^|[^A-Za-z])[A-Za-z]$")  # a one-letter name ends the text
# "x" is an operator only before a number ("9 x 2"); "2x - 3" and "X*2" name a variable.
_LHS_TOKEN = re.compile(
    rf"(?P<num>(?<![\w.]){_NUMBER})|(?P<op>[-+*/×÷−]|(?<![A-Za-z])[xX](?=[ \t]*[$€£\d(.]))"
    r"|(?P<paren>[()])|(?P<ws>[ \t]+)|."
)
_EXPR_TOKEN = re.compile(rf"\s*(?:(?P<num>{_NUMBER})|(?P<op>[-+*/×÷−xX()]))")
_OPS = {"×": "*", "x": "*", "X": "*", "÷": "/", "−": "-"}


@dataclass(frozen=True)
class ParsedStep:
    """One arithmetic step found in a completion.

    `expr` is the left-hand side as written, `result` the right-hand side in canonical form ("9",
    "2.5"; as written when it is not a number), `valid` whether `expr` evaluates exactly to `result`.
    """

    expr: str
    result: str
    valid: bool


def evaluate_expr(expr: str) -> Fraction | None:
    """Exact value of an arithmetic expression with + - * / x × ÷, parentheses and unary signs.

    Numbers may carry thousands commas, decimals and a currency sign. None when the text is not such
    an expression, divides by zero, nests deeper than 40 or is longer than `MAX_EXPR` characters.

    >>> evaluate_expr("16-3-4"), evaluate_expr("(80,000 + $50,000) * 1.5"), evaluate_expr("7 / 3")
    (Fraction(9, 1), Fraction(195000, 1), Fraction(7, 3))
    >>> evaluate_expr("1/0"), evaluate_expr("2 ** 3"), evaluate_expr("__import__('os')")
    (None, None, None)
    """
    if len(expr) > MAX_EXPR:
        return None
    toks: list[str | Fraction] = []
    pos, end = 0, len(expr.rstrip())
    while pos < end:
        m = _EXPR_TOKEN.match(expr, pos)
        if m is None:
            return None
        if m["num"] is not None:
            toks.append(Fraction(m["num"].lstrip("$€£").replace(",", "")))
        else:
            toks.append(_OPS.get(m["op"], m["op"]))
        pos = m.end()
    parser = _Parser(toks)
    try:
        value = parser.expr(0)
    except (_ParseError, ZeroDivisionError):
        return None
    return value if parser.pos == len(toks) else None


class _ParseError(Exception):
    pass


class _Parser:
    """expr := term (('+'|'-') term)*;  term := factor (('*'|'/') factor)*;
    factor := ('+'|'-') factor | number | '(' expr ')'."""

    def __init__(self, toks: list[str | Fraction]) -> None:
        self.toks, self.pos = toks, 0

    def _peek(self) -> str | Fraction | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def expr(self, depth: int) -> Fraction:
        value = self.term(depth)
        while self._peek() in ("+", "-"):
            op = self.toks[self.pos]
            self.pos += 1
            rhs = self.term(depth)
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self, depth: int) -> Fraction:
        value = self.factor(depth)
        while self._peek() in ("*", "/"):
            op = self.toks[self.pos]
            self.pos += 1
            rhs = self.factor(depth)
            value = value * rhs if op == "*" else value / rhs
        return value

    def factor(self, depth: int) -> Fraction:
        if depth > _MAX_DEPTH:
            raise _ParseError("too deep")
        tok = self._peek()
        self.pos += 1
        if isinstance(tok, Fraction):
            return tok
        if tok in ("+", "-"):
            value = self.factor(depth + 1)
            return -value if tok == "-" else value
        if tok == "(":
            value = self.expr(depth + 1)
            if self._peek() != ")":
                raise _ParseError("unclosed parenthesis")
            self.pos += 1
            return value
        raise _ParseError(f"unexpected {tok!r}")


def check_step(expr: str, result: str) -> bool:
    """Whether `expr` evaluates exactly to the number `result` (no rounding tolerance).

    >>> check_step("9*2", "$18"), check_step("9*2", "19"), check_step("2/3", ".67")
    (True, False, False)
    """
    value = evaluate_expr(expr)
    return value is not None and value == parse_number(result)


def _step(expr: str, result: str) -> ParsedStep:
    expr, result = expr.strip(), result.strip().replace("−", "-")
    value = parse_number(result)
    canonical = result if value is None else format_number(value)
    return ParsedStep(expr, canonical, check_step(expr, result))


def _lhs(text: str, eq: int) -> str | None:
    """The arithmetic expression that ends at the `=` at index `eq`, or None if there is none."""
    chars = _LHS_CHARS.match(text[max(0, eq - MAX_EXPR) : eq][::-1])
    start = eq - (chars.end() if chars else 0)
    run: list[tuple[str, str, int]] = []
    for m in _LHS_TOKEN.finditer(text, start, eq):
        if m.lastgroup is None:  # a comma, point or variable outside a number ends any expression before it
            run = []
        elif run or m.lastgroup != "ws":
            run.append((m.lastgroup, m.group(), m.start()))
    while run and run[0][1] == ")":
        run.pop(0)
    if not run:
        return None
    kind, first, pos = run[0]
    if kind == "op":  # "X*2 - $40 =" or "x - 5 =": the expression starts with a variable
        before = text[max(0, pos - 3) : pos].rstrip()
        if first != "-" or _VARIABLE_END.search(before):
            return None
    toks = [(kind, tok) for kind, tok, _ in run]
    excess = sum(t == "(" for _, t in toks) - sum(t == ")" for _, t in toks)
    while excess > 0 and toks[0][0] in ("paren", "ws"):  # "(" opened before the equation
        excess -= toks[0][1] == "("
        toks = toks[1:]
    while excess < 0 and toks[-1][0] in ("paren", "ws"):
        excess += toks[-1][1] == ")"
        toks = toks[:-1]
    n_numbers = sum(kind == "num" for kind, _ in toks)
    expr = "".join(t for _, t in toks).strip()
    # "2/3 * x = 12" ends in a variable: it does not evaluate, so it is not a step.
    return expr if n_numbers >= 2 and evaluate_expr(expr) is not None else None


def parse_steps(text: str) -> list[ParsedStep]:
    """The arithmetic steps a text writes, in order: `<<expr=result>>` annotations and `a op b = c`.

    At most `MAX_STEPS` steps are returned and at most `MAX_EQUALS` plain `=` signs are examined, so
    the cost stays linear and small on any input.

    >>> parse_steps("She has 16 - 3 - 4 = <<16-3-4=9>>9 eggs and earns 9 x $2 = $18.")
    [ParsedStep(expr='16-3-4', result='9', valid=True), ParsedStep(expr='9 x $2', result='18', valid=True)]
    >>> [(s.expr, s.valid) for s in parse_steps("(2 + 3) * 4 = 21, so 21 - 1 = 20")]
    [('(2 + 3) * 4', False), ('21 - 1', True)]
    """
    found: list[tuple[int, ParsedStep]] = []
    masked = text
    annotations = list(itertools.islice(_ANNOTATION.finditer(text), MAX_STEPS))
    if annotations:  # blank them out so their "=" and numbers are not read again as a plain equation
        parts, prev = [], 0
        for m in annotations:
            found.append((m.start(), _step(m["expr"], m["result"])))
            parts += [text[prev : m.start()], "\0" * (m.end() - m.start())]
            prev = m.end()
        masked = "".join(parts) + text[prev:]
    # Past the last annotation kept, no plain equation can be among the first MAX_STEPS steps.
    end = annotations[-1].start() if len(annotations) == MAX_STEPS else len(masked)
    n_plain = 0
    for eq in itertools.islice(_EQUALS.finditer(masked, 0, end), MAX_EQUALS):
        result = _RESULT.match(masked, eq.end())
        expr = _lhs(masked, eq.start()) if result is not None else None
        if result is not None and expr is not None:
            found.append((eq.start(), _step(expr, result["sign"] + result["num"])))
            n_plain += 1
            if n_plain == MAX_STEPS:
                break
    found.sort(key=lambda pos_step: pos_step[0])
    return [step for _, step in found[:MAX_STEPS]]


def match_steps(generated: Sequence[ParsedStep], gold: Sequence[Step]) -> list[bool]:
    """For each generated step, whether its result equals the result of a gold step not yet matched.

    Matching is by value only ("the completion computes a number the gold solution also computes"),
    greedily in order, and each gold step is used at most once, so repeating one correct step earns
    one match. It does not look at `valid`: a caller that wants correct arithmetic as well combines
    the two (`valid and matched`).

    >>> gold = [Step("16-3-4", "9"), Step("9*2", "18")]
    >>> match_steps(parse_steps("16-3-4 = 9, 9-0 = 9, 3 * 6 = 18, 9 + 9 = 20"), gold)
    [True, False, True, False]
    """
    gold_values = [parse_number(s.result) for s in gold]
    used = [value is None for value in gold_values]
    matched = []
    for step in generated:
        value = parse_number(step.result)
        unused = (j for j, g in enumerate(gold_values) if not used[j] and g == value)
        hit = None if value is None else next(unused, None)
        if hit is not None:
            used[hit] = True
        matched.append(hit is not None)
    return matched
