"""The `ifeval` task: IFEval's 541 prompts vendored as test, generated train/dev disjoint from them, the
verdict is IFEval's strict prompt-level rule, and the gold columns reach the rewards and the verifier."""

from __future__ import annotations

import json

import pytest

from rlvr.rewards import outcome
from rlvr.tasks import DataError, get_task, load_task
from rlvr.tasks.ifeval_task import ifeval_path, load_ifeval_jsonl


def test_ifeval_test_split_is_the_541_vendored_prompts_with_their_licence():
    probs = load_task("ifeval", "test")
    assert len(probs) == 541 and len({p.id for p in probs}) == 541
    assert (ifeval_path().parent / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert all(p.columns["instruction_id_list"] and p.columns["prompt"] == p.question for p in probs)


def test_generated_splits_are_seeded_and_disjoint_from_the_test_prompts():
    train = load_task("ifeval", "train", n=200, seed=3)
    assert [p.question for p in train] == [p.question for p in load_task("ifeval", "train", n=200, seed=3)]
    dev = load_task("ifeval", "dev", n=50)
    test = {p.question for p in load_task("ifeval", "test")}
    assert not ({p.question for p in train} | {p.question for p in dev}) & test
    assert not {p.question for p in train} & {p.question for p in dev}


def test_the_verdict_is_strict_prompt_level_and_the_outcome_reward_reads_the_columns():
    task = get_task("ifeval")
    p = next(p for p in load_task("ifeval", "test") if p.columns["instruction_id_list"] == ["punctuation:no_comma"])
    good, bad = "A reply without any of those marks.", "A reply, with a comma."
    assert task.verify(good, p.answer, **p.columns).status == "correct"
    v = task.verify(bad, p.answer, **p.columns)
    assert v.status == "wrong" and "comma" in v.reason
    assert task.verify("  ", p.answer, **p.columns).status == "unparseable_answer"
    cols = {k: [v, v] for k, v in p.columns.items()}
    assert outcome([good, bad], answer=[p.answer] * 2, task=["ifeval"] * 2, **cols) == [1.0, 0.0]


def test_a_bad_ifeval_file_is_one_line_naming_the_line(tmp_path):
    f = tmp_path / "if.jsonl"
    f.write_text(json.dumps({"prompt": "Say hi.", "instruction_id_list": ["no:such"], "kwargs": [{}]}) + "\n")
    with pytest.raises(DataError, match=r"if\.jsonl:1: field 'instruction_id_list'"):
        load_ifeval_jsonl(f)
    f.write_text(json.dumps({"prompt": "Say hi.", "instruction_id_list": ["punctuation:no_comma"]}) + "\n")
    assert load_ifeval_jsonl(f)[0].columns["kwargs"] == [{}]


def test_loose_mode_judges_ifeval_s_eight_variants():
    """`task_settings: {mode: loose}` makes pass@k, compare and the outcome reward IFEval's loose accuracy."""
    task = get_task("ifeval")
    strict = next(
        p for p in load_task("ifeval", "test") if p.columns["instruction_id_list"] == ["punctuation:no_comma"]
    )
    loose = next(p for p in load_task("ifeval", "test", mode="loose") if p.id == strict.id)
    reply = "Sure, here it is:\nA reply without any of those marks."
    assert task.verify(reply, strict.answer, **strict.columns).status == "wrong"
    assert task.verify(reply, loose.answer, **loose.columns).status == "correct"
    assert task.verify("A reply, with a comma inside.", loose.answer, **loose.columns).status == "wrong"
