"""The in-jail side of the NAIVE harness (`rlvr.harness.naive`): what a hurried implementer runs.

Run as `python -I -S -B /opt/rlvr/rlvr/harness/naive_boot.py CONFIG_JSON` inside the jail (seccomp off,
so `fork` works as it would outside); reads the whole program (solution + tests + `check(entry)`)
from stdin, writes it to /tmp/test_solution.py and runs it as `__main__` the way `python FILE` does.
The process's exit status is the naive verdict. Never imported as a module.
"""

from __future__ import annotations

import json
import os
import runpy
import site
import sys

if __name__ == "__main__":
    cfg = json.loads(sys.argv[1])
    source = sys.stdin.buffer.read()
    path = "/tmp/test_solution.py"
    with open(path, "wb") as f:
        f.write(source)
    here = os.path.join(cfg["path"], "rlvr", "harness")
    sys.path.insert(0, here)
    from worker import _set_limits  # noqa: PLC0415 - by path: the code verifier's worker, its twin in this jail

    sys.path.remove(here)
    _set_limits(cfg["limits"])  # clamped to an inherited hard limit (a parent's `ulimit -t`), like the worker's
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.argv = [path]
    site.main()  # what `python FILE` has and `-S` left out: exit(), quit(), ...
    runpy.run_path(path, run_name="__main__")
