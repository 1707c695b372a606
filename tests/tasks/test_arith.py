"""Tests for rlvr.tasks.arith: determinism, split hygiene, exact arithmetic, bounds and lengths."""

from __future__ import annotations

import ast
import random
import re
import statistics
from fractions import Fraction
from pathlib import Path

import pytest

from rlvr.tasks import arith
from rlvr.tasks.problem import Problem, parse_gsm8k_solution

N = 2000
PRESETS = tuple(arith.PRESETS)


@pytest.fixture(scope="module")
def problems() -> dict[tuple[str, str], list[Problem]]:
    """2,000 problems per (preset, split), seed 0; test and dev only for `easy` (they cost 10x)."""
    out = {(pre, sp): arith.generate(sp, N, preset=pre) for pre in PRESETS for sp in ("train", "holdout")}
    for sp in ("test", "dev"):
        out["easy", sp] = arith.generate(sp, N)
    return out


# --- helpers -----------------------------------------------------------------------------------

_TOKEN = re.compile(r"<<|>>|####|\d|[A-Za-z]+|\n|[^\sA-Za-z\d]")


def tokens(text: str) -> list[str]:
    """The tokenisation the table in docs/embedded.md assumes: words, punctuation, single digits, `<<`,
    `>>`, `####` and newlines are one token each; spaces are not tokens."""
    return _TOKEN.findall(text)


_BINOPS = {ast.Add: Fraction.__add__, ast.Sub: Fraction.__sub__, ast.Mult: Fraction.__mul__}


