"""The reward sandbox under limits inherited from a batch scheduler (`ulimit -t`, `-v`, `-u`, `-f`):
every limit the jail sets is clamped to the inherited hard limit, so a valid reward is still
accepted, and a worker-side failure names its cause instead of 'the worker exited'."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

VALID = """
import re

def reward(completions, answer, **kwargs):
    out = []
    for c, a in zip(completions, answer):
        m = re.search(r"####\\s*(-?[\\d,]+)", c)
        out.append(None if m is None else float(m.group(1).replace(",", "") == a))
    return out
"""

LIMITS = {  # lower than what the jail asks for (3600 s CPU, 1 GiB address space, 32 processes, 8 MiB files)
    resource.RLIMIT_CPU: 300,
    resource.RLIMIT_AS: 8 << 30,  # the host process (python + torch) needs room; the jail lowers it to 1 GiB
    resource.RLIMIT_NPROC: 4096,
    resource.RLIMIT_FSIZE: 64 << 20,
}


def _lowered() -> None:
    for res, value in LIMITS.items():
        _, hard = resource.getrlimit(res)
        v = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(res, (v, v))


def test_a_valid_reward_is_accepted_under_lowered_inherited_limits(tmp_path: Path, os_sandbox) -> None:
    f = tmp_path / "r.py"
    f.write_text(VALID)
    cmd = [sys.executable, "-c", "from rlvr.cli import main; main()", "rewards", "check", str(f)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, preexec_fn=_lowered, env={**os.environ})
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "accepted" in out, out[-1500:]


def test_a_worker_side_failure_names_its_cause(monkeypatch, os_sandbox) -> None:
    """A limit the worker may not set used to surface as 'the worker exited (exit status 1)'."""
    from rlvr.sandbox import core, jail

    real = jail.worker_config

    def impossible(**kw):
        cfg = real(**kw)
        cfg["limits"] = {**cfg["limits"], "cpu_s": "3600"}  # the worker's setrlimit raises TypeError
        return cfg

    monkeypatch.setattr(core, "worker_config", impossible)
    r = core.validate(VALID)
    assert not r.accepted and "TypeError" in r.reason, r.reason  # the worker's own last stderr line
