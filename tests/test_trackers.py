"""Experiment trackers (`report_to`), offline: TensorBoard's event file and trackio's local database
read back, holding the same numbers as metrics.jsonl."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.grpo.config import TrainConfig


def _tensorboard_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_train_reports_to_tensorboard_and_trackio(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    pytest.importorskip("trackio")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "n_train: 16\nsteps: 3\nprompts_per_step: 2\ngroup_size: 2\nsampling: {max_new_tokens: 6}\neval_every: 0\n"
        "save_every: 0\nthreads: 1\nreport_to: [tensorboard, trackio]\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRACKIO_DIR": str(tmp_path / "trackio")}
    run = tmp_path / "tracked"
    cmd = [sys.executable, "-c", "from rlvr.cli import main; main()", "train", "--config", str(cfg), "--model",
           str(tiny_model_dir), "--out", str(run)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]

    tb = _tensorboard_scalars(run / "tensorboard")
    for key in ("reward/total/mean", "train/loss", "train/completion_len/mean"):
        assert tb[key] == [(r["step"], pytest.approx(r[key], rel=1e-6)) for r in rows], key

    # trackio's own reader, in a process that sees the same TRACKIO_DIR
    read = (
        "import json; from trackio.sqlite_storage import SQLiteStorage as S; "
        "print(json.dumps(S.get_logs('rlvr', 'tracked')))"
    )
    got = subprocess.run([sys.executable, "-c", read], capture_output=True, text=True, timeout=120, env=env)
    assert got.returncode == 0, got.stderr[-2000:]
    logs = json.loads(got.stdout.strip().splitlines()[-1])
    assert [entry["step"] for entry in logs] == [r["step"] for r in rows]
    assert [entry["reward/total/mean"] for entry in logs] == pytest.approx([r["reward/total/mean"] for r in rows])


def test_a_tracker_that_is_not_installed_is_refused_when_read(monkeypatch, tmp_path: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    f = tmp_path / "run.yaml"
    f.write_text("steps: 2\nreport_to: [tensorboard, mlflow]\n")
    with pytest.raises(ConfigError, match=r"run.yaml:2: field 'report_to': mlflow is not installed: pip install"):
        load_config(TrainConfig, f)
    f.write_text("report_to: [neptune]\n")
    with pytest.raises(ConfigError, match=r"field 'report_to.0': Input should be 'tensorboard'"):
        load_config(TrainConfig, f)