def exact(expr: str) -> Fraction:
    """Evaluate `+ - * /` on integer literals exactly (no `eval`: an `ast` whitelist)."""

    def ev(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return ev(node.left) / ev(node.right)
        raise ValueError(f"not plain arithmetic: {ast.dump(node)}")

    return ev(ast.parse(expr, mode="eval").body)


def operands(expr: str) -> tuple[int, str, int]:
    m = re.fullmatch(r"(\d+)([-+*/])(\d+)", expr)
    assert m, expr
    return int(m.group(1)), m.group(2), int(m.group(3))


def skeleton(question: str) -> str:
    """A question's structure: numbers -> #, items -> ITEM, names -> N1, N2, ... by first mention."""
    names: dict[str, str] = {}
    out = []
    for w in question.split():
        if w.isdigit():
            w = "#"
        elif w in ("apples", "pens", "cards", "books", "eggs", "stamps"):
            w = "ITEM"
        elif w in ("Tom", "Ann", "Sam", "Mia", "Ben", "Eva"):
            w = names.setdefault(w, f"N{len(names) + 1}")
        out.append(w)
    return " ".join(out)


def token_table(problems: dict[tuple[str, str], list[Problem]]) -> str:
    lines = ["preset  split    question mean/max  solution mean/max"]
    for pre in PRESETS:
        for sp in ("train", "holdout"):
            q = [len(tokens(p.question)) for p in problems[pre, sp]]
            s = [len(tokens(p.solution)) for p in problems[pre, sp]]
            qs, ss = f"{statistics.mean(q):.1f}/{max(q)}", f"{statistics.mean(s):.1f}/{max(s)}"
            lines.append(f"{pre:<7} {sp:<8} {qs:>13} {ss:>18}")
    return "\n".join(lines)


def test_exact_evaluator() -> None:
    assert exact("17/3") == Fraction(17, 3)
    assert exact("2+3*4") == 14
    with pytest.raises(ValueError):
        exact("__import__('os')")
    assert tokens("12+5=<<12+5=17>>17\n#### 17") == list("12+5=") + ["<<", *"12+5=17", ">>", "1", "7"] + [
        "\n",
        "####",
        "1",
        "7",
    ]


# --- determinism and splits --------------------------------------------------------------------


def test_deterministic_and_extends() -> None:
    a = arith.generate("train", 300, seed=3, preset="medium")
    assert a == arith.generate("train", 300, seed=3, preset="medium")
    assert arith.generate("train", 100, seed=3, preset="medium") == a[:100]
    b = arith.generate("train", 300, seed=4, preset="medium")
    assert len({p.question for p in a} & {p.question for p in b}) < 30
    assert arith.generate("holdout", 50, seed=1) != arith.generate("holdout", 50, seed=2)
    assert arith.generate("dev", 0) == []


def test_ids_meta_and_uniqueness(problems: dict[tuple[str, str], list[Problem]]) -> None:
    for (pre, sp), ps in problems.items():
        assert [p.id for p in ps] == [f"arith-{pre}-{sp}-0-{i}" for i in range(N)]
        assert len({p.question for p in ps}) == N
        for p in ps:
            assert p.source == "arith"
            assert p.meta["preset"] == pre and p.meta["split"] == sp


def test_train_test_dev_disjoint(problems: dict[tuple[str, str], list[Problem]]) -> None:
    qs = {sp: {p.question for p in problems["easy", sp]} for sp in ("train", "test", "dev")}
    assert not qs["train"] & qs["test"] and not qs["train"] & qs["dev"] and not qs["test"] & qs["dev"]
    for sp in ("train", "test", "dev"):
        assert all(arith.split_of(q) == sp for q in qs[sp])
    # the hash split holds across presets too
    assert all(arith.split_of(p.question) == "train" for pre in PRESETS for p in problems[pre, "train"])


def test_holdout_templates_disjoint(problems: dict[tuple[str, str], list[Problem]]) -> None:
    train_t = {p.meta["template"] for pre in PRESETS for p in problems[pre, "train"]}
    hold_t = {p.meta["template"] for pre in PRESETS for p in problems[pre, "holdout"]}
    assert len(train_t) == 5 and len(hold_t) == 3 and not train_t & hold_t
    train_sk = {skeleton(p.question) for pre in PRESETS for p in problems[pre, "train"]}
    hold_sk = {skeleton(p.question) for pre in PRESETS for p in problems[pre, "holdout"]}
    assert not train_sk & hold_sk
    train_q = {p.question for pre in PRESETS for p in problems[pre, "train"]}
    assert not train_q & {p.question for pre in PRESETS for p in problems[pre, "holdout"]}


def test_holdout_vocabulary_inside_training(problems: dict[tuple[str, str], list[Problem]]) -> None:
    assert arith.vocabulary("holdout") <= arith.vocabulary("train")
    assert arith.vocabulary() == arith.vocabulary("train") and len(arith.vocabulary()) < 150

    def words(split: str) -> set[str]:
        return {w for pre in PRESETS for p in problems[pre, split] for w in p.question.split() if not w.isdigit()}

    # what generation emits, not only what the templates declare
    assert words("holdout") <= words("train") == arith.vocabulary("train")


# --- arithmetic, format and bounds -------------------------------------------------------------


def test_solutions_exact_and_round_trip(problems: dict[tuple[str, str], list[Problem]]) -> None:
    for ps in problems.values():
        for p in ps:
            assert parse_gsm8k_solution(p.solution) == (p.answer, p.steps)
            prev = None
            for st in p.steps:
                value = exact(st.expr)
                assert value.denominator == 1 and value >= 1 and str(value) == st.result, (p.question, st)
                left, _, _ = operands(st.expr)
                assert prev is None or left == prev, p.solution  # each step uses the running value
                prev = int(st.result)
            assert p.answer == p.steps[-1].result


def distractors(question: str) -> list[str]:
    """The sentences `X has N ITEM .` whose item is not the one asked about (the distractors)."""
    asked = re.search(r"How many (\w+)", question)
    sentences = [s.strip() for s in re.findall(r"[^.?]+[.?]", question)]
    found = [m for s in sentences if (m := re.fullmatch(r"(\w+) has (\d+) (\w+) \.", s))]
    return [m.group(0) for m in found if asked is None or m.group(3) != asked.group(1)]


def test_question_numbers_are_the_operands(problems: dict[tuple[str, str], list[Problem]]) -> None:
    for (pre, _), ps in problems.items():
        for p in ps:
            extra = distractors(p.question)
            assert len(extra) == arith.PRESETS[pre].distractors, p.question
            story = p.question
            for sentence in extra:
                story = story.replace(sentence, "", 1)
            used = [operands(p.steps[0].expr)[0]] + [operands(s.expr)[2] for s in p.steps]
            assert sorted(int(w) for w in story.split() if w.isdigit()) == sorted(used), p.question


def test_distractors_leave_the_rest_of_the_ladder_unchanged() -> None:
    """A rung with distractors asks the same story as its rung without them, sentences inserted."""
    plain = arith.ArithConfig("x", 1, 3, 1, 50, 9, 100)
    noisy = arith.ArithConfig("x", 1, 3, 1, 50, 9, 100, distractors=2)
    rng_a, rng_b = random.Random(7), random.Random(7)
    for _ in range(50):
        tpl = rng_a.choice(arith._TRAIN)
        assert tpl == rng_b.choice(arith._TRAIN)
        a, b = arith._sample(tpl, plain, rng_a), arith._sample(tpl, noisy, rng_b)
        if a is None:
            continue
        assert b is not None and a[1] == b[1]  # the same steps
        story = b[0]
        for sentence in distractors(b[0]):
            story = story.replace(sentence + " ", "", 1)
        assert story == a[0]
        rng_a.setstate(rng_b.getstate())


def test_within_preset_bounds(problems: dict[tuple[str, str], list[Problem]]) -> None:
    for (pre, _), ps in problems.items():
        cfg = arith.PRESETS[pre]
        for p in ps:
            assert cfg.min_steps <= p.n_steps <= cfg.max_steps
            assert 1 <= int(p.answer) <= cfg.max_answer
            for st in p.steps:
                _, op, b = operands(st.expr)
                hi = cfg.max_operand if op in "+-" else cfg.max_factor
                assert 1 <= int(st.result) <= cfg.max_answer and b <= hi, (p.question, st)
        assert {p.n_steps for p in ps} == set(range(cfg.min_steps, cfg.max_steps + 1))


def test_text_format(problems: dict[tuple[str, str], list[Problem]]) -> None:
    line = re.compile(r"(\d+[-+*/]\d+)=<<\1=(\d+)>>\2")
    for ps in problems.values():
        for p in ps:
            assert p.question == " ".join(p.question.split()) and p.question.endswith(" ?")
            *step_lines, last = p.solution.split("\n")
            assert all(line.fullmatch(s) for s in step_lines) and last == f"#### {p.answer}"


def test_token_lengths_match_docs(problems: dict[tuple[str, str], list[Problem]]) -> None:
    table = token_table(problems)
    doc = "\n".join(s.strip() for s in (Path(__file__).parents[2] / "docs" / "embedded.md").read_text().splitlines())
    assert "\n".join(s.strip() for s in table.splitlines()) in doc, f"update the table in docs/embedded.md:\n{table}"
    easy = [len(tokens(p.solution)) for p in problems["easy", "train"]]
    assert 20 <= statistics.mean(easy) <= 35


# --- configuration -----------------------------------------------------------------------------


def test_config_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="max_factor"):
        arith.ArithConfig(max_factor=1)
    with pytest.raises(ValueError, match="min_steps"):
        arith.ArithConfig(min_steps=0)
    with pytest.raises(ValueError, match="unknown arith preset 'nope'"):
        arith.generate("train", 1, preset="nope")
    with pytest.raises(ValueError, match="unknown split"):
        arith.generate("val", 1)  # type: ignore[arg-type]
    monkeypatch.setattr(arith, "_MAX_MISSES", 2000)
    tiny = arith.ArithConfig("tiny", 1, 1, 1, 2, 2, 4)
    with pytest.raises(ValueError, match="fewer than 20000 distinct train problems"):
        arith.generate("train", 20000, preset=tiny)


