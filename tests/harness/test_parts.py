"""The code verifier's pure parts, no jail needed: plain data across the wall, the extraction rule, the
split of HumanEval's check() into tests."""

from __future__ import annotations

import json
import math
import time
from collections import Counter, OrderedDict, namedtuple
from decimal import Decimal
from enum import IntEnum
from fractions import Fraction

import pytest

from rlvr.harness.checks import Abort, ProblemError, SolutionFailure, TrustedCheck
from rlvr.harness.extract import build_program, extract_code
from rlvr.harness.plaindata import PlainDataError, decode, encode

# --- plain data ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -7, 10**40, 1.5, -0.0, "", "é\x00\ud800", b"\x00\xff", 2 + 3j, [], (), {}, set(),
     frozenset(), [1, (2, [3, {4: (5,)}])], Fraction(-3, 4),
     Decimal("1.10"), {(1, "a"): [None, {True}], 2: frozenset({1.5})}, [math.inf, -math.inf]],
)  # fmt: skip
def test_plain_data_round_trips_with_exact_types(value):
    back = decode(encode(value))
    assert back == value and type(back) is type(value)
    assert repr(back) == repr(value)  # -0.0 stays -0.0; True stays True, not 1


def test_huge_ints_round_trip():
    for x in (7**9000, -(7**9000), 10**3000):
        assert decode(json.loads(json.dumps(encode(x)))) == x


def test_a_hash_flooding_set_is_refused_quickly():
    p = 2**61 - 1  # ints that differ by multiples of the modulus share one hash
    flood = {"set": [1 + k * p for k in range(20_000)]}
    start = time.perf_counter()
    with pytest.raises(PlainDataError, match="share one hash"):
        decode(flood)
    with pytest.raises(PlainDataError, match="share one hash"):
        decode({"dict": [[1 + k * p, 0] for k in range(20_000)]})
    assert time.perf_counter() - start < 1.0
    assert len(decode({"set": list(range(20_000))})) == 20_000


def test_nan_round_trips():
    assert math.isnan(decode(encode(math.nan)))


def test_bool_and_int_stay_apart():
    assert decode(encode([True, 1])) == [True, 1] and [type(v) for v in decode(encode([True, 1]))] == [bool, int]


