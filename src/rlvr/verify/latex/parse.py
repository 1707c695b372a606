"""LaTeX answer strings to a small syntax tree: canonicalise, tokenize, recursive-descent parse.

The tree is nested tuples, cheap to build and compare:

    ("num", Fraction)            ("base", digits, base)        ("var", name)       ("const", "pi"|"e"|"i"|"inf")
    ("add", (a, b, ...))         ("mul", (a, b, ...))          ("neg", a)          ("div", a, b)
    ("pow", a, b)                ("root", a, n)                ("func", name, a)   ("pm", a, b)
    ("tuple", items)             ("set", items)                ("list", items)     ("union", parts)
    ("interval", lo_closed, lo, hi, hi_closed)                 ("matrix", rows)    ("rel", ops, sides)
    ("text", words)              ("choice", letter)

Everything is bounded before it is read: `MAX_ANSWER` characters, `MAX_TOKENS` tokens, `MAX_DEPTH`
nesting. Why hand-written: sympy's `parse_latex` needs a pinned ANTLR runtime and builds sympy objects
(slow, unbounded); math-verify, given MATH-500's bare golds as TRL does, reads `3\\sqrt{13}` as 3 (issue
40). The subset below is the one competition answers use; canonical.py runs first.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from rlvr.verify.latex.canonical import NOT_A_UNIT, canonical

__all__ = ["MAX_ANSWER", "MAX_DEPTH", "Node", "ParseError", "canonical", "parse_answer"]

Node = tuple[Any, ...]
MAX_ANSWER = 400  # characters of one final answer (MATH-500's longest gold is 66)
MAX_TOKENS = 200
MAX_DEPTH = 40
MAX_DIGITS = 400  # digits of one number literal


class ParseError(ValueError):
    """The answer is not in the supported LaTeX subset (the message says where)."""


# -- tokenize -----------------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)|(?P<cmd>\\[a-zA-Z]+|\\[{}|])|(?P<rel><=|>=|!=|[<>=])"
    r"|(?P<sym>\\\\|[-+*/^_(){}\[\],;:|!&'])|(?P<var>[a-zA-Z]))"
)
_TEXT_CMDS = frozenset({"text", "textup", "textsf", "texttt", "emph"})
_ENV = re.compile(r"\s*\{\s*([a-zA-Z]+\*?)\s*\}")
_CMD_ALIAS = {
    "cdot": "*", "times": "*", "ast": "*", "div": "/", "le": "<=", "leq": "<=", "leqslant": "<=", "ge": ">=",
    "geq": ">=", "geqslant": ">=", "lt": "<", "gt": ">", "ne": "!=", "neq": "!=", "lbrace": "\\{", "rbrace": "\\}",
    "{": "\\{", "}": "\\}", "lvert": "|", "rvert": "|", "vert": "|", "|": "|", "lbrack": "[", "rbrack": "]",
    "infin": "infty", "to": "->",
}  # fmt: skip
_RELS = frozenset({"<", ">", "<=", ">=", "=", "!=", "in"})
_FUNCS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan arccot sinh cosh tanh log ln lg exp".split()
)  # fmt: skip
_GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta kappa lambda mu nu xi rho sigma tau"
    " upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma Phi Psi Omega".split()
)


def _read_group(s: str, i: int) -> int:
    """Index just past the brace group that opens at s[i] == '{' (raises if unbalanced)."""
    depth = 0
    for j in range(i, len(s)):
        c = s[j]
        if c == "\\":
            continue
        if c == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif c == "}" and s[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ParseError("unbalanced braces")


def tokenize(s: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: num, var, cmd (name without backslash), rel, sym, text (content), begin/end (env)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        if s[i].isspace():
            i += 1
            continue
        m = _TOKEN.match(s, i)
        if m is None:
            raise ParseError(f"unexpected character {s[i]!r}")
        i = m.end()
        kind = m.lastgroup or ""
        tok = m[kind]
        if kind == "cmd":
            name = tok[1:]
            if name in _TEXT_CMDS:
                j = i
                while j < n and s[j].isspace():
                    j += 1
                if j >= n or s[j] != "{":
                    raise ParseError("\\text without braces")
                end = _read_group(s, j)
                out.append(("text", s[j + 1 : end - 1]))
                i = end
                continue
            if name in ("begin", "end"):
                em = _ENV.match(s, i)
                if em is None:
                    raise ParseError(f"\\{name} without an environment")
                out.append((name, em[1]))
                i = em.end()
                continue
            name = _CMD_ALIAS.get(name, name)
            if name in ("*", "/", "[", "]", "|", "->"):
                out.append(("sym", name))
            elif name in ("<=", ">=", "<", ">", "!="):
                out.append(("rel", name))
            elif name in ("\\{", "\\}"):
                out.append(("sym", name))
            else:
                out.append(("cmd", name))
        elif kind == "num" and len(tok) > MAX_DIGITS:
            raise ParseError("number literal too long")
        else:
            out.append((kind, tok))
        if len(out) > MAX_TOKENS:
            raise ParseError("answer too long")
    return out


# -- parse --------------------------------------------------------------------------------------------------------

_ATOM_START = frozenset({"num", "var", "cmd", "text", "begin"})
_NO_IMPLICIT = frozenset({"in", "cup", "pm", "mp", "lor", "land", "wedge", "vee", "cap", "setminus", "quad"})


def _number(text: str) -> Fraction:
    if "." in text:
        whole, _, frac = text.partition(".")
        return Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
    return Fraction(int(text))


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.t = tokens
        self.i = 0
        self.depth = 0
        self._frac_literal = False  # the last \\frac read had integer-literal parts (for mixed numbers)

    # helpers
    def peek(self, k: int = 0) -> tuple[str, str]:
        j = self.i + k
        return self.t[j] if j < len(self.t) else ("end_of_input", "the end")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def at(self, kind: str, text: str | None = None) -> bool:
        k, v = self.peek()
        return k == kind and (text is None or v == text)

    def expect(self, kind: str, text: str) -> None:
        if not self.at(kind, text):
            raise ParseError(f"expected {text!r}, found {self.peek()[1]!r}")
        self.i += 1

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError("answer nested too deeply")

    # grammar
    def answer(self) -> Node:
        items = self.items(("end_of_input",))
        if not self.at("end_of_input"):
            raise ParseError(f"unexpected {self.peek()[1]!r}")
        return items[0] if len(items) == 1 else ("list", tuple(items))

    def items(self, closers: tuple[str, ...]) -> list[Node]:
        """Comma-, semicolon- or `or`-separated items up to (not including) a closer."""
        out = [self.relation()]
        while self._at_separator():
            while self._at_separator():  # `3, 5, and 7`: one separator
                self.take()
            if self.peek()[1] in closers or self.peek()[0] in closers:
                break  # a trailing comma
            out.append(self.relation())
        return out

    def _at_separator(self) -> bool:
        return self.at("sym", ",") or self.at("sym", ";") or self.at("cmd", "lor")

    def relation(self) -> Node:
        sides = [self.union()]
        if self.at("sym", ":"):  # a ratio a:b is the number a/b
            self.take()
            return ("div", sides[0], self.union())
        ops: list[str] = []
        while self.at("rel") or self.at("cmd", "in"):
            ops.append(self.take()[1])
            sides.append(self.union())
        return sides[0] if not ops else ("rel", tuple(ops), tuple(sides))

    def union(self) -> Node:
        parts = [self.expr()]
        while self.at("cmd", "cup"):
            self.take()
            parts.append(self.expr())
        return parts[0] if len(parts) == 1 else ("union", tuple(parts))

    def expr(self) -> Node:
        self.enter()
        terms: list[Node] = []
        first = True
        while True:
            if self.at("sym", "+") or self.at("sym", "-"):
                sign = self.take()[1]
                term = self.term()
                terms.append(("neg", term) if sign == "-" else term)
            elif self.at("cmd", "pm") or self.at("cmd", "mp"):
                self.take()
                term = self.term()
                left: Node = ("num", Fraction(0))
                if terms:
                    left = terms[0] if len(terms) == 1 else ("add", tuple(terms))
                terms = [("pm", left, term)]
            elif first:
                terms.append(self.term())
            else:
                break
            first = False
        self.depth -= 1
        return terms[0] if len(terms) == 1 else ("add", tuple(terms))

    def term(self) -> Node:
        factors = [self.power()]
        while True:
            k, v = self.peek()
            if k == "sym" and v == "*":
                self.take()
                factors.append(self.power())
            elif k == "sym" and v == "/":
                self.take()
                den = self.power()
                num = factors[0] if len(factors) == 1 else ("mul", tuple(factors))
                factors = [("div", num, den)]
            elif (k in _ATOM_START and not (k == "cmd" and v in _NO_IMPLICIT)) or (k == "sym" and v in ("(", "\\{")):
                if k == "num" and factors[-1][0] in ("num", "base"):
                    raise ParseError("two numbers side by side")
                nxt = self.power()
                if nxt[0] == "text":
                    raise ParseError("text inside an expression")
                # a mixed number: an integer literal then a fraction of integer literals (1\frac{4}{5} = 9/5)
                last = factors[-1]
                if (
                    len(factors) == 1
                    and last[0] == "num"
                    and last[1].denominator == 1
                    and nxt[0] == "div"
                    and nxt[1][0] == "num"
                    and nxt[2][0] == "num"
                    and self._frac_literal
                ):
                    factors = [("add", (last, nxt))]
                else:
                    factors.append(nxt)
            else:
                break
            self._frac_literal = False
        return factors[0] if len(factors) == 1 else ("mul", tuple(factors))

    def power(self) -> Node:
        if self.at("sym", "-"):
            self.take()
            return ("neg", self.power())
        if self.at("sym", "+"):
            self.take()
            return self.power()
        base = self.postfix()
        if self.at("sym", "^"):
            self.take()
            if self.at("sym", "-"):
                self.take()
                return ("pow", base, ("neg", self.arg(whole_number=True)))
            return ("pow", base, self.arg(whole_number=True))
        return base

    def postfix(self) -> Node:
        node = self.atom()
        while True:
            if self.at("sym", "_"):
                self.take()
                sub = self.arg(whole_number=True, raw=True)
                if node[0] == "num":
                    if node[1].denominator != 1 or sub[0] != "num" or sub[1].denominator != 1 or not 2 <= sub[1] <= 36:
                        raise ParseError("bad base subscript")
                    digits, base = str(node[1]), int(sub[1])
                    if any(int(d) >= base for d in digits):
                        raise ParseError("digit out of range for its base")
                    node = ("base", digits, base)
                elif node[0] == "var":
                    node = ("var", f"{node[1]}_{_flat(sub)}")
                else:
                    raise ParseError("subscript on an expression")
            elif self.at("sym", "!") or self.at("sym", "'"):
                raise ParseError("factorial or prime: not a final value")
            else:
                return node

    def arg(self, whole_number: bool = False, raw: bool = False) -> Node:
        """One TeX argument: a brace group, or a single token (`\\frac43`: the first digit only)."""
        k, v = self.peek()
        if k == "sym" and v == "{":
            self.take()
            self.enter()
            inner = self.relation() if not raw else self.expr()
            self.depth -= 1
            self.expect("sym", "}")
            return inner
        if k == "num":
            if whole_number or len(v) == 1:
                self.take()
                return ("num", _number(v))
            if not v[0].isdigit():
                raise ParseError(f"bad argument {v!r}")
            self.t[self.i] = ("num", v[1:])  # TeX reads one character
            return ("num", Fraction(int(v[0])))
        if k == "var":
            self.take()
            return ("var", v)
        if k == "cmd":
            return self.atom()
        raise ParseError(f"missing argument before {v!r}")

    def atom(self) -> Node:
        self.enter()
        try:
            return self._atom()
        finally:
            self.depth -= 1

    def _atom(self) -> Node:
        k, v = self.take()
        if k == "num":
            return ("num", _number(v))
        if k == "var":
            return ("var", v)
        if k == "text":
            return _text_node(v)
        if k == "sym":
            if v == "{":
                inner = self.relation()
                self.expect("sym", "}")
                return inner
            if v in ("(", "["):
                items = self.items((")", "]"))
                close = self.take()
                if close not in (("sym", ")"), ("sym", "]")):
                    raise ParseError("unclosed bracket")
                if len(items) == 1 and not (v == "(" and close[1] == "]") and not (v == "[" and close[1] == ")"):
                    return items[0]
                if len(items) == 2 and (v == "[" or close[1] == "]"):
                    return ("interval", v == "[", items[0], items[1], close[1] == "]")
                if v == "[" or close[1] == "]":
                    raise ParseError("bracket list")
                return ("tuple", tuple(items))
            if v == "\\{":
                if self.at("sym", "\\}"):
                    self.take()
                    return ("set", ())
                items = self.items(("\\}",))
                self.expect("sym", "\\}")
                return ("set", tuple(items))
            if v == "|":
                inner = self.expr()
                self.expect("sym", "|")
                return ("func", "abs", inner)
            raise ParseError(f"unexpected {v!r}")
        if k == "begin":
            return self.matrix(v)
        if k == "cmd":
            return self.command(v)
        raise ParseError(f"unexpected {v!r}")

    def command(self, name: str) -> Node:
        if name == "frac":
            num = self.arg()
            den = self.arg()
            self._frac_literal = num[0] == "num" and den[0] == "num"
            return ("div", num, den)
        if name == "sqrt":
            index: Node = ("num", Fraction(2))
            if self.at("sym", "["):
                self.take()
                index = self.expr()
                self.expect("sym", "]")
            return ("root", self.arg(whole_number=True), index)  # \\sqrt13 is read as the root of 13
        if name == "pi":
            return ("const", "pi")
        if name in ("infty", "inf"):
            return ("const", "inf")
        if name in ("emptyset", "varnothing", "empty"):
            return ("set", ())
        if name in ("imath", "jmath"):
            return ("var", "i")
        if name in _GREEK:
            return ("var", name)
        if name in _FUNCS:
            power: Node | None = None
            base: Node | None = None
            if name == "log" and self.at("sym", "_"):  # \\log_2 8
                self.take()
                base = self.arg(whole_number=True)
            if self.at("sym", "^"):
                self.take()
                power = self.arg(whole_number=True)
            arg = self.atom() if self.at("sym", "(") else self.func_arg()
            node: Node = ("func", name, arg)
            if base is not None:
                node = ("div", ("func", "ln", arg), ("func", "ln", base))
            return ("pow", node, power) if power is not None else node
        raise ParseError(f"unsupported command \\{name}")

    def func_arg(self) -> Node:
        """`\\sin 2x` is sin(2x): implicit products only, up to `*`, `/`, a sign or another function."""
        factors = [self.power()]
        while True:
            k, v = self.peek()
            if (k in ("num", "var") or (k == "cmd" and v not in _FUNCS and v not in _NO_IMPLICIT)) and not (
                k == "num" and factors[-1][0] == "num"
            ):
                factors.append(self.power())
            else:
                return factors[0] if len(factors) == 1 else ("mul", tuple(factors))

    def matrix(self, env: str) -> Node:
        if env not in ("pmatrix", "bmatrix", "matrix", "Bmatrix", "vmatrix", "smallmatrix", "array"):
            raise ParseError(f"unsupported environment {env}")
        if env == "array" and self.at("sym", "{"):
            self.take()
            while not self.at("sym", "}"):
                if self.at("end_of_input"):
                    raise ParseError("unclosed array spec")
                self.take()
            self.take()
        rows: list[tuple[Node, ...]] = []
        row: list[Node] = []
        while True:
            if self.at("end", env):
                self.take()
                break
            row.append(self.expr())
            if self.at("sym", "&"):
                self.take()
            elif self.at("sym", "\\\\"):
                self.take()
                rows.append(tuple(row))
                row = []
            elif not self.at("end", env):
                raise ParseError("bad matrix")
        if row:
            rows.append(tuple(row))
        if not rows or len({len(r) for r in rows}) != 1:
            raise ParseError("ragged matrix")
        if env == "vmatrix":
            raise ParseError("determinant: not a final value")
        return ("matrix", tuple(rows))


def _flat(node: Node) -> str:
    if node[0] == "num":
        return str(node[1])
    if node[0] == "var":
        return node[1]
    if node[0] == "mul":
        return "".join(_flat(f) for f in node[1])
    raise ParseError("bad subscript")


_CHOICE = re.compile(r"\(?\s*([A-E])\s*\)?")


def _text_node(content: str) -> Node:
    """A `\\text{}` token as a node: a number, a choice letter, or words."""
    inner = content.strip()
    if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", inner):
        return ("num", _number(inner))
    unit = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)\s+([A-Za-z][A-Za-z .]*)", inner)
    if unit and not NOT_A_UNIT & set(unit[2].lower().replace(".", " ").split()):
        return ("num", _number(unit[1]))  # \\text{5 cm}
    m = _CHOICE.fullmatch(inner)
    if m:
        return ("choice", m[1])
    words = " ".join(re.sub(r"[^a-z0-9 ]", " ", inner.lower()).split())
    if not words:
        raise ParseError("empty text")
    return ("text", words)


_CALL_LHS = re.compile(r"^\s*[a-zA-Z]\s*\(\s*[a-zA-Z]\s*\)\s*=(?!=)")  # `f(x) = ...`: the value is the right side
_ANSWER_CHOICE = re.compile(r"\(?\s*([A-E])\s*\)?(?:\s*[:.]?)?")
# `(B) 12`: a lettered option followed by its value is that option (no second letter, no operator)
_CHOICE_THEN_VALUE = re.compile(r"\(\s*([A-E])\s*\)\s+(?![^()]*\(\s*[A-E]\s*\))[0-9.,\\a-z{} ]+")
_PLAIN_WORDS = re.compile(r"[A-Za-z][A-Za-z '\-]*[A-Za-z]")


def parse_answer(text: str) -> Node:
    """Parse one canonicalised answer (raises ParseError).

    >>> parse_answer(canonical(r"3\\sqrt{13}"))
    ('mul', (('num', Fraction(3, 1)), ('root', ('num', Fraction(13, 1)), ('num', Fraction(2, 1)))))
    >>> parse_answer(canonical(r"\\text{(C)}"))
    ('choice', 'C')
    """
    if len(text) > MAX_ANSWER:
        raise ParseError("answer too long")
    s = canonical(text)
    if not s:
        raise ParseError("empty answer")
    s = _CALL_LHS.sub("", s, count=1) or s
    bare = s.replace("{", "").replace("}", "").strip()
    m = _ANSWER_CHOICE.fullmatch(bare) or _CHOICE_THEN_VALUE.fullmatch(bare.replace("\\text", ""))
    if m:
        return ("choice", m[1])
    if _PLAIN_WORDS.fullmatch(bare) and len(bare) > 2 and " " not in bare:
        return ("text", bare.lower())
    tokens = tokenize(s)
    if len(tokens) == 1 and tokens[0][0] == "text":
        return _text_node(tokens[0][1])
    return _Parser(tokens).answer()
