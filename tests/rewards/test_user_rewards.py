"""User reward files: `rewards: [{file: my_rewards.py, function: f}]` in a stoppable worker process."""

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.rewarding import RewardLoadError, RewardRunner
from rlvr.rewards import RewardSpec
from rlvr.rewards.user import RewardCallError, UserReward

REWARDS = """
import time

def brevity(completions, **kwargs):
    return [1.0 / (1 + len(c)) for c in completions]

def uses_answer(completions, answer, **kwargs):
    return [float(a in c) for c, a in zip(completions, answer)]

def hangs(completions, **kwargs):
    while True:  # burns a core until it is killed
        pass

def raises(completions, **kwargs):
    raise ZeroDivisionError("no")

def pid(completions, **kwargs):
    import os
    return [float(os.getpid())] * len(completions)
"""


@pytest.fixture
def reward_file(tmp_path: Path) -> Path:
    f = tmp_path / "my_rewards.py"
    f.write_text(REWARDS)
    return f


def test_user_reward_runs_in_its_own_process_with_the_columns(reward_file: Path) -> None:
    f = UserReward(reward_file, "uses_answer")
    try:
        assert f(["x = 4", "5"], answer=["4", "4"]) == [1.0, 0.0]
        assert UserReward(reward_file, "pid")(["a"])[0] != os.getpid()
    finally:
        f.close()


def test_a_hung_reward_costs_its_timeout_and_nothing_more(reward_file: Path) -> None:
    f = UserReward(reward_file, "hangs", timeout_s=0.5)
    proc = f._proc
    t0 = time.perf_counter()
    with pytest.raises(RewardCallError, match="ran past its 0.5 s timeout"):
        f(["a"])
    assert time.perf_counter() - t0 < 2.0
    assert not proc.is_alive()  # killed: nothing keeps burning the cores
    with pytest.raises(RewardCallError):  # the next call starts a fresh worker, and times out again
        f(["a"])
    assert f.restarts == 1
    f.close()


def test_a_raising_reward_reports_its_last_line(reward_file: Path) -> None:
    f = UserReward(reward_file, "raises")
    for _ in range(2):  # the worker survives a raise: no restart
        with pytest.raises(RewardCallError, match=r"my_rewards.py:\d+: ZeroDivisionError: no"):
            f(["a"])
    assert f.restarts == 0 and f._proc.is_alive()
    f.close()


def test_missing_file_or_function_is_one_line_before_training(reward_file: Path, tmp_path: Path) -> None:
    with pytest.raises(RewardLoadError, match="no function 'nope'"):
        UserReward(reward_file, "nope")
    broken = tmp_path / "broken.py"
    broken.write_text("import not_a_module_anywhere\n")
    with pytest.raises(RewardLoadError, match="ModuleNotFoundError"):
        UserReward(broken, "f")
    cfg = tmp_path / "run.yaml"
    cfg.write_text("rewards:\n  - name: outcome\n  - file: missing.py\n    function: f\n")
    with pytest.raises(ConfigError, match=r"run.yaml:3: field 'rewards.1.file': no such reward file: missing.py"):
        load_config(TrainConfig, cfg)
    cfg.write_text(f"rewards:\n  - file: {reward_file}\n    params: {{a: 1}}\n")
    with pytest.raises(ConfigError, match="'params' are for built-in rewards"):
        load_config(TrainConfig, cfg)


def test_runner_mixes_builtin_and_file_rewards(reward_file: Path) -> None:
    specs = [RewardSpec(name="outcome"), RewardSpec(file=str(reward_file), function="hangs", weight=0.5),
             RewardSpec(file=str(reward_file), function="brevity", name="short", weight=2.0)]  # fmt: skip
    runner = RewardRunner(specs, timeout_s=0.5)
    try:
        assert runner.names == ["outcome", "hangs", "short"]
        assert runner.files == {str(reward_file.resolve()): file_hash(reward_file)}
        t0 = time.perf_counter()
        s = runner.score(["#### 4", "#### 5"], {"answer": ["4", "4"]})
        assert time.perf_counter() - t0 < 2.0
        assert s.errors == {"outcome": 0, "hangs": 2, "short": 0}
        assert s.values["short"] == [pytest.approx(1 / 7), pytest.approx(1 / 7)]
        assert all(t != t for t in s.total)  # NaN: one of its parts was unscorable, never a silent 0
    finally:
        runner.close()


def test_train_with_a_reward_file_records_it(tiny_model_dir: Path, reward_file: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "n_train: 16\nsteps: 2\nprompts_per_step: 2\ngroup_size: 2\nsampling: {max_new_tokens: 6}\neval_every: 0\n"
        "save_every: 0\nthreads: 1\n"
        f"rewards:\n  - name: outcome\n  - file: {reward_file.name}\n    function: brevity\n    weight: 0.1\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli import main; main()", "train", "--config", str(cfg), "--model",
         str(tiny_model_dir), "--out", str(run)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(0 < r["reward/brevity/mean"] <= 1 for r in rows) and rows[0]["reward/brevity/errors"] == 0
    manifest = json.loads((run / "manifest.json").read_text())
    # the resolved config names the file by its absolute path, and the manifest records its content hash
    assert manifest["config"]["rewards"][1]["file"] == str(reward_file.resolve())
    assert manifest["reward_files"] == {str(reward_file.resolve()): file_hash(reward_file)}


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sandboxed_reward_file(reward_file: Path, tmp_path: Path, os_sandbox) -> None:
    f = tmp_path / "candidate.py"
    f.write_text("def score(completions, **kwargs):\n    return [float('####' in c) for c in completions]\n")
    runner = RewardRunner([RewardSpec(file=str(f), function="score", sandbox=True)], timeout_s=5)
    try:
        assert runner.score(["#### 1", "x"], {}).values["score"] == [1.0, 0.0]
    finally:
        runner.close()
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef score(completions, **kwargs):\n    return [0.0] * len(completions)\n")
    with pytest.raises(RewardLoadError, match="rejected by the sandbox at static"):
        RewardRunner([RewardSpec(file=str(bad), function="score", sandbox=True)])
