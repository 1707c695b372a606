"""Proposers of candidate reward functions (`reward(completions, **kwargs)` modules) for reward search
(docs/search.md, "Proposers"). `OfflineProposer` composes and mutates the primitives of
`rlvr.search.primitives`, recording each composition in a `# rlvr-spec:` line of the source so a later
round can read it back; `ChatProposer` asks an OpenAI-compatible server (`build_prompt`) and parses
```python blocks out of the reply. Neither executes candidate code: only the sandbox does."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.sandbox import ALLOWED_MODULES, DEFAULT_RANGE, static_check
from rlvr.search.primitives import IMPORTS, PRIMITIVES, get_primitive

__all__ = [
    "Candidate",
    "ChatProposer",
    "OfflineProposer",
    "RankedResult",
    "Rejected",
    "Term",
    "build_prompt",
    "compose",
    "normalized_hash",
]

SPEC_PREFIX = "# rlvr-spec: "
MAX_TERMS = 3
WEIGHT_RANGE = (0.1, 3.0)
WEIGHT_CLOSE = 0.25  # relative weight difference under which two same-primitive candidates are near-duplicates
PARAM_CLOSE = 0.1  # parameter difference, as a share of its range, under which parameters count as equal
TOP_K = 3  # parents drawn from the best-ranked history entries
# A fresh term's weight: comparable to the outcome term of the base rewards (1.0), so partial credit
# (steps, closeness, format) can outweigh it within a group; at 0.1 it hardly moved a GRPO advantage.
TERM_WEIGHT = (0.25, 1.5)


def redundant(terms: Sequence[Term]) -> bool:
    """True for a composition that is only the answer check again: the base rewards already hold the
    outcome term, and GRPO's group normalisation makes a reweighted outcome the control up to the
    small format term (docs/studies.md section 2b: four such candidates screened as the control)."""
    return all(t.primitive == "answer_correct" for t in terms)


@dataclass(frozen=True)
class Candidate:
    """A proposed reward: a unique name, its module source, what it measures, the names of the
    candidates it was derived from (empty for fresh ones) and the proposal round (1-based)."""

    name: str
    source: str
    description: str
    parents: tuple[str, ...] = ()
    round: int = 1


@dataclass(frozen=True)
class RankedResult:
    """A candidate's outcome in earlier rounds: its screening score and confidence interval, or the
    reason it failed (sandbox rejection, crash in training)."""

    name: str
    source: str
    description: str
    score: float | None = None
    ci: tuple[float, float] | None = None
    failure: str | None = None


@dataclass(frozen=True)
class Rejected:
    """A proposed block that was dropped before reaching the sandbox, and why."""

    index: int
    source: str
    reason: str


@dataclass(frozen=True)
class Term:
    """One weighted primitive of a composed reward."""

    primitive: str
    weight: float
    params: tuple[tuple[str, float], ...] = ()


def normalized_hash(source: str) -> str:
    """A hash of the source's syntax tree without comments, docstrings or layout (for duplicates)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return hashlib.sha256(" ".join(source.split()).encode()).hexdigest()[:16]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body.pop(0)
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def _range_of(terms: Sequence[Term]) -> tuple[float, float]:
    lo = sum(t.weight * get_primitive(t.primitive).value_range[0] for t in terms)
    hi = sum(t.weight * get_primitive(t.primitive).value_range[1] for t in terms)
    lo, hi = round(lo - 0.001, 3), round(hi + 0.001, 3)  # outward, so float error never leaves RANGE
    return lo, hi


def describe(terms: Sequence[Term]) -> str:
    """A one-line account of what a composed reward measures."""
    return " + ".join(f"{t.weight:g} x [{get_primitive(t.primitive).describe(dict(t.params))}]" for t in terms)


_REWARD_TEMPLATE = """
def as_text(completion):
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        completion = completion[-1].get("content", "")
    return completion if isinstance(completion, str) else str(completion)


def reward(completions, **kwargs):
    answers = list(kwargs.get("answer") or [])
    steps = list(kwargs.get("steps") or [])
    out = []
    for i, completion in enumerate(completions):
        text = as_text(completion)
        gold = answers[i] if i < len(answers) else None
        gold_steps = steps[i] if i < len(steps) and steps[i] else []
        try:
            value = {expr}
        except Exception:
            out.append(None)
            continue
        out.append(min(RANGE[1], max(RANGE[0], float(value))))
    return out
"""


