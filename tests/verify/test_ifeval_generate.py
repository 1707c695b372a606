"""Tests for rlvr.verify.ifeval.generate: seeded, disjoint splits, valid arguments, and no contamination of
IFEval's 541 test prompts (no generated prompt equals one or shares an 8-gram of words with one)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlvr.verify.ifeval import REGISTRY
from rlvr.verify.ifeval.generate import base_requests, generate_prompts, split_requests

ROOT = Path(__file__).resolve().parents[2]
# IFEval's 541 test prompts: vendored with the ifeval task, else the shared copy
_VENDORED = ROOT / "src/rlvr/tasks/data/ifeval/input_data.jsonl"
IFEVAL_DATA = _VENDORED if _VENDORED.exists() else ROOT.parent / "shared/data/ifeval/input_data.jsonl"


def _grams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    w = re.findall(r"\w+", text.lower())
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def test_seeded_and_distinct() -> None:
    a = generate_prompts("train", 200, seed=3)
    assert a == generate_prompts("train", 200, seed=3)
    assert a != generate_prompts("train", 200, seed=4)
    assert len({r["prompt"] for r in a}) == 200
    assert generate_prompts("train", 50, seed=3) == a[:50]


def test_splits_use_disjoint_requests() -> None:
    train, dev = set(split_requests("train")), set(split_requests("dev"))
    assert not train & dev and len(train | dev) == len(base_requests()) >= 300
    for row in generate_prompts("dev", 100, seed=0):
        assert any(row["prompt"].startswith(r) for r in dev)
    with pytest.raises(ValueError):
        split_requests("test")  # type: ignore[arg-type]


def test_rows_validate_and_cover_every_type() -> None:
    rows = generate_prompts("train", 2000, seed=0)
    seen = set()
    for row in rows:
        assert len(row["instruction_id_list"]) == len(row["kwargs"]) >= 1
        for instruction_id, kwargs in zip(row["instruction_id_list"], row["kwargs"], strict=True):
            REGISTRY[instruction_id].args.model_validate(kwargs)
            seen.add(instruction_id)
    assert seen == set(REGISTRY)


@pytest.mark.skipif(not IFEVAL_DATA.exists(), reason="shared IFEval data absent")
def test_no_generated_prompt_overlaps_an_ifeval_test_prompt() -> None:
    test_rows = [json.loads(line) for line in IFEVAL_DATA.read_text().splitlines()]
    test_prompts = {r["prompt"].strip().lower() for r in test_rows}
    test_grams = set().union(*(_grams(r["prompt"]) for r in test_rows))
    for split in ("train", "dev"):
        for row in generate_prompts(split, 2000 if split == "train" else 500, seed=0):
            assert row["prompt"].strip().lower() not in test_prompts
            shared = _grams(row["prompt"]) & test_grams
            assert not shared, (row["prompt"], sorted(shared)[:3])


def test_no_unsatisfiable_pairs() -> None:
    from itertools import combinations

    from rlvr.verify.ifeval.generate import EXCLUDES

    for row in generate_prompts("train", 2000, seed=2):
        ids = row["instruction_id_list"]
        assert len(set(ids)) == len(ids)
        groups = [REGISTRY[i].group for i in ids]
        for a, b in combinations(ids, 2):
            assert frozenset({a, b}) not in EXCLUDES, row["prompt"]
        for group in set(groups):
            assert groups.count(group) <= (2 if group in ("keywords", "format") else 1), row["prompt"]
