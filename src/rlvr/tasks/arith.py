"""Synthetic GSM8K-style arithmetic: the embedded default task, small enough to learn on two cores.

A problem is a short story built from a template plus a chain of 1-4 operations (+, -, *, exact /)
on positive integers. Its solution is GSM8K's format cut down to the calculator annotations: one
line `expr=<<expr=result>>result` per step, the running value always the left operand, then the
line `#### answer`:

>>> p = generate("train", 1, seed=0)[0]
>>> print(p.question)
Ben has 2 bags with 14 books in each bag . He finds 10 more . How many books does he have now ?
>>> print(p.solution)
14*2=<<14*2=28>>28
28+10=<<28+10=38>>38
#### 38
>>> p.id, p.answer, p.meta
('arith-easy-train-0-0', '38', {'template': 'bags', 'preset': 'easy', 'split': 'train'})

Words and punctuation are separated by single spaces so a word-level tokenizer sees each as one
token; numbers are plain digits (the tokenizer splits them). The rungs (`PRESETS`, `LADDER`), the
splits (`split_of`) and the problems' lengths in tokens: docs/embedded.md, "The task ladder".
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rlvr.tasks.problem import Problem, Step

__all__ = ["ArithConfig", "LADDER", "PRESETS", "SPLITS", "Split", "generate", "split_of", "vocabulary"]

Split = Literal["train", "test", "dev", "holdout"]
SPLITS: tuple[Split, ...] = ("train", "test", "dev", "holdout")
_MAX_STEPS = 4  # the chain templates need max_steps + 1 distinct names (there are six)
_MAX_DISTRACTORS = 2  # each names one of the people a story leaves out and an item it does not ask about
_MAX_MISSES = 50_000  # consecutive rejected candidates before giving up (the question pool is spent)


@dataclass(frozen=True)
class ArithConfig:
    """Difficulty knobs of the arithmetic task.

    Numbers written in a question are in `[min_operand, max_operand]` for + and -, and in
    `[2, max_factor]` for * and /; every intermediate value and the answer lie in
    `[1, max_answer]`. `name` goes into problem ids and `meta["preset"]` and seeds the generator.

    >>> ArithConfig(min_steps=3, max_steps=2)
    Traceback (most recent call last):
    ...
    ValueError: ArithConfig.max_steps: must be in [min_steps, 4] (min_steps=3), got 2
    """

    name: str = "custom"
    min_steps: int = 1
    max_steps: int = 2
    min_operand: int = 1
    max_operand: int = 20
    max_factor: int = 5
    max_answer: int = 50
    distractors: int = 0  # sentences about another person's other items, irrelevant to the question

    def __post_init__(self) -> None:
        def bad(field: str, rule: str, value: int) -> ValueError:
            return ValueError(f"ArithConfig.{field}: must be {rule}, got {value}")

        if not 1 <= self.min_steps <= _MAX_STEPS:
            raise bad("min_steps", f"in [1, {_MAX_STEPS}]", self.min_steps)
        if not self.min_steps <= self.max_steps <= _MAX_STEPS:
            rule = f"in [min_steps, {_MAX_STEPS}] (min_steps={self.min_steps})"
            raise bad("max_steps", rule, self.max_steps)
        if self.min_operand < 1:
            raise bad("min_operand", ">= 1", self.min_operand)
        if self.max_operand < self.min_operand:
            raise bad("max_operand", f">= min_operand ({self.min_operand})", self.max_operand)
        if self.max_factor < 2:
            raise bad("max_factor", ">= 2", self.max_factor)
        if self.max_answer < self.min_operand + 1:
            raise bad("max_answer", f"> min_operand ({self.min_operand})", self.max_answer)
        if not 0 <= self.distractors <= _MAX_DISTRACTORS:
            raise bad("distractors", f"in [0, {_MAX_DISTRACTORS}]", self.distractors)


PRESETS: dict[str, ArithConfig] = {  # the ladder, easiest first (docs/embedded.md)
    "small": ArithConfig("small", 2, 3, 1, 10, 3, 30),
    "easy": ArithConfig("easy", 1, 2, 1, 20, 5, 50),
    "medium": ArithConfig("medium", 1, 3, 1, 50, 9, 100),
    "distract": ArithConfig("distract", 1, 3, 1, 50, 9, 100, distractors=2),
    "hard": ArithConfig("hard", 2, 4, 1, 200, 12, 999),
    "expert": ArithConfig("expert", 2, 4, 1, 200, 12, 999, distractors=2),
}
LADDER: tuple[str, ...] = tuple(PRESETS)

# --- templates ---------------------------------------------------------------------------------
# Fields: {a} first number, {b} operand of the step, {N} {O} {R} first three people, {X} {Y} the
# known and the new person of a comparison step, {P}/{p} the subject's pronoun, {items} the object.

_NAMES = ("Tom", "Ann", "Sam", "Mia", "Ben", "Eva")
_CASTS = tuple(itertools.permutations(_NAMES))  # drawing one is faster than rng.sample
_SHE = frozenset({"Ann", "Mia", "Eva"})
_ITEMS = ("apples", "pens", "cards", "books", "eggs", "stamps")

_ONE: dict[str, tuple[str, ...]] = {  # one person's story events
    "+": ("{P} buys {b} more .", "{P} finds {b} more ."),
    "-": ("{P} gives {b} to {R} .", "{P} loses {b} ."),
    "*": ("Then {p} has {b} times as many .",),
    "/": ("{P} puts them into {b} equal bags and keeps one bag .",),
}
_TWO: dict[str, tuple[str, ...]] = {  # the same events for a pair of people
    "+": ("They buy {b} more .", "They find {b} more ."),
    "-": ("They give {b} to {R} .", "They lose {b} ."),
    "*": ("Then they have {b} times as many .",),
    "/": ("They put them into {b} equal bags and keep one bag .",),
}
_COMPARE: dict[str, tuple[str, ...]] = {
    "+": ("{Y} has {b} more than {X} .",),
    "-": ("{Y} has {b} fewer than {X} .",),
    "*": ("{Y} has {b} times as many as {X} .",),
}
_STEPS: dict[str, tuple[str, ...]] = {
    "+": ("Add {b} .",),
    "-": ("Subtract {b} .",),
    "*": ("Multiply by {b} .",),
    "/": ("Divide by {b} .",),
}
_DISTRACT = "{D} has {d} {other} ."  # {D}: a person outside the story, {other}: an item not asked about
_ONE_Q = "How many {items} does {p} have now ?"
_TWO_Q = "How many {items} do they have now ?"


@dataclass(frozen=True)
class _Template:
    """A story type. The opening is `start` (value {a}, no step) or, when `combine` is set, one
    phrase that combines {a} and {b} into the first step. Step i (from 0) compares person i+1 ({Y})
    with person i ({X}); `subject` is the index of the person the pronouns refer to."""

    name: str
    start: str
    combine: Mapping[str, tuple[str, ...]]
    ops: Mapping[str, tuple[str, ...]]
    question: str
    subject: int = 0


_TRAIN: tuple[_Template, ...] = (
    _Template("story", "{N} has {a} {items} .", {}, _ONE, _ONE_Q),
    _Template("pair", "{N} and {O} have {a} {items} .", {}, _TWO, _TWO_Q),
    _Template("steps", "Start with {a} .", {}, _STEPS, "What is the result ?"),
    _Template("compare", "{N} has {a} {items} .", {}, _COMPARE, "How many {items} does {Y} have ?"),
    _Template("bags", "", {"*": ("{N} has {b} bags with {a} {items} in each bag .",)}, _ONE, _ONE_Q),
)
_HOLDOUT: tuple[_Template, ...] = (
    _Template("pool", "", {"+": ("{N} has {a} {items} and {O} has {b} {items} .",)}, _TWO, _TWO_Q),
    _Template("split", "", {"/": ("{N} puts {a} {items} into {b} equal bags and keeps one bag .",)}, _ONE, _ONE_Q),
    _Template(
        "then",
        "",
        {op: tuple("{N} has {a} {items} . " + s for s in ph) for op, ph in _COMPARE.items()},
        _ONE,
        _ONE_Q,
        subject=1,
    ),
)


# --- generation --------------------------------------------------------------------------------


def split_of(question: str) -> Literal["train", "test", "dev"]:
    """The split a training-template question belongs to: sha256 bucket of its text.

    >>> split_of("Start with 3 . Add 4 . What is the result ?")
    'train'
    """
    bucket = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big") % 100
    return "train" if bucket < 80 else "test" if bucket < 90 else "dev"


def _operands(op: str, x: int, cfg: ArithConfig) -> Sequence[int]:
    """Every `b` for which `x op b` is a valid step under `cfg` (possibly none)."""
    if op == "+":
        return range(cfg.min_operand, min(cfg.max_operand, cfg.max_answer - x) + 1)
    if op == "-":
        return range(cfg.min_operand, min(cfg.max_operand, x - 1) + 1)
    if op == "*":
        return range(2, min(cfg.max_factor, cfg.max_answer // x) + 1)
    return [d for d in range(2, min(cfg.max_factor, x) + 1) if x % d == 0]


def _step(
    x: int, ops: Mapping[str, tuple[str, ...]], cfg: ArithConfig, rng: random.Random
) -> tuple[str, int, Step, int] | None:
    """Draw a valid operation on `x`: `(phrase, b, Step, new value)`, or None if none is valid.

    The operation is uniform over `ops`; when it has no valid operand the next one (in the order
    of `ops`, cyclically) is tried."""
    keys = tuple(ops)
    first = rng.randrange(len(keys))
    for i in range(len(keys)):
        op = keys[(first + i) % len(keys)]
        choices = _operands(op, x, cfg)
        if choices:
            b = rng.choice(choices)
            y = x + b if op == "+" else x - b if op == "-" else x * b if op == "*" else x // b
            expr = f"{x}{op}{b}"
            return rng.choice(ops[op]), b, Step(expr, str(y)), y
    return None


def _sample(tpl: _Template, cfg: ArithConfig, rng: random.Random) -> tuple[str, list[Step]] | None:
    """One question and its steps from a template, or None when the draw hits a dead end."""
    n_steps = rng.randint(cfg.min_steps, cfg.max_steps)
    people = rng.choice(_CASTS)
    subject = people[tpl.subject]
    she = subject in _SHE
    f: dict[str, object] = {
        "N": people[0],
        "O": people[1],
        "R": people[2],
        "items": rng.choice(_ITEMS),
        "P": "She" if she else "He",
        "p": "she" if she else "he",
    }
    sentences: list[str] = []
    steps: list[Step] = []
    f["X"], f["Y"] = people[0], people[1]
    lo, hi = cfg.min_operand, min(cfg.max_operand, cfg.max_answer)
    if tpl.combine:
        for _ in range(10):  # an opening division needs a composite {a}: redraw it a few times
            x = f["a"] = rng.randint(lo, hi)
            if (drawn := _step(x, tpl.combine, cfg, rng)) is not None:
                break
        else:
            return None
        phrase, f["b"], st, x = drawn
        sentences.append(phrase.format(**f))
        steps.append(st)
    else:
        x = f["a"] = rng.randint(lo, hi)
        sentences.append(tpl.start.format(**f))
    while len(steps) < n_steps:
        drawn = _step(x, tpl.ops, cfg, rng)
        if drawn is None:
            return None
        phrase, f["b"], st, x = drawn
        f["X"], f["Y"] = people[len(steps)], people[len(steps) + 1]
        sentences.append(phrase.format(**f))
        steps.append(st)
    for _ in range(cfg.distractors):  # drawn after the story, so presets without them draw as before
        other = rng.choice([i for i in _ITEMS if i != f["items"]])
        text = _DISTRACT.format(D=people[_MAX_STEPS + 1], d=rng.randint(lo, hi), other=other)
        sentences.insert(rng.randint(1, len(sentences)), text)
    sentences.append(tpl.question.format(**f))
    return " ".join(sentences), steps


def _solution(steps: list[Step]) -> str:
    lines = [f"{s.expr}=<<{s.expr}={s.result}>>{s.result}" for s in steps]
    return "\n".join([*lines, f"#### {steps[-1].result}"])


def generate(split: Split, n: int, *, seed: int = 0, preset: str | ArithConfig = "easy") -> list[Problem]:
    """`n` distinct problems of a split, fully determined by `(split, seed, preset)`.

    Ids are `arith-<preset>-<split>-<seed>-<i>`; `meta` holds `template`, `preset` and `split`.

    >>> for p in generate("holdout", 2, seed=1):
    ...     print(p.question); print(p.solution)
    Ann has 3 eggs and Ben has 4 eggs . They give 3 to Eva . How many eggs do they have now ?
    3+4=<<3+4=7>>7
    7-3=<<7-3=4>>4
    #### 4
    Mia puts 10 cards into 2 equal bags and keeps one bag . How many cards does she have now ?
    10/2=<<10/2=5>>5
    #### 5
    """
    cfg = _resolve(preset)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    holdout = split == "holdout"
    templates = _HOLDOUT if holdout else _TRAIN
    rng = random.Random(f"rlvr.arith/{cfg.name}/{split}/{seed}")
    seen: set[str] = set()
    out: list[Problem] = []
    misses = 0
    while len(out) < n:
        tpl = rng.choice(templates)
        drawn = _sample(tpl, cfg, rng)
        if drawn is None or drawn[0] in seen or (not holdout and split_of(drawn[0]) != split):
            misses += 1
            if misses > _MAX_MISSES:
                raise ValueError(f"preset {cfg.name!r} has fewer than {n} distinct {split} problems")
            continue
        misses = 0
        question, steps = drawn
        seen.add(question)
        meta: dict[str, str | int | float] = {"template": tpl.name, "preset": cfg.name, "split": split}
        out.append(
            Problem(
                id=f"arith-{cfg.name}-{split}-{seed}-{len(out)}",
                question=question,
                answer=steps[-1].result,
                steps=steps,
                source="arith",
                solution=_solution(steps),
                meta=meta,
            )
        )
    return out


def _resolve(preset: str | ArithConfig) -> ArithConfig:
    if isinstance(preset, ArithConfig):
        return preset
    if preset not in PRESETS:
        raise ValueError(f"unknown arith preset {preset!r}: use one of {', '.join(PRESETS)}")
    return PRESETS[preset]


def _template_words(tpl: _Template) -> set[str]:
    phrases = [tpl.start, tpl.question, *(p for ph in (*tpl.combine.values(), *tpl.ops.values()) for p in ph)]
    people = dict.fromkeys(("{N}", "{O}", "{R}", "{X}", "{Y}"), _NAMES)
    fills = {**people, "{items}": _ITEMS, "{P}": ("He", "She"), "{p}": ("he", "she")}
    words: set[str] = set()
    for tok in " ".join(phrases).split():
        if tok in fills:
            words.update(fills[tok])
        elif tok not in ("{a}", "{b}"):
            words.add(tok)
    return words


def vocabulary(split: Split | None = None) -> set[str]:
    """Every word a question can contain (numbers excluded): of all templates, or of one split's.

    Holdout words are a subset of training words by construction (tested).

    >>> len(vocabulary()) < 150, vocabulary("holdout") <= vocabulary("train")
    (True, True)
    """
    if split is None:
        templates = _TRAIN + _HOLDOUT
    else:
        templates = _HOLDOUT if split == "holdout" else _TRAIN
    return set().union(*(_template_words(t) for t in templates))
