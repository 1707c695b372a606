"""Bad inputs, table-driven: each gets one line that names the file (line, field) and exit 2, never a
traceback, and a refused command leaves nothing behind. Grow the table with every new command.

Run in-process (`rlvr.cli.main` with a patched argv) so that the table stays fast; tests/test_cli.py
has the subprocess smoke runs.
"""

import errno
import json
import os
import shutil
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rlvr.cli import main

LATIN1 = "steps: 3\nsystem: caf\xe9\n".encode("latin-1")


def run_cli(args: list[str], monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["rlvr", *args])
    try:
        main()
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    err = capsys.readouterr().err
    return code, err.replace("\n", "")


def _eval_json(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True)
    metric = {"value": 0.5, "ci": [0.4, 0.6], "k": 1, "n": 2, "tokens_per_problem": 10.0}
    body = {"task": "arith", "split": "test", "preset": "easy", "metrics": {"pass@1": metric}, "per_problem": rows}
    (path / "eval.json").write_text(json.dumps(body))
    return path


def _row(**kw) -> dict:
    return {"id": "p0", "n": 2, "correct": 1, "tokens": 10.0, "greedy": True, **kw}


# (name, files to write into the work folder, argv with {model} / {dir} placeholders, expected line)
Case = tuple[str, Callable[[Path, Path], None], list[str], str]


