"""Tests for rlvr.sandbox: the four validation stages, the entry point's name, the call wrapper, the OS jail.

The OS-layer tests load code with `_skip_checks=True` (no static check, real builtins) so that only
bubblewrap, seccomp and the rlimits stand between the code and the machine; they are skipped when
no sandbox can be created here (`apt-get install bubblewrap`).
"""

from __future__ import annotations

import importlib
import io
import math
import os
import pickle
import socket
import time
from pathlib import Path

import pytest
from rich.console import Console

import rlvr
import rlvr.sandbox as sandbox
from rlvr.sandbox import RewardRejected, SandboxUnavailable, UnsafeSandboxWarning, Validation, core
from rlvr.sandbox import jail as oslayer

SIMPLE = '''
from rlvr.verify import verify_answer

RANGE = (0, 1)


def reward(completions, answer, **kwargs):
    """1 when the final answer is right."""
    return [1.0 if verify_answer(c, a).correct else 0.0 for c, a in zip(completions, answer)]
'''

HASHES = """
import re


def reward(completions, answer, **kwargs):
    out = []
    for c, a in zip(completions, answer):
        m = re.search(r"####\\s*(-?[\\d,]+)", c)
        out.append(None if m is None else float(m.group(1).replace(",", "") == a))
    return out
"""


@pytest.fixture(scope="module")
def jail(os_sandbox) -> oslayer.Backend:
    return os_sandbox


def _reference(source: str, function: str = "reward") -> list:
    """Run trusted test source in-process on the probe batch (what the jail must reproduce)."""
    ns: dict = {}
    exec(source, ns)
    completions, columns = sandbox.probe_batch()
    return ns[function](completions, **columns)


def _procs_with(tag: str, settle_s: float = 0.0) -> list[int]:
    """Live processes whose command line holds `tag`; waits up to `settle_s` for none to remain
    (the kernel kills a pid namespace's processes asynchronously once its init dies)."""
    deadline = time.monotonic() + settle_s
    while True:
        pids = _scan(tag)
        if not pids or time.monotonic() >= deadline:
            return pids
        time.sleep(0.02)


def _scan(tag: str) -> list[int]:
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if tag.encode() in (p / "cmdline").read_bytes():
                    pids.append(int(p.name))
            except OSError:
                pass
    return pids


# --- stage 1: static ----------------------------------------------------------------------------

BODY = "\ndef reward(completions, **kwargs):\n    return [0.0 for _ in completions]\n"


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("import os" + BODY, "import of 'os'"),
        ("from os import path" + BODY, "import of 'os'"),
        ("x = __import__('os')" + BODY, "__import__"),
        (
            "def reward(completions, **kwargs):\n    ().__class__.__bases__[0].__subclasses__()\n    return []",
            "__class__",
        ),
        ('x = eval("1")' + BODY, "'eval'"),
        ("x = open('/etc/passwd').read()" + BODY, "'open'"),
        ('x = "{0.__class__}".format(1)' + BODY, "format fields"),
        ('t = "{0.real}"\nx = t.format(1)' + BODY, ".format is only allowed on a string literal"),
        ("x = getattr(1, '__class__')" + BODY, "'getattr'"),
        ("def g():\n    yield 1\nf = g().gi_frame" + BODY, ".gi_frame"),
        ("from string import Formatter" + BODY, "string.Formatter"),
        ("import typing" + BODY, "from typing import"),
        ("class A:\n    pass" + BODY, "class definitions"),
        ("def score(completions, **kwargs):\n    return []", "no top-level function named `reward`"),
        ("def reward(xs):\n    return []", "signature"),
        ("def reward(completions):\n    return []", "signature"),
        (BODY + "reward = len", "exactly once"),
        ("RANGE = (1, 0)" + BODY, "RANGE"),
        ("RANGE = (0, x)" + BODY, "RANGE"),
        ("def reward(completions, **kwargs)\n    return []", "does not parse"),
        ("x = 1\n" * 2000 + BODY, "too large"),
    ],
)
def test_static_rejections(source: str, needle: str) -> None:
    v = sandbox.validate(source)  # stage 1 needs no sandbox
    assert (v.accepted, v.stage, v.probe_raw) == (False, "static", None)
    assert needle in v.reason


