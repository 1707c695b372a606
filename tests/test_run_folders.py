"""Run folders that move: a run trained from a relative model path resumes after the run folder and its
base were moved together, from another working directory."""

import json
import shutil
import sys
from pathlib import Path

from rlvr.cli import main
from rlvr.config import load_config
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.trainer import GRPOTrainer


def test_a_moved_run_folder_resumes(tiny_model_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    home = tmp_path / "home"
    shutil.copytree(tiny_model_dir, home / "base" / "model")
    monkeypatch.chdir(home)
    cfg = load_config(
        TrainConfig,
        None,
        {"model": "base", "out": "runs/grpo", "n_train": 16, "steps": 3, "prompts_per_step": 2, "group_size": 2,
         "sampling": {"max_new_tokens": 6}, "eval_every": 0, "save_every": 1, "threads": 1},
    )  # fmt: skip
    first = GRPOTrainer(cfg)
    first.run.log(first.train_step())
    first.save_checkpoint()  # then the process "dies" after step 1, and its lock with it
    first.run.close()
    del first
    manifest = json.loads((home / "runs" / "grpo" / "manifest.json").read_text())
    assert manifest["paths"]["model"] == {"absolute": str(home / "base"), "from_run": "../../base"}

    moved = tmp_path / "elsewhere"
    shutil.move(home, moved)  # the run and its base move together; the old paths are gone
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["rlvr", "train", "--resume", str(moved / "runs" / "grpo")])
    try:
        main()
    except SystemExit as e:
        assert e.code in (0, None), capsys.readouterr().err
    err = capsys.readouterr().err.replace("\n", "")
    assert f"using {moved / 'base'} (recorded beside the run)" in err
    rows = [json.loads(x) for x in (moved / "runs" / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert json.loads((moved / "runs" / "grpo" / "manifest.json").read_text())["finished"] is True


def test_a_run_recorded_before_a_setting_existed_resumes_and_an_edit_is_still_refused(tmp_path: Path) -> None:
    """Every field is recorded with its value, defaults included, so a key the recorded config lacks
    is a setting added to rlvr later: it does not block `--resume`; a changed recorded key does."""
    import json

    import pytest
    from pydantic import BaseModel

    from rlvr.runs import RunFolderError, check_resume

    class Now(BaseModel):
        lr: float = 1e-4
        distributed: dict[str, str] = {"strategy": "ddp"}  # new since the run started

    (tmp_path / "manifest.json").write_text(json.dumps({"config": {"lr": 1e-4, "out": str(tmp_path)}}))
    check_resume(tmp_path, Now())
    with pytest.raises(RunFolderError, match=r"edited since the run started \(lr\)"):
        check_resume(tmp_path, Now(lr=3e-4))