class AlwaysEqual(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class Sneaky(str):
    def __eq__(self, other):
        return True

    def __str__(self):
        return "what the test expects"

    __hash__ = str.__hash__


def test_subclasses_are_converted_to_their_base_value_on_the_jail_side():
    pair = namedtuple("pair", "a b")
    color = IntEnum("color", "RED GREEN")
    assert (
        decode(encode(AlwaysEqual(3), convert=True)) == 3 and type(decode(encode(AlwaysEqual(3), convert=True))) is int
    )
    assert decode(encode(Sneaky("x"), convert=True)) == "x"  # the base value, not __str__'s
    assert decode(encode(pair(1, 2), convert=True)) == (1, 2)
    assert decode(encode(Counter("aab"), convert=True)) == {"a": 2, "b": 1}
    assert decode(encode(OrderedDict(a=color.GREEN), convert=True)) == {"a": 2}
    for value in (AlwaysEqual(3), Sneaky("x"), pair(1, 2)):
        with pytest.raises(PlainDataError):
            encode(value)  # the host side never converts: its arguments are plain already


@pytest.mark.parametrize("value", [object(), lambda: 1, type, iter([]), range(3), [object()], {"a": print}])
def test_anything_else_is_refused(value):
    with pytest.raises(PlainDataError):
        encode(value, convert=True)


def test_cycles_and_deep_nesting_are_refused():
    loop: list = []
    loop.append(loop)
    with pytest.raises(PlainDataError):
        encode(loop, convert=True)
    with pytest.raises(PlainDataError):
        encode(_nest(100))
    with pytest.raises(PlainDataError):
        decode(_nest(100))


def _nest(n: int):
    out: list = []
    for _ in range(n):
        out = [out]
    return out


@pytest.mark.parametrize(
    "forged",
    [{"tuple": [1], "x": 1}, {"type": "Anything"}, {"float": "NaN!"}, {"set": [[1]]}, {"dict": [[1]]}, {"bytes": "zz"},
     {"tuple": 5}, {"__eq__": True}, {"fraction": [1, 0]}, {"fraction": [1.5, 2]}, {"int": "xyz"}, {"decimal": "x"},
     "NaN"],
)  # fmt: skip
def test_decode_accepts_only_what_encode_writes(forged):
    if forged == "NaN":  # a bare string stays a string
        assert decode(forged) == "NaN"
        return
    with pytest.raises(PlainDataError):
        decode(forged)


# --- extraction ---------------------------------------------------------------------------------

PROMPT = 'from typing import List\n\n\ndef f(xs: List[int]) -> int:\n    """Sum."""\n'


@pytest.mark.parametrize(
    ("completion", "code"),
    [
        ("```python\na\n```\n```python\nb\n```", "b\n"),
        ("```py\na\n```\ntext\n```\nb\n```", "a\n"),  # a python block wins over a later unlabelled one
        ("```\na\n```\n```\nb\n```", "b\n"),
        ("```javascript\nlet a\n```", ""),  # only another language: no code
        ("```python\ndef f(xs):\n    return 1", "def f(xs):\n    return 1"),  # still open at the end
        ("no fence at all", "no fence at all"),
        ("  ```Python3 title\nx = 1\n  ```", "x = 1\n"),
    ],
)
def test_extract_code(completion, code):
    assert extract_code(completion) == code


def test_build_program_cases():
    program, why = build_program("def f(xs):\n    return sum(xs)\n", PROMPT, "f")
    assert program is not None and program.startswith(PROMPT.rstrip()) and why == "defines the function"
    program, why = build_program("    return sum(xs)\n", PROMPT, "f")
    assert program == PROMPT + "    return sum(xs)\n" and why == "continues the prompt"
    program, _ = build_program("return sum(xs)", PROMPT, "f")  # an unindented body is indented
    assert program == PROMPT + "    return sum(xs)\n"
    assert build_program("def g(xs):\n    return 0\n", PROMPT, "f") == (None, "the code defines no function 'f'")
    assert build_program("def f(:", PROMPT, "f") == (None, "the code does not parse as Python")
    assert build_program("", PROMPT, "f")[0] is None  # the prompt's stub alone defines nothing


# --- the trusted check --------------------------------------------------------------------------

TEST = """
import math
METADATA = {}
TOL = 1e-6

def check(candidate):
    import random
    rng = random.Random(0)
    assert candidate([1, 2]) == 3
    assert True
    result = candidate([5])
    assert abs(result - helper(5)) < TOL
    for _ in range(3):
        x = rng.randint(0, 9)
        assert candidate([x, x]) == 2 * x

check(f)
"""
HELPER_PROMPT = "def helper(x):\n    return x\n\n\ndef f(xs):\n    'Sum.'\n"


def test_each_statement_that_calls_the_candidate_or_reads_its_result_is_one_test():
    t = TrustedCheck.build(HELPER_PROMPT, TEST, "f")
    assert t.total == 4  # `result = candidate(...)` and the assert that reads `result`; not `assert True`, imports
    assert t.run(sum, lambda i: None).passed == 4
    run = t.run(lambda xs: 0, lambda i: None)
    assert run.passed == 1 and [i for i, _ in run.failures] == [1, 3, 4]  # `result = ...` itself passes


def test_a_failing_test_does_not_stop_the_others():
    def half(xs):
        if len(xs) == 2 and xs[0] == 1:
            raise SolutionFailure("ValueError: no")
        return sum(xs)

    run = TrustedCheck.build(HELPER_PROMPT, TEST, "f").run(half, lambda i: None)
    assert run.passed == 3 and run.failures == [(1, "ValueError: no")]


def test_the_prompts_helpers_are_the_trusted_ones_and_the_entry_name_is_the_candidate():
    test = "def check(candidate):\n    assert candidate(2) == helper(2)\n    assert f(3) == helper(3)\n"
    t = TrustedCheck.build(HELPER_PROMPT, test, "f")
    assert t.total == 2  # `f(3)` calls the solution too
    run = t.run(lambda x: x, lambda i: None)
    assert run.passed == 2 and not run.setup_errors


def test_top_level_asserts_without_check_are_its_body():
    test = "import math\nassert f(4) == 2\nassert math.isclose(f(9), 3)\nassert True\n"
    t = TrustedCheck.build(HELPER_PROMPT, test, "f")
    assert t.total == 2
    assert t.run(lambda x: x**0.5, lambda i: None).passed == 2


def test_abort_ends_the_run_and_is_kept():
    def begin(i):
        if i == 2:
            raise Abort("deadline")

    run = TrustedCheck.build(HELPER_PROMPT, TEST, "f").run(sum, begin)
    assert run.passed == 1 and isinstance(run.aborted, Abort)


def test_a_test_cannot_swallow_abort():
    test = "def check(candidate):\n    try:\n        candidate(1)\n    except Exception:\n        pass\n"

    def boom(x):
        raise Abort("deadline")

    run = TrustedCheck.build(HELPER_PROMPT, test, "f").run(boom, lambda i: None)
    assert run.passed == 0 and isinstance(run.aborted, Abort)


@pytest.mark.parametrize(
    ("test", "why"),
    [("x = 1\n", "no statement that calls"), ("def check(candidate):\n    assert True\n", "no statement that calls"),
     ("def check(:\n", "does not parse"), ("def check():\n    pass\n", "takes no candidate")],
)  # fmt: skip
def test_unusable_problems(test, why):
    with pytest.raises(ProblemError, match=why):
        TrustedCheck.build(HELPER_PROMPT, test, "f")
