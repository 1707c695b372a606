"""`rlvr eval` end to end on the tiny in-process model: one subprocess smoke run, the rest in-process.

Also `rlvr compare` once cli.py wires it (skipped until then)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rlvr import cli
from rlvr.evaluate.evaluation import EvalConfig
from rlvr.runs import read_eval
from rlvr.runs.eval import EvalSample

EVAL_KEYS = {
    "model", "task", "preset", "split", "data_hash", "n_problems", "n_samples", "temperature", "top_p",
    "max_new_tokens", "truncated_frac", "tokens_per_sample", "metrics", "by_difficulty", "per_problem",
    "fidelity", "seconds", "sampling", "statuses",
}  # fmt: skip
SAMPLE_KEYS = {
    "problem_id", "question", "prompt", "gold", "gold_solution", "gold_steps", "n_steps", "sample", "temperature",
    "completion", "parsed", "correct", "reason", "status", "tokens", "truncated",
}  # fmt: skip
TINY = ["--problems", "5", "--samples", "2", "--ks", "1,2"]


@pytest.fixture()
def one_thread(tmp_path: Path) -> list[str]:
    """`--config` with `threads: 1` (two threads on two shared, busy cores run several times slower) and short
    completions (the untrained tiny model never stops before max_new_tokens)."""
    cfg = tmp_path / "threads.yaml"
    cfg.write_text("threads: 1\nsampling: {max_new_tokens: 24}\n")
    return ["--config", str(cfg)]


@pytest.fixture(autouse=True)
def _keep_torch_threads() -> Iterator[None]:
    n = torch.get_num_threads()  # run_eval sets its own thread count; give the other tests theirs back
    yield
    torch.set_num_threads(n)


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`rlvr ARGV` in this process through the console entry point: (exit status, stderr)."""
    old = sys.argv
    sys.argv = ["rlvr", *argv]
    try:
        with pytest.raises(SystemExit) as e:
            cli.main()
    finally:
        sys.argv = old
    return int(e.value.code or 0), capsys.readouterr().err


