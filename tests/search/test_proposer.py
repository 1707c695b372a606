"""Tests for rlvr.search.proposer and rlvr.search.primitives: offline composition validated in the sandbox,
determinism, mutation from history, prompt building, and ChatProposer against a fake local server."""

from __future__ import annotations

from typing import Any

import pytest

from rlvr.sandbox import SandboxUnavailable, validate
from rlvr.search.primitives import PRIMITIVES
from rlvr.search.proposer import (
    Candidate,
    ChatProposer,
    OfflineProposer,
    RankedResult,
    Term,
    build_prompt,
    compose,
    normalized_hash,
    parse_spec,
    redundant,
)
from rlvr.tasks import Step

GOOD = "16-3-4=<<16-3-4=9>>9 eggs\n9*2=<<9*2=18>>18 dollars\n#### 18"
BAD = "16-3-4=<<16-3-4=9>>9 eggs\n9*3=<<9*3=27>>27 dollars\n#### 27"
GOLD_STEPS = [Step("16-3-4", "9"), Step("9*2", "18")]


def _run(source: str, completions: list[str]) -> list[Any]:
    """Trusted, generated code only: exec in-process (the sandbox is tested separately)."""
    ns: dict[str, Any] = {}
    exec(source, ns)  # noqa: S102
    n = len(completions)
    return ns["reward"](completions, answer=["18"] * n, steps=[GOLD_STEPS] * n)


def _history(cands: list[Candidate]) -> list[RankedResult]:
    out = [RankedResult(c.name, c.source, c.description, score=0.1 * i, ci=(0.0, 1.0)) for i, c in enumerate(cands)]
    out[0] = RankedResult(cands[0].name, cands[0].source, cands[0].description, failure="probe: returned None")
    return out


@pytest.fixture(scope="module")
def rounds() -> tuple[list[Candidate], list[RankedResult], list[Candidate]]:
    first = OfflineProposer(7).propose(6, [])
    history = _history(first)
    return first, history, OfflineProposer(7).propose(6, history)


def test_every_candidate_passes_sandbox(rounds: Any) -> None:
    first, _, second = rounds
    assert len(first) == len(second) == 6
    for c in first + second:
        try:
            v = validate(c.source)
        except SandboxUnavailable as e:
            pytest.skip(f"sandbox unavailable: {e}")
        assert v.accepted, (c.name, v.stage, v.reason)


def test_candidates_distinct_and_deterministic(rounds: Any) -> None:
    first, history, second = rounds
    everything = first + second
    assert len({c.name for c in everything}) == len(everything)
    assert len({normalized_hash(c.source) for c in everything}) == len(everything)
    assert OfflineProposer(7).propose(6, []) == first
    assert OfflineProposer(7).propose(6, history) == second
    assert OfflineProposer(8).propose(6, []) != first


def test_round_two_derives_from_top_of_history(rounds: Any) -> None:
    first, history, second = rounds
    top = {h.name for h in sorted(history[1:], key=lambda h: -(h.score or 0))[:3]}
    assert all(c.round == 1 and c.parents == () for c in first)
    assert all(c.round == 2 for c in second)
    derived = [c for c in second if c.parents]
    assert derived, "round 2 should mutate earlier candidates"
    assert all(set(c.parents) <= top for c in derived)
    assert history[0].name not in {p for c in second for p in c.parents}  # failed ones are not parents
    for c in derived:  # each child is a real change of its first parent
        parent = next(h for h in history if h.name == c.parents[0])
        assert parse_spec(c.source) != parse_spec(parent.source)


def test_offline_candidates_shape_beyond_the_outcome_term() -> None:
    """The base rewards already hold the outcome term: a candidate that is only the answer check again
    screens as the control (docs/studies.md section 2b), so none is proposed, shaping terms come at
    weights comparable to the outcome's, and a length limit can bite on a tiny model's 10-50 characters."""
    first = OfflineProposer(0).propose(12, [])
    history = [RankedResult(c.name, c.source, c.description, score=0.1, ci=(0.0, 0.2)) for c in first]
    specs = [parse_spec(c.source) for c in first + OfflineProposer(0).propose(12, history)]
    assert all(t is not None and not redundant(t) for t in specs)
    assert redundant([Term("answer_correct", 1.7)]) and not redundant(
        [Term("answer_correct", 1.0), Term("format_marker", 0.5)]
    )
    shaping = [t.weight for s in specs for t in s or () if t.primitive != "answer_correct"]
    assert max(shaping) >= 1.0
    limits = [dict(t.params)["limit"] for s in specs for t in s or () if t.primitive == "length_penalty"]
    draws = [PRIMITIVES["length_penalty"].params[0].draw(u / 10) for u in range(11)]
    assert min(draws) == 16 and max(draws) == 2000 and sum(d < 51 for d in draws) >= 3  # log-uniform
    assert all(16 <= x <= 2000 for x in limits)