def test_static_accepts_ordinary_reward_code() -> None:
    source = """
from __future__ import annotations

import math
import re
from collections import Counter
from typing import List, Optional

from rlvr.verify import extract_answer

RANGE = (-1.0, 2.5)
PATTERN = re.compile(r"<answer>(.*?)</answer>", re.S)


def _length_penalty(text: str) -> float:
    return -min(1.0, math.log1p(len(text)) / 20)


def reward(completions: List[str], answer: Optional[List[str]] = None, **kwargs) -> List[float]:
    out = []
    for c, a in zip(completions, answer or []):
        parsed, why = extract_answer(c)
        words = Counter(c.split())
        label = "{:.2f}".format(len(words)) + f"{why!r:>4}"
        out.append((1.0 if parsed == a else 0.0) + _length_penalty(c) + 0 * len(label))
    return out
"""
    result = sandbox.static_check(source)
    assert result.ok, result.reason
    assert result.range == (-1.0, 2.5)


# --- stages 2-4 and the call wrapper -----------------------------------------------------------


def test_accepts_simple_reward_with_exact_probe_values(jail) -> None:
    v = sandbox.validate(SIMPLE)
    assert v.accepted and v.stage is None, v.reason
    assert v.probe_raw == _reference(SIMPLE)
    assert v.probe_raw[:5] == [1.0, 0.0, 1.0, 1.0, 1.0]  # correct, wrong, phrase, boxed, unmarked


def test_none_items_are_kept_and_module_proxies_work(jail) -> None:
    v = sandbox.validate(HASHES)
    assert v.accepted, v.reason
    assert v.probe_raw == _reference(HASHES)
    assert None in v.probe_raw


@pytest.mark.parametrize(
    ("source", "stage", "needle"),
    [
        ("x = 1 / 0" + BODY, "load", "ZeroDivisionError"),
        ("x = id(1)" + BODY, "namespace", "'id'"),
        ("from rlvr.verify import steps" + BODY, "namespace", "cannot import name 'steps'"),
        ("import re\nx = re.enum" + BODY, "namespace", "no attribute 'enum'"),
        ("def reward(completions, **kwargs):\n    raise ValueError('boom')", "probe", "ValueError: boom"),
        ("def reward(completions, **kwargs):\n    return [1.0]", "probe", "returned 1 values for 14"),
        ("def reward(completions, **kwargs):\n    return [float('nan')] * len(completions)", "probe", "non-finite"),
        ("def reward(completions, **kwargs):\n    return ['1'] * len(completions)", "probe", "a str, not a number"),
        (
            "RANGE = (0, 1)\ndef reward(completions, **kwargs):\n    return [2] * len(completions)",
            "probe",
            "outside RANGE",
        ),
        ("def reward(completions, **kwargs):\n    return [None] * len(completions)", "probe", "None for every"),
        ("import re\ndef reward(completions, **kwargs):\n    return [len(re.enum.sys.modules)]", "probe", "enum"),
        ("def reward(completions, **kwargs):\n    while True:\n        pass", "probe", "timed out"),
    ],
)
def test_runtime_rejections(jail, source: str, stage: str, needle: str) -> None:
    assert sandbox.static_check(source).ok
    v = sandbox.validate(source, timeout_s=1.0)
    assert (v.accepted, v.stage) == (False, stage)
    assert needle in v.reason, v.reason


def test_load_returns_none_with_reasons(jail) -> None:
    source = """
def reward(completions, **kwargs):
    print("garbage on stdout", completions)
    if "boom" in completions:
        raise ValueError("boom")
    table = {"nan": float("nan"), "str": "x", "big": 1e9, "none": None, "bool": True}
    return [table.get(c, 0.5) for c in completions]
"""
    with sandbox.load(source, name="cand") as r:
        assert r.__name__ == "cand"
        assert r(["a", "b"]) == [0.5, 0.5] and r.last_error is None
        assert r(["a", "boom"]) == [None, None]
        assert r.last_error is not None and "ValueError: boom" in r.last_error
        assert r(["a", "nan", "str", "big", "none", "bool"]) == [0.5, None, None, None, None, None]
        assert r.last_error is not None and "item 1: non-finite" in r.last_error
        assert r.errors == 2 + 4
        assert r([]) == []


