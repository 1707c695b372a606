import json
from pathlib import Path

import pytest

from rlvr.tasks import DataError, HoldoutError, Step, load_task, problems_hash
from rlvr.tasks.gsm8k import load_gsm8k, load_jsonl
from rlvr.tasks.problem import GoldFormatError, parse_gsm8k_solution


def test_vendored_gsm8k_sizes_and_parsing() -> None:
    test = load_gsm8k("test")
    assert len(test) == 1319 and len(load_gsm8k("train")) == 7473
    p = test[0]
    assert p.id == "gsm8k-test-0" and p.answer == "18"
    assert p.steps == [Step("16-3-4", "9"), Step("9*2", "18")]
    assert all(p.answer and p.solution for p in test)


def test_gsm8k_dev_is_disjoint_from_train() -> None:
    train = {p.question for p in load_task("gsm8k", "train")}
    dev = {p.question for p in load_task("gsm8k", "dev")}
    assert dev and not train & dev
    assert len(train) + len(dev) == len({p.question for p in load_gsm8k("train")})


def test_malformed_jsonl_names_file_line_and_field(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    good = json.dumps({"question": "q?", "answer": "1+1=<<1+1=2>>2\n#### 2"})
    f.write_text(good + "\n" + json.dumps({"question": "q?", "answer": "no marker"}) + "\n")
    with pytest.raises(DataError, match=r"d.jsonl:2: field 'answer': no '#### <answer>' line"):
        load_jsonl(f)
    f.write_text(good + "\n{not json\n")
    with pytest.raises(DataError, match=r"d.jsonl:2: invalid JSON"):
        load_jsonl(f)
    f.write_text(json.dumps({"answer": "#### 2"}) + "\n")
    with pytest.raises(DataError, match=r"d.jsonl:1: field 'question'"):
        load_jsonl(f)


def test_local_jsonl_task(tmp_path: Path) -> None:
    f = tmp_path / "mine.jsonl"
    f.write_text(json.dumps({"question": "2 and 2?", "answer": "<<2+2=4>>4\n#### 4", "id": "x1"}) + "\n")
    (p,) = load_task(str(f), "test")
    assert (p.id, p.answer, p.steps, p.source) == ("x1", "4", [Step("2+2", "4")], "mine")


def test_holdout_refused_without_permission() -> None:
    with pytest.raises(HoldoutError):
        load_task("arith", "holdout", n=5)
    assert len(load_task("arith", "holdout", n=5, allow_holdout=True)) == 5
    with pytest.raises(DataError, match="no private holdout"):
        load_task("gsm8k", "holdout", allow_holdout=True)


def test_unknown_task() -> None:
    with pytest.raises(DataError, match="unknown task"):
        load_task("nope", "train")


def test_parse_solution_thousands_and_missing() -> None:
    assert parse_gsm8k_solution("a\n#### 1,000") == ("1000", [])
    with pytest.raises(GoldFormatError):
        parse_gsm8k_solution("#### ")


def test_problems_hash_changes_with_content() -> None:
    a = load_task("arith", "test", n=20)
    assert problems_hash(a) == problems_hash(load_task("arith", "test", n=20))
    assert problems_hash(a) != problems_hash(a[:-1])
