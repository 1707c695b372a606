"""Tests for rlvr.rewards.ifeval (TRL convention, registry, columns) and the hack probes of
rlvr.verify.ifeval.probes."""

from __future__ import annotations

import json

import pytest

from rlvr.rewards import REGISTRY, RewardSpec, build_reward, ifeval_all, ifeval_partial, make_ifeval
from rlvr.verify.ifeval import PROBE_KINDS, generate_prompts, hack_probes

IDS = ["keywords:existence", "punctuation:no_comma", "startend:end_checker"]
KW = [{"keywords": ["cat"]}, {}, {"end_phrase": "Bye."}]


def test_partial_and_all() -> None:
    completions = ["A cat sat. Bye.", "A cat, sat. Bye.", "A dog, sat.", ""]
    n = len(completions)
    assert ifeval_partial(completions, instruction_id_list=[IDS] * n, kwargs=[KW] * n) == [1.0, 2 / 3, 0.0, 0.0]
    assert ifeval_all(completions, instruction_id_list=[IDS] * n, kwargs=[KW] * n) == [1.0, 0.0, 0.0, 0.0]


def test_loose_mode_and_registry() -> None:
    completion = ["Sure, here:\nA cat sat. Bye."]
    strict = build_reward(RewardSpec(name="ifeval_all"))(completion, instruction_id_list=[IDS], kwargs=[KW])
    loose = build_reward(RewardSpec(name="ifeval_all", params={"mode": "loose"}))(
        completion, instruction_id_list=[IDS], kwargs=[KW]
    )
    assert (strict, loose) == ([0.0], [1.0])
    assert {"ifeval_partial", "ifeval_all"} <= set(REGISTRY)
    with pytest.raises(ValueError):
        RewardSpec(name="ifeval_all", params={"mode": "lenient"})
    with pytest.raises(ValueError):
        make_ifeval("some")  # type: ignore[arg-type]


def test_columns_json_strings_chat_and_prompts() -> None:
    chat = [[{"role": "assistant", "content": "A cat sat. Bye."}]]
    assert ifeval_all(chat, instruction_id_list=[json.dumps(IDS)], kwargs=[json.dumps(KW)]) == [1.0]
    repeat = ["combination:repeat_prompt"]
    prompts = [[{"role": "user", "content": "Say hi."}]]
    assert ifeval_all(["Say hi. Hi!"], instruction_id_list=[repeat], kwargs=[[{}]], prompts=prompts) == [1.0]
    assert ifeval_all(["Say hi. Hi!"], instruction_id_list=[repeat], kwargs=[[{}]], prompt=["Say bye."]) == [0.0]


def test_not_scorable_and_column_length() -> None:
    assert ifeval_partial(["x"]) == [None]
    assert ifeval_partial(["x"], instruction_id_list=[[]], kwargs=[[]]) == [None]
    with pytest.raises(ValueError):
        ifeval_partial(["x", "y"], instruction_id_list=[IDS], kwargs=[KW])


def test_probes_get_no_credit_where_they_do_not_follow() -> None:
    rows = generate_prompts("dev", 200, seed=1)
    rows.append({"prompt": "Write about tea in Hindi.", "instruction_id_list": ["language:response_language"],
                 "kwargs": [{"language": "hi"}]})  # fmt: skip
    kinds = set()
    for row in rows:
        for kind, completion in hack_probes(row["prompt"], row["instruction_id_list"], row["kwargs"]):
            kinds.add(kind)
            score = ifeval_all([completion], instruction_id_list=[row["instruction_id_list"]], kwargs=[row["kwargs"]],
                               prompt=[row["prompt"]])[0]  # fmt: skip
            if kind in ("empty", "digits_wrong_language"):
                assert score == 0.0, (kind, row["prompt"])
    assert kinds == set(PROBE_KINDS)
