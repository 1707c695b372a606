"""The Python tool: model-written code runs in the OS jail; hostile snippets are contained and come
back as text, and the tool keeps working after each."""

from __future__ import annotations

import pytest

from rlvr.envs.python_tool import PythonTool


@pytest.fixture(scope="module")
def py(os_sandbox):
    tool = PythonTool(timeout_s=3.0, max_chars=300)
    yield tool
    tool.close()


def test_it_computes_and_remembers_within_a_conversation(py) -> None:
    assert py.run("x = 41\nprint('set')") == "set\n"
    assert py.run("x + 1") == "42\n"  # the last expression's value, as a REPL shows it
    assert py.run("1/0").endswith("Error: ZeroDivisionError: division by zero")
    fresh = PythonTool(persistent=False)
    fresh.run("y = 1")
    assert "NameError" in fresh.run("y")
    fresh.close()


@pytest.mark.parametrize(
    "code, expect",
    [
        ("print(open('/etc/shadow').read())", "Error: "),  # host files: not there, or not readable
        ("import os; print(os.listdir('/work'))", "Error: "),  # nothing of the host's but the Python runtime
        ("print(open('/proc/1/environ').read())", "Error: "),
        ("import socket; socket.create_connection(('1.1.1.1', 80), timeout=1)", "Error: "),
        ("import os; os.fork()", "Error: "),
        ("import subprocess; subprocess.run(['ls', '/'])", "Error: "),
        ("x = bytearray(4 << 30)", "Error: MemoryError"),
    ],
    ids=["shadow", "work", "proc", "network", "fork", "subprocess", "memory"],
)
def test_hostile_snippets_are_contained(py, code: str, expect: str) -> None:
    assert expect in py.run(code)
    assert py.run("2 + 2") == "4\n"  # still working


def test_a_host_file_is_out_of_reach(py, tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the key")
    assert "FileNotFoundError" in py.run(f"print(open({str(secret)!r}).read())")  # /tmp is the jail's own
    out = py.run("import os; open(os.__file__, 'a')")  # the runtime it can see is read-only
    assert out.startswith("Error: ") and ("Read-only file system" in out or "PermissionError" in out)


def test_loops_floods_and_exits_end_as_messages(py) -> None:
    assert "ran past 3 s and was stopped; the interpreter was restarted" in py.run("while True:\n    pass")
    assert py.run("2 + 3") == "5\n"  # a fresh interpreter
    flood = py.run("print('x' * 100000)")
    assert len(flood) < 400 and flood.endswith("characters cut]")
    assert "SystemExit" in py.run("raise SystemExit(3)")
    assert py.run("import os; os.write(1, b'hidden'); 7") == "7\n"  # fd 1 goes nowhere, only print is read
