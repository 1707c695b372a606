"""Tests for rlvr.verify.steps: exact arithmetic, step parsing from free text and GSM8K annotations,
step matching against gold steps, and bounds on hostile input."""

from __future__ import annotations

import json
import random
import time
from fractions import Fraction
from pathlib import Path

import pytest

from rlvr.tasks.problem import Step, parse_gsm8k_solution
from rlvr.verify import ParsedStep, check_step, evaluate_expr, match_steps, parse_steps

GSM8K_TEST = Path(__file__).resolve().parents[2] / "src/rlvr/tasks/data/gsm8k/test.jsonl"


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("16-3-4", Fraction(9)),
        ("9*2", Fraction(18)),
        ("9 x 2", Fraction(18)),
        ("9 × 2", Fraction(18)),
        ("10 ÷ 4", Fraction(5, 2)),
        ("7/3", Fraction(7, 3)),
        ("2+3*4", Fraction(14)),
        ("(2+3)*4", Fraction(20)),
        ("2*(3+4)-(1)", Fraction(13)),
        ("-3 + 5", Fraction(2)),
        ("-(-3)", Fraction(3)),
        ("+4", Fraction(4)),
        ("80,000+50,000", Fraction(130_000)),
        ("$2.50 * 4", Fraction(10)),
        ("80000*1.5", Fraction(120_000)),
        (".5 + .25", Fraction(3, 4)),
        ("0.1 + 0.2", Fraction(3, 10)),  # exact, unlike float
        ("12 / 4 / 3", Fraction(1)),  # left-associative
        ("10 - 2 - 3", Fraction(5)),
        ("(" * 30 + "1" + ")" * 30, Fraction(1)),
        ("1/0", None),
        ("5 / (3 - 3)", None),
        ("2 ** 3", None),
        ("2 ^ 3", None),
        ("", None),
        ("1 +", None),
        ("(1 + 2", None),
        ("1 + 2)", None),
        ("2 3", None),
        ("x + 1", None),
        ("__import__('os').system('true')", None),
        ("1e5", None),
        ("(" * 50 + "1" + ")" * 50, None),  # deeper than the nesting bound
        ("1+" * 300 + "1", None),  # longer than MAX_EXPR
    ],
)
def test_evaluate_expr(expr: str, value: Fraction | None) -> None:
    assert evaluate_expr(expr) == value


def test_evaluate_expr_matches_exact_arithmetic() -> None:
    rng = random.Random(0)
    for _ in range(300):
        a, b, c = (rng.randint(-999, 999) for _ in range(3))
        d = rng.randint(1, 99)
        expr = f"({a} + {b}) * {c} - {a} / {d}"
        assert evaluate_expr(expr) == (Fraction(a) + b) * c - Fraction(a, d)


@pytest.mark.parametrize(
    ("expr", "result", "ok"),
    [
        ("9*2", "18", True),
        ("9*2", "$18", True),
        ("9*2", "18.00", True),
        ("80000+50000", "130,000", True),
        ("9*2", "19", False),
        ("2/3", "0.67", False),  # exact: no rounding tolerance
        ("2/3", "2/3", True),
        ("1/0", "0", False),
        ("9*2", "eighteen or nineteen", False),
        ("9*2", "", False),
    ],
)
def test_check_step(expr: str, result: str, ok: bool) -> None:
    assert check_step(expr, result) is ok


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        # a GSM8K line: the written equation and its annotation are one step
        ("She has 16 - 3 - 4 = <<16-3-4=9>>9 eggs.", [("16-3-4", "9", True)]),
        ("She makes 9 * 2 = $<<9*2=18>>18 every day.", [("9*2", "18", True)]),
        ("<<5*2=10>>10", [("5*2", "10", True)]),
        ("wrong annotation <<5*2=11>>11", [("5*2", "11", False)]),
        # plain equations
        ("3 + 4 = 7", [("3 + 4", "7", True)]),
        ("Total: 3 + 4 = 7.", [("3 + 4", "7", True)]),
        ("16 - 3 - 4 = 9", [("16 - 3 - 4", "9", True)]),
        ("80,000+50,000=$130,000", [("80,000+50,000", "130000", True)]),
        ("$2.50 x 4 = $10", [("$2.50 x 4", "10", True)]),
        ("2 * (3 + 4) = 14", [("2 * (3 + 4)", "14", True)]),
        ("(2 + 3) * 4 = 20", [("(2 + 3) * 4", "20", True)]),
        ("so (2 + 3 = 5)", [("2 + 3", "5", True)]),
        ("5 - 7 = -2", [("5 - 7", "-2", True)]),
        ("it is -5 + 3 = -2", [("-5 + 3", "-2", True)]),
        ("10 ÷ 4 = 2.5", [("10 ÷ 4", "2.5", True)]),
        ("5/20 = 1/4", [("5/20", "0.25", True)]),
        ("2 + 2 = 5", [("2 + 2", "5", False)]),
        ("2/3 = 0.67", [("2/3", "0.67", False)]),
        # chains: each "=" whose right side is a number is a step
        ("6 + 3 * 2 = 6 + 6 = 12", [("6 + 6", "12", True)]),
        ("2 + 2 = 4 = 4", [("2 + 2", "4", True)]),
        ("3 * 4 = 12, then 12 - 2 = 10", [("3 * 4", "12", True), ("12 - 2", "10", True)]),
        # not arithmetic steps
        ("x = 5", []),
        ("5 = 5", []),
        ("a=1, b=2", []),
        ("X*2 - $40 = $250", []),
        ("2x - 230 = 450", []),
        ("2/3 * x = 12", []),
        ("x - 5 = 10", []),
        ("9 * 2", []),
        ("16 - 3 - 4 = <<", []),
        ("no numbers here = at all", []),
    ],
)
def test_parse_steps(text: str, steps: list[tuple[str, str, bool]]) -> None:
    assert parse_steps(text) == [ParsedStep(*s) for s in steps]


