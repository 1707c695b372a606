"""One writer per run folder: a second command is refused naming the holder, a refusal changes no
byte, a killed holder's lock is taken over, and a study or search holds its whole tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import BaseModel

from rlvr.runs import RunDir, RunFolderError
from rlvr.runs.lock import LOCK_NAME, TREE_ENV, RunLock, RunLockedError, check_unlocked


class Cfg(BaseModel):
    out: str = ""


@contextmanager
def _held(folder: Path, command: str, tree: bool = False) -> Iterator[subprocess.Popen]:
    """Another process holding `folder`'s lock until the block ends (then it is killed)."""
    code = textwrap.dedent(f"""
        import sys, time
        sys.argv = ["rlvr", {command!r}, "--out", {str(folder)!r}]
        from rlvr.runs.lock import RunLock
        lock = RunLock({str(folder)!r}, {command!r}, tree={tree})
        print("held", flush=True)
        time.sleep(120)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        yield p
    finally:
        p.kill()
        p.wait()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def test_a_second_command_is_refused_naming_the_holder_and_changes_nothing(tmp_path):
    run = tmp_path / "run"
    with _held(run, "train") as holder:
        (run / "metrics.jsonl").write_text('{"step": 1}\n')
        before = _snapshot(run)
        for kw in ({}, {"overwrite": True}, {"resume": True}):
            with pytest.raises(RunFolderError, match=rf"in use by pid {holder.pid} \(rlvr train --out "):
                RunDir(run, Cfg(), command="train", **kw)
            assert _snapshot(run) == before


def test_a_killed_holders_lock_is_taken_over_and_released_on_close(tmp_path):
    run = tmp_path / "run"
    with _held(run, "eval") as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert (run / LOCK_NAME).exists()  # the stale file is still there ...
    check_unlocked(run)  # ... but nobody holds it
    d = RunDir(run, Cfg(), command="eval")
    assert f'"pid": {os.getpid()}' in (run / LOCK_NAME).read_text()
    with pytest.raises(RunLockedError):  # this process's own lock counts too: one writer
        RunLock(run, "eval")
    d.close()
    assert not (run / LOCK_NAME).exists()
    RunDir(run, Cfg(), command="eval", overwrite=True).close()


def test_a_study_or_search_holds_its_whole_tree(tmp_path, monkeypatch):
    tree = tmp_path / "search"
    with _held(tree, "search", tree=True) as holder:
        inner = tree / "screens" / "x"
        with pytest.raises(RunFolderError, match=rf"inside {tree}, which pid {holder.pid}"):
            RunDir(inner, Cfg(), command="train")
        assert not inner.exists()
        monkeypatch.setenv(TREE_ENV, str(tree.resolve()))  # a run the search itself started
        RunDir(inner, Cfg(), command="train").close()
    plain = tmp_path / "plain"
    with _held(plain, "train"):  # a plain (non-tree) holder does not claim the folders below it
        monkeypatch.delenv(TREE_ENV)
        RunDir(plain / "sub", Cfg(), command="eval").close()


def test_the_cli_refuses_a_held_folder_in_one_line(tmp_path):
    run = tmp_path / "sft"
    with _held(run, "sft") as holder:
        out = subprocess.run(
            [sys.executable, "-m", "rlvr", "sft", "--steps", "1", "--out", str(run)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"in use by pid {holder.pid}" in lines[0], out.stderr
    assert sorted(p.name for p in run.iterdir()) == [LOCK_NAME]