def _files(**contents: bytes | str) -> Callable[[Path, Path], None]:
    def make(d: Path, model: Path) -> None:
        for name, body in contents.items():
            p = d / name.replace("__", "/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(body if isinstance(body, bytes) else body.encode())

    return make


def _corrupt_model(d: Path, model: Path) -> None:
    shutil.copytree(model, d / "broken")
    (d / "broken" / "config.json").write_text('{"model_type": "llama",\n  "hidden_size": 32,,\n}')


def _model_copy(
    name: str = "m", config: dict | None = None, cut: bool = False, empty: bool = False
) -> Callable[[Path, Path], None]:
    """A copy of the tiny model in the work folder; `config` edits its config.json, `cut` truncates
    its weights file, `empty` empties it."""

    def make(d: Path, model: Path) -> None:
        shutil.copytree(model, d / name)
        if config:
            cfg = json.loads((d / name / "config.json").read_text())
            (d / name / "config.json").write_text(json.dumps({**cfg, **config}))
        w = d / name / "model.safetensors"
        if cut:
            w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
        if empty:
            w.write_bytes(b"")

    return make


def _symlink_loop(d: Path, model: Path) -> None:
    """`loop` -> `loop2` -> `loop`: a path that no stat can end."""
    (d / "loop").symlink_to(d / "loop2")
    (d / "loop2").symlink_to(d / "loop")


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every path under `folder` with its bytes (a file), its target (a link) or "dir"."""
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            out[key] = "-> " + str(p.readlink())
        elif p.is_dir():
            out[key] = "dir"
        else:
            out[key] = p.read_bytes()
    return out


def _finished_run(d: Path, model: Path) -> None:
    """A finished run folder `run/` with its model, as `rlvr train` leaves one."""
    (d / "run").mkdir()
    (d / "run" / "manifest.json").write_text('{"command": "train", "finished": true}')
    (d / "run" / "config.yaml").write_text("steps: 3\n")
    shutil.copytree(model, d / "run" / "model")


def _evals(a: dict, b: dict) -> Callable[[Path, Path], None]:
    def make(d: Path, model: Path) -> None:
        _eval_json(d / "ea", [_row(**a)])
        _eval_json(d / "eb", [_row(**b)])

    return make


CASES: list[Case] = [
    ("config not UTF-8", _files(**{"run.yaml": LATIN1}), ["train", "--config", "{dir}/run.yaml"],
     "run.yaml:2: not UTF-8 text (byte 0xe9 at column 12)"),
    ("eval config not UTF-8", _files(**{"ev.yaml": LATIN1}), ["eval", "--config", "{dir}/ev.yaml"],
     "ev.yaml:2: not UTF-8 text"),
    ("task file not UTF-8", _files(**{"t.jsonl": b'{"question": "caf\xe9", "answer": "#### 1"}\n'}),
     ["data", "preview", "{dir}/t.jsonl"], "t.jsonl:1: not UTF-8 text (byte 0xe9"),
    ("task file not UTF-8 in train", _files(**{"t.jsonl": b'{"question": "a", "answer": "#### 1"}\n\xff\n'}),
     ["train", "--model", "{model}", "--task", "{dir}/t.jsonl", "--out", "{dir}/run"], "t.jsonl:2: not UTF-8 text"),
    ("verify file not UTF-8", _files(**{"v.jsonl": b'{"completion": "\xff", "gold": "1"}\n'}),
     ["verify", "{dir}/v.jsonl"], "v.jsonl:1: not UTF-8 text (byte 0xff at column 17)"),
    ("corrupt model config.json", _corrupt_model, ["eval", "--model", "{dir}/broken", "--out", "{dir}/ev"],
     "broken/config.json:2: invalid JSON"),
    ("model config.json without model_type", _files(**{"m__config.json": "{}"}),
     ["eval", "--model", "{dir}/m", "--out", "{dir}/ev"], "m/config.json: field 'model_type': missing"),
    ("unknown reward params", _files(**{"r.yaml": "rewards:\n  - name: process\n    params: {max_ration: 2}\n"}),
     ["train", "--config", "{dir}/r.yaml"], "r.yaml:3: field 'rewards.0.params': reward 'process':"),
    ("unknown reward name", _files(**{"r.yaml": "rewards:\n  - name: outcomes\n"}),
     ["train", "--config", "{dir}/r.yaml"], "r.yaml:2: field 'rewards.0': unknown reward 'outcomes'"),
    ("reward file missing", _files(**{"r.yaml": "rewards:\n  - file: nope.py\n"}),
     ["train", "--config", "{dir}/r.yaml"], "r.yaml:2: field 'rewards.0.file': no such reward file: nope.py"),
    ("reward file without the function", _files(**{"f.py": "def g(completions, **kw):\n    return []\n",
                                                   "r.yaml": "rewards:\n  - file: f.py\n    function: f\n"}),
     ["train", "--config", "{dir}/r.yaml", "--model", "{model}", "--out", "{dir}/run"], "f.py: no function 'f' in it"),
    ("non-boolean greedy in a compared eval", _evals({}, {"greedy": "yes"}), ["compare", "{dir}/ea", "{dir}/eb"],
     "eb/eval.json: field 'per_problem[0].greedy': expected true or false, got 'yes'"),
    ("non-count correct in a compared eval", _evals({"correct": True}, {}), ["compare", "{dir}/ea", "{dir}/eb"],
     "ea/eval.json: field 'per_problem[0].correct': expected a count of correct samples in 0..2"),
    ("unknown split", _files(), ["data", "preview", "gsm8k", "--split", "validation"],
     "unknown split 'validation': use train, dev, test or holdout"),
    ("unknown split in eval", _files(), ["eval", "--model", "{model}", "--split", "validation"],
     "field 'split': Input should be 'test', 'dev' or 'holdout'"),
    ("empty task file", _files(**{"e.jsonl": ""}),
     ["train", "--model", "{model}", "--task", "{dir}/e.jsonl", "--out", "{dir}/run"], "e.jsonl: no problems in it"),
    ("unknown config key", _files(**{"run.yaml": "steps: 3\nlearning_rate: 0.1\n"}),
     ["train", "--config", "{dir}/run.yaml"], "run.yaml:2: field 'learning_rate': unknown field"),
    ("zero steps", _files(), ["train", "--steps", "0"], "<flags>: field 'steps'"),
    ("unknown preset", _files(), ["train", "--preset", "nope"], "unknown preset 'nope'"),
    ("missing model", _files(), ["eval", "--model", "/nonexistent"], "/nonexistent: not a model folder"),
    ("bad --ks", _files(), ["eval", "--model", "x", "--ks", "a,b"], "--ks: expected comma-separated integers"),
    ("resume a non-run", _files(), ["train", "--resume", "/nonexistent"], "not a run folder"),
    ("flags with --resume", _files(), ["train", "--resume", "/nonexistent", "--steps", "14", "--lr", "0.1"],
     "remove steps, lr"),
    ("unknown prompt format", _files(), ["train", "--prompt-format", "xml"], "<flags>: field 'sampling.prompt_format'"),
    ("zero max-new-tokens", _files(), ["eval", "--model", "x", "--max-new-tokens", "0"],
     "<flags>: field 'sampling.max_new_tokens'"),
    ("missing gguf", _files(), ["models", "import-gguf", "/nonexistent.gguf", "--out", "{dir}/never"],
     "/nonexistent.gguf"),
    ("eval.json from a newer rlvr", _files(**{"ea__eval.json": '{"schema_version": 9}', "eb__eval.json": "{}"}),
     ["compare", "{dir}/ea", "{dir}/eb"], "ea/eval.json: schema version 9 is newer than this rlvr reads (1)"),
    ("judge a folder without samples", _files(), ["judge", "{dir}"], "no samples.jsonl (not an evaluation folder)"),
    ("judge without a model", _files(**{"samples.jsonl": '{"problem_id": "p"}\n'}), ["judge", "{dir}"],
     "no judge model: set JudgeConfig.model or RLVR_JUDGE_MODEL"),
    ("judge a negative count", _files(), ["judge", "{dir}", "--items", "-1"], "--items: expected a count >= 0, got -1"),
    ("study without a grid", _files(), ["study"], "give --config FILE or --preset NAME"),
    ("unknown study preset", _files(), ["study", "--preset", "nope"],
     "unknown study preset 'nope'; known: granularity"),
    ("study seeds not numbers", _files(), ["study", "--preset", "granularity", "--seeds", "a,b"],
     "--seeds: expected comma-separated integers"),
    ("study condition without a name", _files(**{"s.yaml": "conditions:\n  - {kind: base}\n"}),
     ["study", "--config", "{dir}/s.yaml"], "s.yaml:2: field 'conditions.0.name': Field required"),
    ("study with an unknown reward",
     _files(**{"s.yaml": "conditions:\n  - {name: a, train: {rewards: [{name: x}]}}\n"}),
     ["study", "--config", "{dir}/s.yaml", "--model", "{model}", "--out", "{dir}/st"], "unknown reward 'x'"),
    ("study of a missing model", _files(**{"s.yaml": "conditions:\n  - {name: a}\n"}),
     ["study", "--config", "{dir}/s.yaml", "--model", "/nonexistent", "--out", "{dir}/st"],
     "/nonexistent: not a model folder"),
    ("resume a non-study", _files(), ["study", "--resume", "{dir}/none"], "not a study folder (no config.yaml)"),
    # values not checked: refused when the config loads, naming the field
    ("NaN learning rate", _files(**{"run.yaml": "lr: .nan\n"}), ["train", "--config", "{dir}/run.yaml"],
     "run.yaml:1: field 'lr': Input should be a finite number"),
    ("infinite learning rate", _files(**{"run.yaml": "lr: .inf\n"}), ["train", "--config", "{dir}/run.yaml"],
     "run.yaml:1: field 'lr': Input should be a finite number"),
    ("negative learning rate", _files(), ["train", "--lr", "-0.1"],
     "<flags>: field 'lr': Input should be greater than 0"),
    ("negative grad clip", _files(**{"run.yaml": "grad_clip: -1\n"}), ["train", "--config", "{dir}/run.yaml"],
     "run.yaml:1: field 'grad_clip'"),
    ("negative warmup in sft", _files(**{"s.yaml": "warmup_steps: -5\n"}),
     ["sft", "--config", "{dir}/s.yaml", "--out", "{dir}/sft"], "s.yaml:1: field 'warmup_steps'"),
    ("NaN learning rate in sft leaves nothing", _files(**{"s.yaml": "lr: .nan\n"}),
     ["sft", "--config", "{dir}/s.yaml", "--out", "{dir}/sft"],
     "s.yaml:1: field 'lr': Input should be a finite number"),
    ("NaN reward weight", _files(**{"r.yaml": "rewards:\n  - {name: outcome, weight: .nan}\n"}),
     ["train", "--config", "{dir}/r.yaml", "--model", "{model}", "--out", "{dir}/run"],
     "r.yaml:2: field 'rewards.0.weight': Input should be a finite number"),
    ("zero threads", _files(**{"run.yaml": "threads: 0\n"}), ["train", "--config", "{dir}/run.yaml"],
     "run.yaml:1: field 'threads': Input should be greater than or equal to 1"),
    ("unknown device", _files(**{"e.yaml": "model: x\ndevice: tpu\n"}), ["eval", "--config", "{dir}/e.yaml"],
     "e.yaml:2: field 'device': unknown device 'tpu'"),
    ("cuda on a CPU-only torch", _files(**{"run.yaml": "device: cuda\n"}),
     ["train", "--config", "{dir}/run.yaml", "--model", "{model}", "--out", "{dir}/run"],
     "field 'device': 'cuda': this torch sees no CUDA device"),
    ("cuda on a CPU-only torch in eval", _files(**{"e.yaml": "model: x\ndevice: cuda:1\n"}),
     ["eval", "--config", "{dir}/e.yaml", "--model", "{model}", "--out", "{dir}/ev"],
     "field 'device': 'cuda:1': this torch sees no CUDA device"),
    ("tiny shapes that do not divide", _files(**{"s.yaml": "tiny: {hidden_size: 30, num_heads: 4}\n"}),
     ["sft", "--config", "{dir}/s.yaml", "--out", "{dir}/sft"], "s.yaml:1: field 'tiny': hidden_size 30 must split"),
    ("seed beyond 64 bits", _files(), ["train", "--seed", str(2**70)], "<flags>: field 'seed'"),
    ("n_train of a billion", _files(**{"run.yaml": "n_train: 1000000000\n"}), ["train", "--config", "{dir}/run.yaml"],
     "run.yaml:1: field 'n_train': Input should be less than or equal to 1000000"),
    ("sft n_train of 0", _files(**{"s.yaml": "n_train: 0\n"}),
     ["sft", "--config", "{dir}/s.yaml", "--out", "{dir}/sft"],
     "s.yaml:1: field 'n_train': Input should be greater than or equal to 1"),
    # output paths
    ("--out is a file", _files(**{"f.txt": "x"}), ["train", "--model", "{model}", "--out", "{dir}/f.txt"],
     "f.txt: is a file, not a folder"),
    ("--out under a file", _files(**{"f.txt": "x"}), ["sft", "--steps", "1", "--out", "{dir}/f.txt/run"],
     "f.txt/run: lies under {dir}/f.txt, a file"),
    ("--out name too long", _files(), ["eval", "--model", "{model}", "--out", "{dir}/" + "x" * 300],
     "is longer than the file system's 255 bytes"),
    # writing into or over finished work
    ("eval --out inside a finished run's model", _finished_run,
     ["eval", "--model", "{dir}/run", "--out", "{dir}/run/model/ev"], "overlaps {dir}/run, which this command reads"),
    ("eval --out inside another run", _finished_run, ["eval", "--model", "{model}", "--out", "{dir}/run/ev"],
     "ev: inside {dir}/run, another command's run folder"),
    ("eval --out is its own --model, with --overwrite", _finished_run,
     ["eval", "--model", "{dir}/run", "--out", "{dir}/run", "--overwrite"],
     "run: --out is the --model this command reads ({dir}/run); give another --out"),
    ("train --out is its own --model, with --overwrite", _finished_run,
     ["train", "--model", "{dir}/run", "--out", "{dir}/run", "--overwrite"],
     "run: --out is the --model this command reads ({dir}/run)"),
    ("sft --out is its own --model", _finished_run, ["sft", "--model", "{dir}/run/model", "--out", "{dir}/run/model"],
     "--out is the --model this command reads ({dir}/run/model)"),
    ("train --out inside a model folder", _model_copy(), ["train", "--model", "{model}", "--out", "{dir}/m/run"],
     "m/run: inside {dir}/m, a model folder"),
    ("train --resume of a finished run", _finished_run, ["train", "--resume", "{dir}/run"],
     "run: the run finished; nothing to resume"),
    ("compare --out an earlier compare", _evals({}, {}), ["compare", "{dir}/ea", "{dir}/eb", "--out", "{dir}/ea"],
     "ea: holds eval.json, another command's output; give compare another --out"),
    ("audit --out an evaluation", _evals({}, {}), ["audit", "{dir}/eb", "--out", "{dir}/ea"],
     "ea: holds eval.json, another command's output; give audit another --out"),
    ("review export --out a train run", _finished_run, ["review", "export", "{dir}/ev", "--out", "{dir}/run"],
     "run: holds manifest.json, another command's output; give review export another --out"),
    ("reward file not UTF-8 in rewards check",
     _files(**{"r.py": b"RANGE = (0, 1)\ndef reward(completions, **kw):\n    return [caf\xe9 for c in completions]\n"}),
     ["rewards", "check", "{dir}/r.py"], "r.py:3: not UTF-8 text (byte 0xe9 at column 16)"),
    # models that do not fit
    ("weights of the wrong shape", _model_copy(config={"intermediate_size": 48}),
     ["eval", "--model", "{dir}/m", "--out", "{dir}/ev"], "its weights do not fit the shapes in config.json"),
    ("another architecture's config", _model_copy(config={"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}),
     ["eval", "--model", "{dir}/m", "--out", "{dir}/ev"], "the weights do not match its config.json's architecture"),
    ("truncated model.safetensors", _model_copy(cut=True), ["eval", "--model", "{dir}/m", "--out", "{dir}/ev"],
     "m/model.safetensors: truncated ("),
    ("empty model.safetensors", _model_copy(empty=True), ["train", "--model", "{dir}/m", "--out", "{dir}/run"],
     "m/model.safetensors: empty (0 bytes)"),
    # YAML
    ("duplicate YAML keys", _files(**{"run.yaml": "steps: 3\nlr: 0.1\nsteps: 4\n"}),
     ["train", "--config", "{dir}/run.yaml"], "run.yaml:3: duplicate key 'steps' (first on line 1)"),
    ("a YAML alias bomb", _files(**{"run.yaml": "".join(
        f"{k}: &{k} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
        for p, k in zip(["", *"abcdefg"], "abcdefgh", strict=True))}),
     ["train", "--config", "{dir}/run.yaml"], "expands to over 100000 values (nested aliases)"),
    # task files
    ("task file with a repeated id", _files(**{"t.jsonl": '{"id": "a", "question": "q", "answer": "#### 1"}\n'
                                                         '{"id": "a", "question": "r", "answer": "#### 2"}\n'}),
     ["data", "preview", "{dir}/t.jsonl"], "t.jsonl:2: field 'id': 'a' repeats line 1; ids must be unique"),
    ("empty task file in preview", _files(**{"e.jsonl": "\n"}), ["data", "preview", "{dir}/e.jsonl"],
     "e.jsonl: no problems in it"),
    # output paths that are not writable folders, for every command alike (the read-only and
    # uncreatable ones: test_out_in_a_place_that_cannot_be_written below)
    ("verify --out a folder", _files(**{"v.jsonl": '{"completion": "#### 1", "gold": "1"}\n', "d__x": "x"}),
     ["verify", "{dir}/v.jsonl", "--out", "{dir}/d"], "d: is a folder, not a file; give --out a file name"),
    ("verify --out under a file", _files(**{"v.jsonl": '{"completion": "#### 1", "gold": "1"}\n', "f.txt": "x"}),
     ["verify", "{dir}/v.jsonl", "--out", "{dir}/f.txt/o.jsonl"], "f.txt/o.jsonl: lies under {dir}/f.txt, a file"),
    ("verify --out its own input", _files(**{"v.jsonl": '{"completion": "#### 1", "gold": "1"}\n'}),
     ["verify", "{dir}/v.jsonl", "--out", "{dir}/v.jsonl"], "v.jsonl: --out is {dir}/v.jsonl, the file this command"),
    ("verify --out name too long", _files(**{"v.jsonl": '{"completion": "#### 1", "gold": "1"}\n'}),
     ["verify", "{dir}/v.jsonl", "--out", "{dir}/" + "x" * 300], "is longer than the file system's 255 bytes"),
    ("demo --out under a file", _files(**{"f.txt": "x"}), ["demo", "--quick", "--out", "{dir}/f.txt/demo"],
     "f.txt/demo: lies under {dir}/f.txt, a file, not a folder"),
    ("demo --out name too long", _files(), ["demo", "--quick", "--out", "{dir}/" + "x" * 300],
     "is longer than the file system's 255 bytes"),
    ("--model name too long", _files(), ["eval", "--model", "{dir}/" + "x" * 300, "--out", "{dir}/ev"],
     "xxx: not a model folder (File name too long)"),
    ("--model name too long in train", _files(), ["train", "--model", "{dir}/" + "x" * 300, "--out", "{dir}/run"],
     "xxx: not a model folder (File name too long)"),
    ("--model name too long in sft", _files(), ["sft", "--model", "{dir}/" + "x" * 300, "--out", "{dir}/sft"],
     "xxx: not a model folder (File name too long)"),
    ("an input folder name too long", _files(), ["judge", "{dir}/" + "x" * 300],
     "xxx/samples.jsonl: File name too long"),
    ("--model a symlink loop", _symlink_loop, ["eval", "--model", "{dir}/loop", "--out", "{dir}/ev"],
     "loop: not a model folder (a symlink loop"),
    ("--model a symlink loop in train", _symlink_loop, ["train", "--model", "{dir}/loop", "--out", "{dir}/run"],
     "loop: not a model folder (a symlink loop"),
    ("--out a symlink loop", _symlink_loop, ["verify", "{dir}/loop2", "--out", "{dir}/loop/o.jsonl"],
     "loop/o.jsonl: a symlink loop"),
    # files that are not what they claim
    ("GGUF with a garbage header", _files(**{"g.gguf": b"GGUFmmmm" + b"x" * 40}),
     ["models", "import-gguf", "{dir}/g.gguf", "--out", "{dir}/m"],
     "g.gguf: a damaged or unknown GGUF header (version 1835887981; rlvr reads versions 2 and 3)"),
    ("truncated GGUF header", _files(**{"g.gguf": b"GGUF\x03\x00\x00\x00\x01\x02"}),
     ["models", "import-gguf", "{dir}/g.gguf", "--out", "{dir}/m"], "g.gguf: truncated GGUF file (10 bytes"),
    ("GGUF cut inside its metadata", _files(**{"g.gguf": b"GGUF" + struct.pack("<IQQ", 3, 5, 10) + b"\x05\x00"}),
     ["models", "import-gguf", "{dir}/g.gguf", "--out", "{dir}/m"], "g.gguf: cannot read the GGUF file"),
    # values that were accepted
    ("infinite temperature in eval", _files(**{"e.yaml": "sampling:\n  temperature: .inf\n"}),
     ["eval", "--config", "{dir}/e.yaml", "--model", "{model}", "--out", "{dir}/ev"],
     "e.yaml:2: field 'sampling.temperature': Input should be a finite number"),
    ("NaN gold in verify", _files(**{"v.jsonl": '{"completion": "#### 1", "gold": "1"}\n'
                                                '{"completion": "#### 1", "gold": NaN}\n'}),
     ["verify", "{dir}/v.jsonl", "--out", "{dir}/o.jsonl"], "v.jsonl:2: field 'gold': nan is not a finite number"),
    ("NaN budget tolerance", _evals({}, {}), ["compare", "{dir}/ea", "{dir}/eb", "--budget-tolerance", "nan"],
     "--budget-tolerance: expected a finite number >= 0, got nan"),
    ("system prompt under the plain format", _files(**{"e.yaml": "sampling:\n  prompt_format: plain\n"
                                                                 "  system_prompt: Be brief.\n"}),
     ["eval", "--config", "{dir}/e.yaml", "--model", "{model}", "--out", "{dir}/ev"],
     "field 'sampling.system_prompt': prompt_format 'plain' has no system message, so it would be ignored"),
    ("system prompt where auto means plain", _files(),
     ["eval", "--model", "{model}", "--system-prompt", "Be brief.", "--out", "{dir}/ev"],
     "prompt_format 'auto' (here 'plain': the tokenizer has no chat template) has no system message"),
    ("reward function without **columns", _files(**{"f.py": "def reward(completions):\n    return []\n",
                                                    "r.yaml": "rewards:\n  - file: f.py\n"}),
     ["train", "--config", "{dir}/r.yaml", "--model", "{model}", "--out", "{dir}/run"],
     "f.py: function 'reward' takes (completions), no **columns; a reward takes TRL's convention"),
    ("reward function without arguments", _files(**{"f.py": "def reward():\n    return []\n",
                                                    "r.yaml": "rewards:\n  - file: f.py\n"}),
     ["train", "--config", "{dir}/r.yaml", "--model", "{model}", "--out", "{dir}/run"],
     "f.py: function 'reward' takes (); a reward takes TRL's convention reward(completions, **columns)"),
    ("rewards check --timeout 0", _files(**{"r.py": "def reward(completions, **kw):\n    return []\n"}),
     ["rewards", "check", "{dir}/r.py", "--timeout", "0", "--unsafe-no-sandbox"],
     "--timeout: expected a finite number of seconds > 0, got 0.0"),
    ("rewards check --timeout negative", _files(**{"r.py": "def reward(completions, **kw):\n    return []\n"}),
     ["rewards", "check", "{dir}/r.py", "--timeout", "-1", "--unsafe-no-sandbox"], "--timeout: expected"),
    ("rewards check --timeout NaN", _files(**{"r.py": "def reward(completions, **kw):\n    return []\n"}),
     ["rewards", "check", "{dir}/r.py", "--timeout", "nan", "--unsafe-no-sandbox"], "--timeout: expected"),
    # refusals that used to leave files behind: validate first, then create
    ("eval with every k above n", _files(), ["eval", "--model", "{model}", "--ks", "8", "--samples", "2"],
     "<flags>: field 'ks': every k in [8] is above n_samples=2"),
    ("calibrate a store that is not a database",
     _files(**{"s__config.yaml": "rounds: 1\n", "s__search.db": "not sqlite"}), ["search", "calibrate", "{dir}/s"],
     "search.db: not a search store (file is not a database)"),
    # writing into finished work
    ("judge an evaluation with no samples", _files(**{"ev__eval.json": "{}", "ev__samples.jsonl": ""}),
     ["judge", "{dir}/ev"], "ev/samples.jsonl: no completions in it; nothing to judge"),
    # other tracebacks
    ("a search store that is not a database", _files(**{"s__config.yaml": "rounds: 1\n", "s__search.db": "not sqlite"}),
     ["search", "--resume", "{dir}/s"], "search.db: not a search store (file is not a database)"),
    ("review serve port out of range", _files(), ["review", "serve", "{dir}", "--port", "70000"],
     "Invalid value for '--port': Input should be less than or equal to 65535 (see `rlvr review serve --help`)"),
    ("a flag of the wrong type", _files(), ["train", "--steps", "many"],
     "Invalid value for '--steps': Input should be a valid integer, unable to parse string as an integer"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "make", "argv", "line"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(name, make, argv, line, tiny_model_dir, tmp_path, monkeypatch, capsys):
    work = tmp_path / "w"
    work.mkdir()
    make(work, tiny_model_dir)
    before = _snapshot(work)
    monkeypatch.chdir(work)
    args = [a.format(dir=work, model=tiny_model_dir) for a in argv]
    code, err = run_cli(args, monkeypatch, capsys)
    assert code == 2, err[-1500:]
    assert err.startswith("error: ") and "Traceback" not in err, err[-1500:]
    assert line.format(dir=work) in err, err
    assert _snapshot(work) == before  # nothing left behind, no byte changed


def test_disk_full_mid_run_is_one_line(monkeypatch, capsys, tiny_model_dir, tmp_path) -> None:
    """A full disk while a run writes: one line naming the file, and a hint to resume."""
    from rlvr.grpo import trainer

    def full(self):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "run" / "metrics.jsonl"))

    monkeypatch.setattr(trainer.GRPOTrainer, "train", full)
    code, err = run_cli(["train", "--model", str(tiny_model_dir), "--out", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2
    assert f"{tmp_path}/run/metrics.jsonl: No space left on device (free space, then --resume)" in err


def test_disk_too_small_is_refused_before_work(monkeypatch, capsys, tiny_model_dir, tmp_path) -> None:
    import shutil as sh

    real = sh.disk_usage
    monkeypatch.setattr(sh, "disk_usage", lambda p: real(p)._replace(free=1000))
    out = tmp_path / "run"
    code, err = run_cli(["train", "--model", str(tiny_model_dir), "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "GiB free on that disk; free space, or save fewer checkpoints" in err, err
    assert not out.exists()


def test_compare_keeps_an_earlier_compare_unless_overwrite(tmp_path, monkeypatch, capsys) -> None:
    _evals({}, {})(tmp_path, tmp_path)
    argv = ["compare", str(tmp_path / "ea"), str(tmp_path / "eb"), "--out", str(tmp_path / "cmp")]
    assert run_cli(argv, monkeypatch, capsys)[0] == 0
    before = (tmp_path / "cmp" / "compare.json").read_bytes()
    code, err = run_cli(argv, monkeypatch, capsys)
    assert code == 2 and "cmp: holds an earlier compare (compare.json); --overwrite replaces it" in err
    assert (tmp_path / "cmp" / "compare.json").read_bytes() == before
    assert run_cli([*argv, "--overwrite"], monkeypatch, capsys)[0] == 0


_PLACES = {  # a command and the --out it is given under `ro/`, a folder it may not write into
    "verify": ["verify", "{dir}/v.jsonl", "--out", "{dir}/ro/new/o.jsonl"],
    "demo": ["demo", "--quick", "--out", "{dir}/ro/demo"],
    "train": ["train", "--model", "{model}", "--out", "{dir}/ro/run"],
}


def _place(tmp_path: Path) -> Path:
    work = tmp_path / "w"
    (work / "ro").mkdir(parents=True)
    (work / "v.jsonl").write_text('{"completion": "#### 1", "gold": "1"}\n')
    return work


@pytest.mark.parametrize("command", list(_PLACES))
def test_out_in_a_read_only_place(command, tiny_model_dir, tmp_path, monkeypatch, capsys) -> None:
    """verify, demo and train go through one check of the output path: a read-only folder is one line
    naming it. (root passes the mode bits, so `os.access` answers as it would for another user.)"""
    work = _place(tmp_path)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == work / "ro" else real(p, mode, **kw))
    before = _snapshot(work)
    args = [a.format(dir=work, model=tiny_model_dir) for a in _PLACES[command]]
    code, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err, err[-1500:]
    assert f"{work}/ro: not writable, so {args[-1]} cannot hold" in err, err
    assert _snapshot(work) == before


@pytest.mark.parametrize("command", list(_PLACES))
def test_out_where_only_the_kernel_refuses(command, tiny_model_dir, tmp_path, monkeypatch, capsys) -> None:
    """A folder the checks cannot foresee refusing (/proc, a permission the mode bits do not show): the
    creation itself is one line naming the path, and nothing is left behind."""
    work = _place(tmp_path)
    real = Path.mkdir

    def mkdir(self: Path, *a, **kw) -> None:
        if work / "ro" in self.parents:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        real(self, *a, **kw)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    before = _snapshot(work)
    args = [a.format(dir=work, model=tiny_model_dir) for a in _PLACES[command]]
    code, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err, err[-1500:]
    assert "cannot create the folder (Permission denied); give another --out" in err, err
    assert _snapshot(work) == before