def compose(terms: Sequence[Term], name: str = "candidate") -> str:
    """The module source of a weighted sum of primitives, with `RANGE` and a `# rlvr-spec:` line."""
    prims = [get_primitive(t.primitive) for t in terms]
    spec = {"terms": [[t.primitive, t.weight, dict(t.params)] for t in terms]}
    expr = " + ".join(f"{t.weight!r} * {p.call(dict(t.params))}" for t, p in zip(terms, prims, strict=True))
    lo, hi = _range_of(terms)
    parts = [
        f'"""{name}: {describe(terms)}"""\n',
        SPEC_PREFIX + json.dumps(spec, sort_keys=True) + "\n" + IMPORTS,
        f"RANGE = ({lo!r}, {hi!r})\n",
        *sorted({p.body for p in prims}),
        _REWARD_TEMPLATE.format(expr=expr).lstrip("\n"),
    ]
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def parse_spec(source: str) -> tuple[Term, ...] | None:
    """The terms recorded in a composed source, or None (not composed here, or damaged)."""
    for line in source.splitlines():
        if line.startswith(SPEC_PREFIX):
            try:
                raw = json.loads(line[len(SPEC_PREFIX) :])["terms"]
                terms = tuple(Term(str(p), float(w), tuple(sorted(dict(ps).items()))) for p, w, ps in raw)
            except (ValueError, KeyError, TypeError):
                return None
            ok = 0 < len(terms) <= MAX_TERMS and all(t.primitive in PRIMITIVES for t in terms)
            return terms if ok else None
    return None


def _near(a: Sequence[Term], b: Sequence[Term]) -> bool:
    """Same primitive set with close weights and parameters."""
    if sorted(t.primitive for t in a) != sorted(t.primitive for t in b):
        return False
    for ta, tb in zip(sorted(a, key=lambda t: t.primitive), sorted(b, key=lambda t: t.primitive), strict=True):
        if abs(ta.weight - tb.weight) > WEIGHT_CLOSE * max(ta.weight, tb.weight):
            return False
        pa, pb = dict(ta.params), dict(tb.params)
        for p in get_primitive(ta.primitive).params:
            span = (p.hi - p.lo) or 1.0
            if abs(pa.get(p.name, p.default) - pb.get(p.name, p.default)) > PARAM_CLOSE * span:
                return False
    return True


def _rank(history: Sequence[RankedResult]) -> list[RankedResult]:
    """Scored, non-failed results best first (ties by name, so the order is deterministic)."""
    ok = [h for h in history if h.failure is None and h.score is not None]
    return sorted(ok, key=lambda h: (-float(h.score or 0.0), h.name))