def test_custom_config() -> None:
    cfg = arith.ArithConfig("wide", min_steps=3, max_steps=3, max_operand=9, max_factor=3, max_answer=30)
    ps = arith.generate("test", 200, seed=5, preset=cfg)
    assert ps[0].id == "arith-wide-test-5-0" and all(p.n_steps == 3 for p in ps)
    assert all(int(s.result) <= 30 for p in ps for s in p.steps)


@pytest.mark.parametrize("rung", arith.LADDER)
def test_every_rung_separates_process_from_outcome_and_has_a_format_hack(rung: str) -> None:
    """Right steps with a wrong answer line score 1 on process and 0 on outcome, and so does part of a
    chain right until its last step; a bare `#### N` line with a wrong N pays the format-only reward
    in full: the cases the audit's checks are there to catch."""
    from rlvr.rewards import format_gsm8k, outcome
    from rlvr.rewards.process import process_score

    for p in arith.generate("train", 20, seed=1, preset=rung):
        *lines, _ = p.solution.split("\n")
        wrong = str(int(p.answer) + 1)
        copied_wrong = "\n".join([*lines, f"#### {wrong}"])  # every step right, the answer line not
        assert outcome([copied_wrong], answer=[p.answer]) == [0.0] and process_score(copied_wrong, p.steps) == 1.0
        last = lines[-1].rsplit(">>", 1)[0].rsplit("=", 1)[0]
        slip = "\n".join([*lines[:-1], f"{last}={wrong}>>{wrong}", f"#### {wrong}"])  # right until the last step
        assert outcome([slip], answer=[p.answer]) == [0.0]
        if len(p.steps) >= 3:
            assert (process_score(slip, p.steps) or 0) > 0, slip
        assert format_gsm8k([f"#### {wrong}"]) == [1.0] and outcome([f"#### {wrong}"], answer=[p.answer]) == [0.0]