def test_timeout_kills_and_restarts_the_worker(jail) -> None:
    source = """
def reward(completions, **kwargs):
    while "loop" in completions:
        pass
    return [1.0 for _ in completions]
"""
    with sandbox.load(source, timeout_s=1.0) as r:
        first = r.pid
        assert r(["x"]) == [1.0]
        t0 = time.monotonic()
        assert r(["loop", "x"]) == [None, None]
        assert time.monotonic() - t0 < 3.0
        assert r.last_error is not None and "timed out" in r.last_error
        assert r.pid is None and first is not None and not _alive(first)
        assert r(["x", "y"]) == [1.0, 1.0] and r.restarts == 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_close_leaves_no_process(jail) -> None:
    r = sandbox.load(SIMPLE)
    tag, pid = r.tag, r.pid
    assert tag is not None and pid is not None
    assert len(_procs_with(tag)) >= 2  # bwrap and the worker
    r.close()
    assert _procs_with(tag, settle_s=2.0) == [] and not _alive(pid)
    assert r(["#### 3"], answer=["3"]) == [1.0]  # a closed reward starts a fresh worker on demand
    r.close()


def test_load_rejects_and_passes_columns(jail) -> None:
    with pytest.raises(RewardRejected) as e:
        sandbox.load("import os" + BODY)
    assert e.value.validation.stage == "static"
    source = """
def reward(completions, steps, prompts, **kwargs):
    return [float(len(s)) + (s[-1].result == "18") + 0 * len(p) for s, p in zip(steps, prompts)]
"""
    completions, columns = sandbox.probe_batch()
    first_two = {k: v[:2] for k, v in columns.items()}
    with sandbox.load(source) as r:
        assert r(completions[:2], **first_two, trainer_state=object()) == [3.0, 3.0], r.last_error
        clone = pickle.loads(pickle.dumps(r))
        with clone:
            assert clone(completions[2:3], steps=columns["steps"][2:3], prompts=["p"]) == [2.0]


def test_check_file_exit_codes(jail, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(SIMPLE)
    bad.write_text("import os" + BODY)
    out = io.StringIO()
    console = Console(file=out, width=120)
    assert sandbox.check_file(good, console=console) == 0
    assert sandbox.check_file(bad, console=console) == 1
    assert sandbox.check_file(tmp_path / "missing.py", console=console) == 2
    text = out.getvalue()
    assert "accepted" in text and "rejected" in text and "static" in text and "cannot read" in text


# --- the entry point's name (function=) --------------------------------------------------------

TWO = """
from rlvr.verify import verify_answer

RANGE = (0, 1)


def reward(completions, **kwargs):
    return [0.0 for _ in completions]


def score(completions, answer, **kwargs):
    return [1.0 if verify_answer(c, a).correct else 0.0 for c, a in zip(completions, answer)]
"""


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (BODY, "no top-level function named `score`: define `def score(completions, **kwargs)`"),
        ("def score(xs):\n    return []", "`score` must have the signature"),
        ("def score(completions):\n    return []", "`score` must have the signature"),
        ("def score(completions, **kwargs):\n    return []\nscore = len", "`score` must be defined exactly once"),
        ("import functools\n@functools.cache\ndef score(completions, **kwargs):\n    return []", "not be decorated"),
    ],
)
def test_static_check_enforces_the_named_entry_point(source: str, needle: str) -> None:
    v = sandbox.validate(source, function="score")  # stage 1 needs no sandbox
    assert (v.accepted, v.stage) == (False, "static")
    assert needle in v.reason, v.reason


def test_the_entry_point_defaults_to_reward_and_other_functions_are_helpers() -> None:
    assert sandbox.static_check(TWO).ok and sandbox.static_check(TWO, function="score").ok
    assert sandbox.static_check(BODY, "reward").ok
    assert "no top-level function named `reward`" in sandbox.static_check(TWO.replace("def reward", "def r")).reason


