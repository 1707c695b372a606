"""rlvr.runs: the one reader and writer of run-folder files (schema versions, NaN policy, errors)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rlvr.runs import (
    SCHEMA_VERSION,
    RunFileError,
    append_jsonl,
    clean,
    read_eval,
    read_json,
    read_jsonl,
    read_manifest,
    read_samples,
    write_json,
    write_jsonl,
)


def _eval(**changes) -> dict:  # type: ignore[no-untyped-def]
    row = {"id": "p0", "n": 2, "correct": 1, "tokens": 10.0, "greedy": True}
    body = {"task": "arith", "split": "test", "metrics": {"pass@1": {"value": 0.5, "ci": [0.4, 0.6], "k": 1, "n": 2}},
            "per_problem": [row]}  # fmt: skip
    body.update(changes)
    return body


def test_json_round_trip_writes_the_schema_version_and_nulls_for_nan(tmp_path: Path) -> None:
    path = write_json(tmp_path / "x.json", {"a": math.nan, "b": np.float64("inf"), "c": np.bool_(True), "d": (1, 2)})
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert read_json(path) == {"schema_version": SCHEMA_VERSION, "a": None, "b": None, "c": True, "d": [1, 2]}
    assert not list(tmp_path.glob(".*tmp"))  # the temporary file was renamed away


def test_a_newer_schema_version_is_refused_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "eval.json").write_text(json.dumps({**_eval(), "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(RunFileError, match=r"eval.json: schema version 2 is newer than this rlvr reads \(1\)"):
        read_eval(tmp_path)
    (tmp_path / "eval.json").write_text(json.dumps({**_eval(), "schema_version": "one"}))
    with pytest.raises(RunFileError, match="field 'schema_version': expected a positive integer"):
        read_eval(tmp_path)


def test_a_file_without_a_version_reads_as_version_1(tmp_path: Path) -> None:
    (tmp_path / "eval.json").write_text(json.dumps(_eval()))
    e = read_eval(tmp_path)
    assert e.schema_version == 1 and e.per_problem[0].correct == 1 and e.metric("pass@1").value == 0.5  # type: ignore[union-attr]
    assert e.metric("greedy") is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"per_problem": [{"id": "p0", "n": 2, "correct": 3, "tokens": 1.0}]},
         "field 'per_problem[0].correct': expected a count of correct samples in 0..2, got 3"),
        ({"per_problem": [{"id": "p0", "n": 0, "correct": 0, "tokens": 1.0}]},
         "field 'per_problem[0].n': expected a sample count >= 1, got 0"),
        ({"per_problem": [{"id": 7, "n": 1, "correct": 0, "tokens": 1.0}]}, "field 'per_problem[0].id'"),
        ({"metrics": {"pass@1": {"value": "high"}}}, "field 'metrics.pass@1.value'"),
        ({"per_problem": None}, "field 'per_problem'"),
    ],
)  # fmt: skip
def test_a_bad_eval_json_names_the_field(tmp_path: Path, changes: dict, message: str) -> None:
    (tmp_path / "eval.json").write_text(json.dumps(_eval(**changes)))
    with pytest.raises(RunFileError) as e:
        read_eval(tmp_path)
    assert str(e.value) == f"{tmp_path / 'eval.json'}: {message}" or message in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_task_and_torn_json_name_the_file(tmp_path: Path) -> None:
    body = _eval()
    del body["task"]
    (tmp_path / "eval.json").write_text(json.dumps(body))
    with pytest.raises(RunFileError, match="eval.json: field 'task': missing"):
        read_eval(tmp_path)
    (tmp_path / "eval.json").write_text('{"task": "arith",\n "split": ')
    with pytest.raises(RunFileError, match=r"eval.json:2: invalid JSON"):
        read_eval(tmp_path)


def test_jsonl_rows_append_and_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", [{"step": 1, "loss": math.nan}])
    append_jsonl(path, [{"step": 2, "loss": 0.5}])
    assert read_jsonl(path) == [{"step": 1, "loss": None}, {"step": 2, "loss": 0.5}]
    with path.open("a") as fh:
        fh.write("\n[1]\n")
    with pytest.raises(RunFileError, match=r"m.jsonl:4: expected a JSON object"):
        read_jsonl(path)
    assert read_jsonl(tmp_path / "none.jsonl", missing_ok=True) == []
    with pytest.raises(RunFileError, match="none.jsonl: no such file"):
        read_jsonl(tmp_path / "none.jsonl")


def test_records_are_strict_when_written_and_lenient_when_read(tmp_path: Path) -> None:
    """A misspelt field fails in the writer; a file from a newer rlvr (an unknown field, at any depth)
    still reads, without it; any other error still names the file and field."""
    from pydantic import ValidationError

    from rlvr.runs import Manifest

    with pytest.raises(ValidationError, match="wal_s"):
        Manifest(command="train", wal_s=3.5)  # type: ignore[call-arg]
    newer = {"command": "train", "finished": True, "wall_s": 3.5, "future": {"x": 1}, "host": {"cpus": 2, "gpu": "h"}}
    write_json(tmp_path / "manifest.json", newer)
    m = read_manifest(tmp_path)
    assert m.command == "train" and m.finished and m.wall_s == 3.5 and m.host.cpus == 2
    assert "future" not in m.model_dump() and "gpu" not in m.host.model_dump()
    write_json(tmp_path / "manifest.json", {**newer, "wall_s": "long"})
    with pytest.raises(RunFileError, match=r"manifest.json: field 'wall_s'"):
        read_manifest(tmp_path)
    assert clean({1: {2}}) == {"1": [2]}


def test_jsonl_lines_split_on_newlines_only(tmp_path: Path) -> None:
    """A completion holding U+2028 (written raw with ensure_ascii=False) stays one row."""
    path = write_jsonl(tmp_path / "s.jsonl", [{"completion": "a\u2028b\x85c"}, {"completion": "d"}])
    assert [r["completion"] for r in read_jsonl(path)] == ["a\u2028b\x85c", "d"]


def test_manifest_data_refs_and_the_earlier_skipped_prompts_place(tmp_path: Path) -> None:
    earlier = {"train": {"task": "arith", "n": 5, "hash": "h1"}, "dev": {"task": "arith", "n": 2, "hash": "h2"},
               "skipped_long_prompts": ["p3"]}  # fmt: skip
    write_json(tmp_path / "manifest.json", {"command": "train", "data": earlier})
    m = read_manifest(tmp_path)
    assert m.data_hash("train") == "h1" and m.data_hash("dev") == "h2" and m.data_hash("test") is None
    assert m.data["train"].skipped_long_prompts == ["p3"] and "skipped_long_prompts" not in m.data


def test_samples_read_typed_and_a_bad_row_names_file_line_and_field(tmp_path: Path) -> None:
    rows = [{"problem_id": "p0", "completion": "4", "correct": True, "tokens": 2, "rewards": {"outcome": 1.0}},
            {"problem_id": "p1", "completion": "5", "correct": False, "tokens": 3, "gold": "4", "x": 1}]  # fmt: skip
    path = write_jsonl(tmp_path / "samples.jsonl", rows)
    got = read_samples(path)
    assert got[0].rewards == {"outcome": 1.0} and got[1].gold == "4" and "x" not in got[1].model_dump()
    assert read_samples(tmp_path / "none.jsonl", missing_ok=True) == []
    write_jsonl(path, [rows[0], {**rows[1], "tokens": "many"}])
    with pytest.raises(RunFileError, match=r"samples.jsonl:2: field 'tokens': "):
        read_samples(path)


def test_metrics_log_reads_null_as_nan_and_names_a_bad_line(tmp_path: Path) -> None:
    from rlvr.runs.metrics import read_metrics

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "train/accuracy": 0.5, "note": "x"}\n{"train/accuracy": null, "lr": 1e-5}\n')
    log = read_metrics(tmp_path)
    assert len(log) == 2 and log.has("lr") and not log.has("note")  # a string is not a metric
    steps, values = log.series("train/accuracy")
    assert steps == [1, 2] and values[0] == 0.5 and math.isnan(values[1])  # no step: its position
    assert log.tail_mean("train/accuracy") == 0.5 and log.tail_mean("missing") is None
    assert read_metrics(tmp_path / "nope.jsonl", missing_ok=True).rows == []
    path.write_text('{"step": 1}\n{"step": "two"}\n')
    with pytest.raises(RunFileError, match=r"metrics.jsonl:2: field 'step'"):
        read_metrics(path)


def test_run_dir_writes_its_manifest_as_a_record_and_resume_keeps_what_was_recorded(tmp_path: Path) -> None:
    """RunDir keeps manifest.json as a `Manifest`: updates are validated (a bad seed is refused where it
    is written), only fields given are written, and a resumed run keeps its seeds, data and paths."""
    from pydantic import BaseModel, ValidationError

    from rlvr.runs import RunDir

    class Cfg(BaseModel):
        out: str
        seed: int = 0

    run = RunDir(tmp_path / "r", Cfg(out=str(tmp_path / "r")), command="train")
    run.write_manifest(
        seeds={"train": 3}, data={"train": {"task": "arith", "n": 2, "hash": "h"}}, prompt_format="plain"
    )
    with pytest.raises(ValidationError):
        run.write_manifest(seeds={"train": "three"})
    raw = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert list(raw)[:2] == ["schema_version", "command"] and "finished" not in raw and "wall_s" not in raw
    assert raw["data"] == {"train": {"task": "arith", "n": 2, "hash": "h"}} and raw["prompt_format"] == "plain"
    run.write_manifest(finished=True, wall_s=1.0)
    run.close()
    again = RunDir(tmp_path / "r", Cfg(out=str(tmp_path / "r")), command="train", resume=True)
    m = read_manifest(tmp_path / "r")
    assert again.manifest.seeds == {"train": 3} and m.data_hash("train") == "h" and m.resumed_from == raw["created"]
    assert not m.finished and m.prompt_format is None  # a resumed run is not finished until it says so
