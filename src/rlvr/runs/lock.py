"""One writer per run folder: `RUN/.lock`, held with `flock` for as long as the command runs
(docs/outputs.md, "one writer per folder"). The kernel drops a `flock` when its process dies, so a lock
left by a killed process is stale by construction. A study's or search's own runs inherit
`RLVR_TREE_OWNER` naming the tree they may write into.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path

__all__ = ["LOCK_NAME", "TREE_ENV", "RunLock", "RunLockedError", "check_unlocked"]

LOCK_NAME = ".lock"
TREE_ENV = "RLVR_TREE_OWNER"


class RunLockedError(RuntimeError):
    """Another live command holds the run folder (or a tree around it)."""


def _holder(path: Path) -> dict[str, object] | None:
    """Who holds `path` (a lock file) now: its recorded pid and command, or None when nobody does."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                info = json.loads(Path(path).read_text() or "{}")
            except (OSError, ValueError):
                info = {}
            return info if isinstance(info, dict) else {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _describe(info: dict[str, object]) -> str:
    return f"pid {info.get('pid', '?')} ({info.get('command', '?')})"


def check_unlocked(folder: str | Path) -> None:
    """Raise RunLockedError when a live command holds `folder`, or a study or search holds a folder
    above it (unless this process was started by that study or search). Reads only."""
    p = Path(folder).resolve()
    info = _holder(p / LOCK_NAME)
    if info is not None:
        raise RunLockedError(f"{p}: in use by {_describe(info)}; wait for it, or stop it first")
    owner = os.environ.get(TREE_ENV)
    for up in p.parents:
        info = _holder(up / LOCK_NAME)
        if info is not None and info.get("tree") and str(up) != owner:
            raise RunLockedError(f"{p}: inside {up}, which {_describe(info)} is writing; wait for it, or stop it first")


class RunLock:
    """The exclusive lock on one run folder (created if missing). `tree=True` (a study or search)
    also claims every folder below it; its child processes are let in through `RLVR_TREE_OWNER`."""

    def __init__(self, folder: str | Path, command: str, *, tree: bool = False) -> None:
        self.folder = Path(folder).resolve()
        check_unlocked(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / LOCK_NAME
        self.fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # taken between the check and here
            os.close(self.fd)
            self.fd = None
            check_unlocked(self.folder)
            raise RunLockedError(f"{self.folder}: in use by another command") from None
        os.ftruncate(self.fd, 0)
        argv = " ".join(["rlvr", *sys.argv[1:]]) if sys.argv and sys.argv[0].endswith("rlvr") else " ".join(sys.argv)
        os.write(self.fd, json.dumps({"pid": os.getpid(), "command": argv or command, "tree": tree}).encode())
        if tree:
            os.environ[TREE_ENV] = str(self.folder)  # inherited by the runs this command starts

    def __del__(self) -> None:  # an object dropped without release(): as if its process had ended
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)  # type: ignore[arg-type]
            self.fd = None

    def release(self) -> None:
        """Remove the lock file and drop the lock (also dropped by the kernel when the process ends)."""
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None
        if os.environ.get(TREE_ENV) == str(self.folder):
            del os.environ[TREE_ENV]