def test_parse_steps_keeps_text_order() -> None:
    text = "First 1 + 1 = 2. Then <<2*3=6>>6. Then 6 - 1 = 5 and <<5*5=25>>25."
    assert [s.result for s in parse_steps(text)] == ["2", "6", "5", "25"]


def test_gsm8k_gold_annotations_are_found_once_and_in_order() -> None:
    lines = GSM8K_TEST.read_text(encoding="utf-8").splitlines()[:300]
    for line in lines:
        solution = json.loads(line)["answer"]
        gold = [(s.expr, s.result.replace(",", "")) for s in parse_gsm8k_solution(solution)[1]]
        # annotation steps come out with the annotation's own text; extra plain equations may be
        # interleaved, but every annotation appears exactly once and in order.
        found = iter([(s.expr, s.result) for s in parse_steps(solution)])
        for expr, result in gold:
            assert any(e == expr and Fraction(r) == Fraction(result) for e, r in found), solution


def test_match_steps_by_value_each_gold_once() -> None:
    gold = [Step("16-3-4", "9"), Step("9*2", "18")]
    generated = parse_steps("16-3-4 = 9, 4+5 = 9, 3 * 6 = 18, 9 + 9 = 20")
    assert match_steps(generated, gold) == [True, False, True, False]


def test_match_steps_ignores_validity_and_format() -> None:
    gold = [Step("80000+50000", "130000")]
    generated = [ParsedStep("1+1", "$130,000", False)]
    assert match_steps(generated, gold) == [True]


def test_match_steps_edge_cases() -> None:
    assert match_steps([], [Step("1+1", "2")]) == []
    assert match_steps([ParsedStep("1+1", "2", True)], []) == [False]
    assert match_steps([ParsedStep("1+1", "2", True)], [Step("?", "unknown")]) == [False]
    assert match_steps([ParsedStep("1+", "???", False)], [Step("1+1", "2")]) == [False]
    repeated = [ParsedStep("1+1", "2", True)] * 3
    assert match_steps(repeated, [Step("1+1", "2"), Step("4/2", "2.0")]) == [True, True, False]


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "1+1=2 " * (n // 6),
        lambda n: "=" * n,
        lambda n: "=1 " * (n // 3),
        lambda n: "1 " * (n // 2) + "= 2",
        lambda n: "<<1+1=2>>" * (n // 9),
        lambda n: "<<" * (n // 2),
        lambda n: "(" * n + "1+1=2",
        lambda n: "She sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs. " * (n // 40),
    ],
)
def test_parse_steps_is_bounded(make: object) -> None:
    text = make(1_000_000)  # type: ignore[operator]
    start = time.perf_counter()
    steps = parse_steps(text)
    # bounded, not fast: these take milliseconds; a quadratic scan of 1 MB would take minutes. The bound
    # is loose because a loaded CI machine once took 0.65 s for a 4 ms case.
    assert time.perf_counter() - start < 5.0
    assert len(steps) <= 256