class OfflineProposer:
    """Composes primitives into candidate rewards without a model; see the module docstring."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def _rng(self, history: Sequence[RankedResult], n: int) -> random.Random:
        key = json.dumps([self.seed, n, [[h.name, h.score, h.failure, normalized_hash(h.source)] for h in history]])
        return random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))

    @staticmethod
    def _round(history: Sequence[RankedResult]) -> int:
        rounds = [int(m.group(1)) for h in history if (m := re.match(r"r(\d+)-", h.name))]
        return max(rounds, default=0 if not history else 1) + 1

    def _params(self, rng: random.Random, primitive: str) -> tuple[tuple[str, float], ...]:
        return tuple((p.name, p.draw(rng.random())) for p in get_primitive(primitive).params)

    def _term(self, rng: random.Random, primitive: str) -> Term:
        lo, hi = TERM_WEIGHT
        return Term(primitive, round(rng.uniform(lo, hi), 2), self._params(rng, primitive))

    def _fresh(self, rng: random.Random) -> list[Term]:
        """1-3 shaping terms at weights comparable to the base's outcome term, and in a quarter of the
        candidates the answer check again to rebalance them (never alone: see `redundant`)."""
        shaping = sorted(p for p in PRIMITIVES if p != "answer_correct")
        chosen = rng.sample(shaping, rng.randint(1, MAX_TERMS))
        if len(chosen) < MAX_TERMS and rng.random() < 0.25:
            chosen.insert(0, "answer_correct")
        return [self._term(rng, p) for p in chosen]

    def _mutate(self, rng: random.Random, terms: Sequence[Term], other: Sequence[Term] | None) -> list[Term]:
        out = list(terms)
        unused = sorted(set(PRIMITIVES) - {t.primitive for t in out})
        ops = ["reweight", "params", "swap"] + (["add"] if len(out) < MAX_TERMS and unused else [])
        ops += ["cross"] if other else []
        op = rng.choice(ops)
        i = rng.randrange(len(out))
        t = out[i]
        if op == "reweight":
            w = min(WEIGHT_RANGE[1], max(WEIGHT_RANGE[0], t.weight * rng.uniform(0.4, 2.2)))
            out[i] = Term(t.primitive, round(w, 2), t.params)
        elif op == "params" and t.params:
            out[i] = Term(t.primitive, t.weight, self._params(rng, t.primitive))
        elif op in ("swap", "params") and unused:
            out[i] = self._term(rng, rng.choice(unused))
        elif op == "add" and unused:
            out.append(self._term(rng, rng.choice(unused)))
        elif op == "cross" and other:
            pool = {x.primitive: x for x in list(other) + out}  # this parent's version wins on clashes
            out = [pool[p] for p in sorted(rng.sample(sorted(pool), min(len(pool), rng.randint(1, MAX_TERMS))))]
        return out

    def propose(self, n: int, history: Sequence[RankedResult] = ()) -> list[Candidate]:
        """Up to `n` candidates, none a near-duplicate of each other or of `history`."""
        rng = self._rng(history, n)
        rnd = self._round(history)
        parents = [(h.name, t) for h in _rank(history) if (t := parse_spec(h.source))][:TOP_K]
        seen_hashes = {normalized_hash(h.source) for h in history}
        seen_terms: list[Sequence[Term]] = [t for h in history if (t := parse_spec(h.source))]
        out: list[Candidate] = []
        for _ in range(50 * n):
            if len(out) >= n:
                break
            names: tuple[str, ...] = ()
            if parents and rng.random() < 0.8:  # mostly exploit the best, sometimes explore fresh ones
                name, terms = parents[len(out) if len(out) < len(parents) else rng.randrange(len(parents))]
                other = rng.choice(parents) if len(parents) > 1 else None
                if other is not None and other[0] == name:
                    other = None
                new = self._mutate(rng, terms, other[1] if other else None)
                names = (name,) if other is None or set(new) <= set(terms) else (name, other[0])
            else:
                new = self._fresh(rng)
            if redundant(new) or any(_near(new, s) for s in seen_terms):
                continue
            tag = f"r{rnd}-c{len(out):02d}"
            source = compose(new, tag)
            digest = normalized_hash(source)
            if digest in seen_hashes:
                continue
            seen_hashes.add(digest)
            seen_terms.append(new)
            out.append(Candidate(f"{tag}-{digest[:6]}", source, describe(new), names, rnd))
        return out


DEFAULT_EXAMPLES: tuple[Mapping[str, Any], ...] = (
    {
        "question": "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells the rest at $2 each. "
        "How much does she make every day?",
        "answer": "18",
        "completion": "Janet has 16-3-4=<<16-3-4=9>>9 eggs left.\nShe makes 9*2=<<9*2=18>>18 dollars.\n#### 18",
    },
)

_RULES = f"""Write each reward as a self-contained Python module that defines exactly one top-level function
`def reward(completions, **kwargs)` returning a list with one float (or None) per completion.
- kwargs columns (lists aligned with completions): answer (gold final answers as strings), steps (gold
  steps, objects with .expr and .result strings), prompts, question, problem_id.
- Completions are strings (GSM8K-style: "14*2=<<14*2=28>>28\\n#### 28"); they may be empty, huge or garbage.
- Optionally declare `RANGE = (lo, hi)` with numeric literals; every value must lie in it (default {DEFAULT_RANGE}).
- Allowed imports only: {", ".join(sorted(ALLOWED_MODULES))}. rlvr.verify provides verify_answer(completion,
  gold) -> Verdict(correct, parsed, reason), parse_steps(text) -> [ParsedStep(expr, result, valid)],
  match_steps(parsed, gold_steps) -> [bool], extract_answer(text) -> (str | None, reason), parse_number(text).
- Forbidden: dunder names, attributes starting with _, eval/exec/open/getattr/type/globals, classes,
  global statements, I/O. Code runs in a jail with a time limit; keep it fast and pure.