def check_eval_folder(path: Path, split: str) -> dict:
    e = json.loads((path / "eval.json").read_text())
    assert set(e) >= EVAL_KEYS and e["split"] == split and e["n_problems"] == 5 and e["n_samples"] == 2
    assert set(e["metrics"]) == {"pass@1", "pass@2", "maj@2", "greedy"}
    # the whole sampling record, stop strings and system prompt included (the audit compares it)
    assert set(e["sampling"]) >= {"temperature", "top_p", "top_k", "max_new_tokens", "stop", "prompt_format",
                                  "system_prompt"} and e["sampling"]["prompt_format"] == e["prompt_format"]  # fmt: skip
    for name, m in e["metrics"].items():
        assert set(m) == {"value", "ci", "k", "n", "tokens_per_problem"}, name
        assert m["ci"][0] <= m["value"] <= m["ci"][1] and 0.0 <= m["value"] <= 1.0, name
    assert e["metrics"]["pass@2"]["tokens_per_problem"] == pytest.approx(2 * e["tokens_per_sample"])
    assert len(e["per_problem"]) == 5 and all(r["n"] == 2 and 0 <= r["correct"] <= 2 for r in e["per_problem"])
    rows = [json.loads(x) for x in (path / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 10 and set(rows[0]) == SAMPLE_KEYS
    single_turn = [k for k in EvalSample.model_fields if k not in ("messages", "env_tokens")]  # those: env only
    assert [list(r) for r in rows] == [single_turn] * 10  # every row in the record's order
    # fidelity and the difficulty breakdown read back typed, under the file's keys
    typed = read_eval(path)
    assert typed.fidelity.overall is not None and typed.fidelity.overall.n_completions == 10
    assert "cot_pass@1" in e["fidelity"]["overall"] and set(typed.fidelity.by_steps) == set(typed.by_difficulty)
    assert sum(d.n_problems for d in typed.by_difficulty.values()) == 5 and "pass@1" in e["by_difficulty"]["1"]
    assert len((path / "samples_greedy.jsonl").read_text().splitlines()) == 5
    return e


def test_eval_subprocess_smoke(tiny_model_dir: Path, tmp_path: Path, one_thread: list[str]) -> None:
    out = tmp_path / "eval"
    cmd = [
        sys.executable,
        "-c",
        "from rlvr.cli import main; main()",
        "eval",
        *one_thread,
        "--model",
        str(tiny_model_dir),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    res = subprocess.run([*cmd, *TINY, "--out", str(out)], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    e = check_eval_folder(out, "test")
    assert all(r["id"].startswith("arith-easy-test") for r in e["per_problem"])
    assert "pass@2" in res.stdout and (out / "config.yaml").is_file() and (out / "manifest.json").is_file()


def test_eval_holdout_split(
    tiny_model_dir: Path, tmp_path: Path, one_thread: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hold"
    argv = ["eval", *one_thread, "--model", str(tiny_model_dir), *TINY, "--split", "holdout", "--out", str(out)]
    code, err = run_main(argv, capsys)
    assert code == 0, err
    e = check_eval_folder(out, "holdout")
    assert all("holdout" in r["id"] for r in e["per_problem"])


def test_a_run_folder_is_evaluated_on_the_rung_it_trained_on(
    tiny_model_dir: Path, tmp_path: Path, one_thread: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`rlvr eval --model runs/demo/grpo` reads the demo's rung (small) from the run's config.yaml,
    not the default (easy); `--preset` names another."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_model_dir, run / "model")
    (run / "config.yaml").write_text("model: somewhere\ntask: arith\npreset: small\n")
    cases = [(run, [], "small"), (run / "model", [], "small"), (run, ["--preset", "medium"], "medium"),
             (tiny_model_dir, [], "easy")]  # fmt: skip
    for model, extra, rung in cases:
        out = tmp_path / f"eval-{rung}-{model.name}"
        code, err = run_main(["eval", *one_thread, "--model", str(model), *TINY, *extra, "--out", str(out)], capsys)
        assert code == 0, err
        e = json.loads((out / "eval.json").read_text())
        assert e["preset"] == rung and all(r["id"].startswith(f"arith-{rung}-test") for r in e["per_problem"])
        assert ("rung 'small', the rung" in err) == (rung == "small"), err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ks", "1,x"], "error: --ks: expected comma-separated integers, got '1,x'"),
        (["--ks", "0,2"], "field 'ks'"),
        (["--split", "train"], "field 'split'"),
    ],
)
def test_bad_flags_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_main(["eval", "--model", "unused", *argv], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_bad_config_key_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("model: unused\nn_problem: 5\n")
    code, err = run_main(["eval", "--config", str(cfg)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{cfg}:2: field 'n_problem': unknown field" in err


def _has_compare() -> bool:
    return any((c.name or getattr(c.callback, "__name__", "")) == "compare" for c in cli.app.registered_commands)


@pytest.mark.skipif(not _has_compare(), reason="`rlvr compare` is not wired into cli.py yet")
def test_compare_cli(
    tiny_model_dir: Path, tmp_path: Path, one_thread: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for out, temp in ((a, "1.0"), (b, "0.7")):
        argv = ["eval", *one_thread, "--model", str(tiny_model_dir), *TINY, "--temperature", temp, "--out", str(out)]
        code, err = run_main(argv, capsys)
        assert code == 0, err
    code, err = run_main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["tests"][0]["n_problems"] == 5
    code, err = run_main(["compare", str(a), str(tmp_path / "nope")], capsys)
    assert code == 2 and "no eval.json" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(
    "plots" not in EvalConfig.model_fields,
    reason="run_eval does not write plots yet (EvalConfig.plots)",
)
def test_eval_writes_plots(
    tiny_model_dir: Path, tmp_path: Path, one_thread: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plots"
    code, err = run_main(["eval", *one_thread, "--model", str(tiny_model_dir), *TINY, "--out", str(out)], capsys)
    assert code == 0, err
    assert (out / "pass_at_k.png").read_bytes()[:4] == b"\x89PNG" and (out / "accuracy_vs_tokens.png").is_file()