@pytest.mark.parametrize("name", ["my.score", "", "class", "1st", "score()", None])
def test_an_entry_point_name_that_is_not_an_identifier_is_a_caller_error(name) -> None:
    with pytest.raises(ValueError, match="must be a Python identifier"):
        sandbox.static_check(BODY, function=name)
    with pytest.raises(ValueError, match="must be a Python identifier"):
        sandbox.validate(BODY, function=name)
    with pytest.raises(ValueError, match="must be a Python identifier"):
        sandbox.load(BODY, function=name, _skip_checks=True)  # checked before any worker starts


def test_named_entry_point_is_probed_loaded_called_and_pickled(jail, tmp_path: Path) -> None:
    default = sandbox.validate(TWO)
    assert default.accepted and default.probe_raw == [0.0] * 14, default.reason
    named = sandbox.validate(TWO, function="score")
    assert named.accepted, named.reason
    assert named.probe_raw == _reference(TWO, "score") and 1.0 in named.probe_raw
    with sandbox.load(TWO, function="score", name="score") as r:
        assert r.function == "score" and r(["#### 3", "#### 4"], answer=["3", "3"]) == [1.0, 0.0]
        with pickle.loads(pickle.dumps(r)) as clone:
            assert clone.function == "score" and clone(["#### 3"], answer=["3"]) == [1.0]
    f = tmp_path / "mine.py"
    f.write_text(TWO)
    out = io.StringIO()
    assert sandbox.check_file(f, function="score", console=Console(file=out, width=120)) == 0
    assert sandbox.check_file(f, function="other", console=Console(file=out, width=120)) == 1
    assert "no top-level function named `other`" in out.getvalue()


def test_the_worker_looks_up_the_named_entry_point(jail) -> None:
    """With the static check off, the jailed worker itself must find `score` (stage 3)."""
    with pytest.raises(RewardRejected, match="no callable `score`") as e:
        sandbox.load("reward = len\nscore = 5", function="score", _skip_checks=True)
    assert e.value.validation.stage == "namespace"
    with sandbox.load("def score(completions, **kwargs):\n    return [2.0]", function="score", _skip_checks=True) as r:
        assert r(["x"]) == [2.0]


def test_search_sandbox_is_a_thin_alias() -> None:
    alias = importlib.import_module("rlvr.search.sandbox")  # deprecated, kept for one release
    assert "deprecated" in (alias.__doc__ or "").lower()
    assert alias.__all__ and set(alias.__all__) <= set(sandbox.__all__)
    assert all(getattr(alias, name) is getattr(sandbox, name) for name in alias.__all__)


# --- the OS layer (static check and restricted namespace bypassed) ------------------------------


def _run(source: str, **kw) -> sandbox.SandboxedReward:
    return sandbox.load(source, _skip_checks=True, **kw)