- Start each module with a docstring saying in one line what the reward measures."""


def _history_lines(history: Sequence[RankedResult], max_items: int = 20, max_source: int = 1500) -> list[str]:
    ranked = _rank(history)
    lines = ["Earlier candidates, best first (score = screening score, higher is better):"] if ranked else []
    for i, h in enumerate(ranked[:max_items], 1):
        ci = f" CI [{h.ci[0]:.3g}, {h.ci[1]:.3g}]" if h.ci else ""
        lines.append(f"{i}. {h.name}: score {h.score:.4g}{ci}; measured: {h.description}")
    for h in ranked[:2]:  # the best sources, to mutate
        lines.append(f"Source of {h.name}:\n```python\n{h.source[:max_source]}\n```")
    failed = [h for h in history if h.failure is not None or h.score is None]
    if failed:
        lines.append("Failed candidates (do not repeat these mistakes):")
        lines += [f"- {h.name} ({h.description}): {h.failure or 'no score'}" for h in failed[:max_items]]
    return lines


def build_prompt(
    task_examples: Sequence[Mapping[str, Any]], history: Sequence[RankedResult], n: int
) -> list[dict[str, str]]:
    """The chat messages asking for `n` new reward modules: task examples, the reward contract and
    sandbox rules, the ranked summary of earlier rounds with failures and their reasons."""
    system = "You design reward functions for reinforcement learning of a math-solving language model."
    parts = ["Task examples (question, gold answer, a correct completion):"]
    for ex in task_examples:
        parts.append(f"Q: {ex.get('question', '')}\nGold answer: {ex.get('answer', '')}")
        if ex.get("completion"):
            parts.append(f"Completion:\n{ex['completion']}")
    parts += [_RULES, *_history_lines(history)]
    parts.append(
        f"Propose {n} new, different reward functions. Do not submit near-duplicates of each other or of "
        "earlier candidates (same idea with slightly different constants counts as a duplicate). "
        f"Return exactly {n} ```python code blocks, one module each, and nothing else of substance."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def _docstring(source: str) -> str:
    """The first line of the module's docstring, else of `reward`'s, else a placeholder."""
    tree = ast.parse(source)
    fns = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "reward"]
    doc = ast.get_docstring(tree) or (ast.get_docstring(fns[0]) if fns else None)
    return doc.strip().splitlines()[0] if doc and doc.strip() else "LLM-proposed reward (no description given)"


_BLOCK = re.compile(r"```(?:python|py)[ \t]*\r?\n(.*?)```", re.DOTALL)


def parse_reply(text: str, rnd: int = 1) -> tuple[list[Candidate], list[Rejected]]:
    """Candidates from the ```python blocks of a reply, and the blocks dropped with the reason."""
    good: list[Candidate] = []
    bad: list[Rejected] = []
    seen: set[str] = set()
    for i, m in enumerate(_BLOCK.finditer(text)):
        source = m.group(1).strip() + "\n"
        st = static_check(source)
        digest = normalized_hash(source)
        if not st.ok:
            bad.append(Rejected(i, source, st.reason))
        elif digest in seen:
            bad.append(Rejected(i, source, "duplicate of an earlier block"))
        else:
            seen.add(digest)
            good.append(Candidate(f"llm-r{rnd}-c{i:02d}-{digest[:6]}", source, _docstring(source), (), rnd))
    return good, bad


class ChatProposer:
    """Asks an OpenAI-compatible chat server for candidates. Config from the arguments or the
    environment: RLVR_PROPOSER_BASE_URL, RLVR_PROPOSER_MODEL, RLVR_PROPOSER_API_KEY (or OPENAI_API_KEY).
    `rejected` holds the blocks dropped in the last call, with reasons."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.8,
        timeout: float = 120.0,
        task_examples: Sequence[Mapping[str, Any]] = DEFAULT_EXAMPLES,
    ) -> None:
        base = base_url or os.environ.get("RLVR_PROPOSER_BASE_URL")
        self.model = model or os.environ.get("RLVR_PROPOSER_MODEL") or ""
        if not base or not self.model:
            raise ValueError("ChatProposer needs base_url and model (or RLVR_PROPOSER_BASE_URL / RLVR_PROPOSER_MODEL)")
        base = base.rstrip("/")
        if re.fullmatch(r"https?://[^/]+", base):  # bare host: the OpenAI client expects the /v1 prefix
            base += "/v1"
        self.base_url = base
        key = api_key or os.environ.get("RLVR_PROPOSER_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.api_key = key or "EMPTY"  # local servers (vLLM, llama.cpp) accept any key
        self.temperature = temperature
        self.timeout = timeout
        self.task_examples = list(task_examples)
        self.rejected: list[Rejected] = []
        self.rounds = 0

    def _complete(self, messages: list[dict[str, str]]) -> str:
        try:
            import openai
        except ImportError as e:
            raise ImportError("ChatProposer needs the `openai` package: pip install openai") from e
        client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=1)
        reply = client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            temperature=self.temperature,
        )
        return reply.choices[0].message.content or ""

    def propose(self, n: int, history: Sequence[RankedResult] = ()) -> list[Candidate]:
        """Up to `n` candidates parsed from one chat completion; dropped blocks go to `rejected`."""
        self.rounds += 1
        text = self._complete(build_prompt(self.task_examples, history, n))
        known = {normalized_hash(h.source) for h in history}
        good, bad = parse_reply(text, self.rounds)
        fresh = [c for c in good if normalized_hash(c.source) not in known]
        bad += [Rejected(-1, c.source, "duplicate of an earlier candidate") for c in good if c not in fresh]
        self.rejected = bad
        return fresh[:n]