def test_answer_primitive_ranks_correct_above_incorrect() -> None:
    source = compose([Term("answer_correct", 1.0)])
    good, bad, empty = _run(source, [GOOD, BAD, ""])
    assert good == 1.0 and bad == 0.0 and empty == 0.0


def test_primitives_measure_what_they_say() -> None:
    def one(name: str, text: str, **params: float) -> float:
        return _run(compose([Term(name, 1.0, tuple(params.items()))]), [text])[0]

    assert one("format_marker", GOOD) == 1.0 and one("format_marker", "the answer is 18") == 0.0
    assert one("valid_steps", GOOD) == 1.0 and one("valid_steps", "2+2=<<2+2=5>>5\n#### 5") == 0.0
    assert one("gold_step_match", GOOD) == 1.0 and one("gold_step_match", BAD) == 0.5
    assert one("step_count", GOOD, tolerance=0) == 1.0
    assert one("length_penalty", "x" * 700, limit=200, scale=1000) == pytest.approx(-0.5)
    assert one("no_repeats", "same line\nsame line\nother line\nsame line") == pytest.approx(-0.5)
    assert one("answer_is_last_step", GOOD) == 1.0 and one("answer_is_last_step", "9*2=18\n#### 17") == 0.0
    # a near miss earns part of the credit, a far one none: the sparse-outcome rung's partial credit
    assert one("answer_closeness", "#### 18") == 1.0
    assert one("answer_closeness", "#### 16", scale=0.5) == pytest.approx(1 - (2 / 18) / 0.5)
    assert one("answer_closeness", "#### 40") == 0.0 and one("answer_closeness", "no answer") == 0.0
    for p in PRIMITIVES.values():
        lo, hi = p.value_range
        assert lo <= one(p.name, GOOD) <= hi and lo <= one(p.name, "") <= hi


def test_build_prompt_has_ranked_summary_and_failures(rounds: Any) -> None:
    _, history, _ = rounds
    messages = build_prompt([{"question": "Q?", "answer": "18", "completion": GOOD}], history, 4)
    assert [m["role"] for m in messages] == ["system", "user"]
    text = messages[1]["content"]
    best = max(history[1:], key=lambda h: h.score or 0)
    assert f"1. {best.name}: score {best.score:.4g}" in text
    assert "probe: returned None" in text and history[0].name in text
    assert "def reward(completions, **kwargs)" in text and "rlvr.verify" in text
    assert "4 ```python" in text and "near-duplicates" in text


VALID = (
    'import re\nRANGE = (0, 1)\n\ndef reward(completions, **kwargs):\n    """Ends with a marker."""\n'
    "    return [1.0 if re.search(r'####', c) else 0.0 for c in completions]\n"
)
REPLY = f"Here you go.\n```python\n{VALID}```\nand\n```python\nimport os\ndef reward(:\n```\n"


def test_chat_proposer_against_fake_server(monkeypatch: pytest.MonkeyPatch, fake_chat_server: Any) -> None:
    pytest.importorskip("openai")
    server = fake_chat_server(lambda body, n: REPLY)
    monkeypatch.setenv("RLVR_PROPOSER_MODEL", "fake-model")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    proposer = ChatProposer(base_url=server.url, timeout=5)
    got = proposer.propose(2, [])
    assert server.requests[-1]["path"] == "/v1/chat/completions"
    assert server.requests[-1]["model"] == "fake-model"
    assert len(got) == 1 and got[0].source.strip() == VALID.strip()
    assert got[0].description == "Ends with a marker." and got[0].round == 1
    assert len(proposer.rejected) == 1 and "does not parse" in proposer.rejected[0].reason


def test_chat_proposer_needs_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLVR_PROPOSER_BASE_URL", raising=False)
    monkeypatch.delenv("RLVR_PROPOSER_MODEL", raising=False)
    with pytest.raises(ValueError, match="RLVR_PROPOSER_MODEL"):
        ChatProposer()