def test_jail_filesystem(jail, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    repo_file = Path(rlvr.__file__).resolve().parents[2] / "pyproject.toml"
    mine = Path("/tmp") / f"jail-{os.getpid()}-{time.time_ns()}"
    source = f"""
import os

def _fails(f):
    try:
        f()
        return 0.0
    except OSError:
        return 1.0

def reward(completions, **kwargs):
    return [
        _fails(lambda: open("/opt/rlvr/rlvr/evil.py", "w")),
        _fails(lambda: open("/evil", "w")),
        _fails(lambda: open({str(secret)!r}).read()),
        _fails(lambda: open({str(repo_file)!r}).read()),
        _fails(lambda: os.listdir("/root/.ssh")),
        _fails(lambda: open("/etc/passwd").read()),
        _fails(lambda: open("/tmp/big", "wb").write(b"x" * (64 << 20))),
        float(open({str(mine)!r}, "w").write("ok")),
        float(os.getuid() == 65534),
    ]
"""
    with _run(source) as r:
        assert r(["x"] * 9) == [1.0] * 7 + [2.0, 1.0]
    assert not mine.exists()


def test_jail_has_no_network(jail) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    source = f"""
import socket

def reward(completions, **kwargs):
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
        return [0.0]
    except OSError:
        return [1.0]
"""
    try:
        with _run(source) as r:
            assert r(["x"]) == [1.0]
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


FORK_BOMB = """
import os, time

def reward(completions, **kwargs):
    made = 0
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        made += 1
    return [made / 100]
"""


def test_fork_bomb_is_blocked_by_seccomp(jail) -> None:
    if not jail.seccomp:
        pytest.skip("no seccomp filter on this architecture")
    with _run(FORK_BOMB) as r:
        assert r(["x"]) == [0.0]


def test_fork_bomb_is_bounded_without_seccomp_and_cleaned_up(jail, monkeypatch) -> None:
    monkeypatch.setattr(oslayer, "detect", lambda: oslayer.Backend(**{**jail.__dict__, "seccomp": False}))
    r = _run(FORK_BOMB)
    made = r(["x"])[0]
    assert made is not None and 0 < made * 100 < oslayer.DEFAULT_LIMITS["processes"], r.last_error
    tag = r.tag
    assert tag is not None
    t0 = time.monotonic()
    r.close()
    assert _procs_with(tag, settle_s=2.0) == []
    assert time.monotonic() - t0 < 1.0


def test_memory_limit(jail) -> None:
    source = """
def reward(completions, **kwargs):
    try:
        block = bytearray(4 << 30)
        return [float(len(block) > 0)]
    except MemoryError:
        return [-1.0]
"""
    with _run(source) as r:
        assert r(["x"]) == [-1.0]


def test_infinite_loop_is_killed(jail) -> None:
    with _run("def reward(completions, **kwargs):\n    while True:\n        pass", timeout_s=0.5) as r:
        assert r(["a", "b"]) == [None, None]
        assert r.last_error is not None and "timed out" in r.last_error


def test_protocol_garbage_and_huge_output_are_contained(jail) -> None:
    source = """
import os

def reward(completions, **kwargs):
    payload = {
        "garbage": b"not json\\n",
        "forged": b'{"id": 1, "ok": true, "values": [5]}\\n',
        "huge": b"9" * (8 << 20),
    }
    data = payload.get(completions[0])
    for fd in range(1, 12):
        if data is None:
            break
        try:
            os.write(fd, data)
        except OSError:
            pass
    return [1.0] * len(completions)
"""
    with _run(source, timeout_s=5.0) as r:
        assert r(["ok", "x"]) == [1.0, 1.0]
        for kind in ("garbage", "forged", "huge"):
            assert r([kind, "x"]) == [None, None], kind
            assert r.last_error is not None
            assert r(["ok"]) == [1.0]  # a fresh worker serves the next call
        assert r.restarts == 3


def test_seccomp_program_shape() -> None:
    prog = oslayer.seccomp_program("x86_64")
    assert prog is not None and len(prog) % 8 == 0 and len(prog) // 8 < 256
    assert oslayer.seccomp_program("sparc") is None


# --- no sandbox ---------------------------------------------------------------------------------


def test_unavailable_sandbox_raises_unless_unsafe(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(oslayer.shutil, "which", lambda name: None)
    oslayer.detect.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="bubblewrap"):
            sandbox.validate(SIMPLE)
        with pytest.raises(SandboxUnavailable):
            sandbox.load(SIMPLE)
        assert sandbox.validate("import os" + BODY).stage == "static"  # static needs no sandbox
        with pytest.warns(UnsafeSandboxWarning):
            v = sandbox.validate(SIMPLE, unsafe_no_sandbox=True)
        assert isinstance(v, Validation) and v.accepted and v.probe_raw == _reference(SIMPLE)
        good = tmp_path / "good.py"
        good.write_text(SIMPLE)
        assert sandbox.check_file(good, console=Console(file=io.StringIO())) == 3
    finally:
        monkeypatch.undo()
        oslayer.detect.cache_clear()


def test_clean_values_rules() -> None:
    values, problems = core.clean_values([0, -10, 10, 10.5, "inf", {"type": "list"}, None], 7, (-10, 10))
    assert values == [0.0, -10.0, 10.0, None, None, None, None]
    assert len(problems) == 3 and all(not math.isnan(v) for v in values if v is not None)


def test_the_probe_batch_prompts_are_the_plain_format():
    """The sandbox sits below tasks, so its probe batch writes the plain prompt itself: the same text."""
    from rlvr.sandbox.probe import _PROBLEMS, probe_batch
    from rlvr.tasks import format_prompt

    _, columns = probe_batch()
    questions = {q: format_prompt(q) for q, _, _ in _PROBLEMS.values()}
    assert all(p == questions[q] for p, q in zip(columns["prompts"], columns["question"], strict=True))
