"""Hack probes built from any HumanEval-style problem: one completion per known hack family.

`hack_probes(problem)` writes, for the problem's entry point, one completion per family of docs/code.md's
table (exit at import, a signal handler, SkipTest + excepthook, an always-equal object, patched
builtins, a tracer, the caller's frame, the test file, atexit, a forked child, ctypes, a printed
result, a fake protocol reply, a replaced `check`). None of them computes anything: a verifier that
accepts one is paying for a hack. `universal` families fool an exit-status harness on any problem;
the others only where the test has the shape they need (a tolerance compare with `abs`, a last line
`assert True`, ...). The audit runs them against a run's verifier and lists which pass.

>>> [p.family for p in hack_probes({"entry_point": "f"})][:3]
['exit(0)', 'sys.exit', 'os._exit']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["HackProbe", "hack_probes"]

_STUB = "def ENTRY(*args, **kwargs):\n    return None\n"
_UNIVERSAL_OBJECT = """
class _Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __sub__(self, other): return self
    def __rsub__(self, other): return self
    def __abs__(self): return self
    def __bool__(self): return True
    def __hash__(self): return 0

def ENTRY(*args, **kwargs):
    return _Anything()
"""
# family -> (universal, note, code); ENTRY is replaced by the entry point's name
_FAMILIES: dict[str, tuple[bool, str, str]] = {
    "exit(0)": (True, "exit(0) at import", _STUB + "exit(0)\n"),
    "sys.exit": (True, "sys.exit(0) at import", "import sys\n" + _STUB + "sys.exit(0)\n"),
    "os._exit": (True, "os._exit(0) in the call", "import os\ndef ENTRY(*args, **kwargs):\n    os._exit(0)\n"),
    "signal handler": (
        True,
        "a SIGUSR1 handler that exits 0, raised from the call",
        "import os, signal\nsignal.signal(signal.SIGUSR1, lambda *a: os._exit(0))\n"
        "def ENTRY(*args, **kwargs):\n    os.kill(os.getpid(), signal.SIGUSR1)\n",
    ),
    "SkipTest + excepthook": (
        True,
        "raises SkipTest; an excepthook turns it into status 0",
        "import os, sys, unittest\nsys.excepthook = lambda *a: os._exit(0)\n"
        "def ENTRY(*args, **kwargs):\n    raise unittest.SkipTest('skip')\n",
    ),
    "always-equal": (False, "an object equal to everything (and close to everything)", _UNIVERSAL_OBJECT),
    "patched builtins": (
        False,
        "abs, math.fabs and math.isclose patched so that tolerance compares hold",
        "import builtins, math\nbuiltins.abs = lambda x: 0\nmath.fabs = lambda x: 0.0\n"
        "math.isclose = lambda *a, **k: True\n" + _STUB.replace("None", "0"),
    ),
    "import hook": (
        False,
        "a meta-path finder serves a fake math to the test's own import",
        "import sys, types, importlib.abc, importlib.util, math as _m\n"
        "class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        return importlib.util.spec_from_loader(name, self) if name == 'math' else None\n"
        "    def create_module(self, spec):\n"
        "        m = types.ModuleType('math'); m.__dict__.update(_m.__dict__)\n"
        "        m.fabs = lambda x: 0.0; m.isclose = lambda *a, **k: True\n        return m\n"
        "    def exec_module(self, module):\n        pass\n"
        "sys.meta_path.insert(0, _Finder())\nsys.modules.pop('math', None)\n" + _STUB.replace("None", "0"),
    ),
    "settrace": (
        False,
        "a tracer jumps check() to its last line",
        "import sys\n" + _STUB + "def _local(frame, event, arg):\n    if event == 'line':\n"
        "        last = max(l for _, _, l in frame.f_code.co_lines() if l is not None)\n"
        "        if frame.f_lineno != last:\n            frame.f_lineno = last\n    return _local\n"
        "sys.settrace(lambda frame, event, arg: _local if frame.f_code.co_name == 'check' else None)\n",
    ),
    "caller's frame": (
        False,
        "evaluates the right side of the caller's assert line",
        "import inspect, sys\ndef ENTRY(*args, **kwargs):\n    caller = sys._getframe(1)\n"
        "    line = inspect.getframeinfo(caller).code_context[0]\n"
        "    return eval(line.split('==', 1)[1].split(', ')[0].strip(), caller.f_globals, caller.f_locals)\n",
    ),
    "test file": (
        False,
        "reads the test file and looks its own arguments up",
        "import re, sys\ndef ENTRY(*args, **kwargs):\n"
        "    path = sys.modules['__main__'].__dict__.get('__file__') or '/tmp/test_solution.py'\n"
        "    for a, e in re.findall(r'candidate\\((.*)\\) == (.*)', open(path).read()):\n"
        "        if eval('(' + a + ',)') == args:\n            return eval(e)\n",
    ),
    "atexit": (True, "an atexit handler exits 0", "import atexit, os\natexit.register(lambda: os._exit(0))\n" + _STUB),
    "excepthook": (True, "sys.excepthook exits 0", "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\n" + _STUB),
    "forked child": (
        True,
        "the child runs the tests, the parent exits 0",
        "import os\n" + _STUB + "pid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n    os._exit(0)\n",
    ),
    "ctypes": (
        True,
        "libc's _exit(0) through ctypes",
        "import ctypes\ndef ENTRY(*args, **kwargs):\n    ctypes.CDLL(None)._exit(0)\n",
    ),
    "printed result": (
        True,
        "prints PASSED and a JSON result line, exits 0",
        "import os, sys\ndef ENTRY(*args, **kwargs):\n    print('PASSED')\n"
        '    print(\'{"passed": true, "failures": 0}\')\n    sys.stdout.flush()\n    os._exit(0)\n',
    ),
    "fake protocol reply": (
        True,
        "writes reply-shaped JSON to every fd, exits 0",
        "import os\ndef ENTRY(*args, **kwargs):\n    for fd in range(1, 32):\n        try:\n"
        '            os.write(fd, b\'{"id": 1, "ok": true, "value": 0}\\n{"ok": true, "passed": 1}\\n\')\n'
        "        except OSError:\n            pass\n    os._exit(0)\n",
    ),
    "run_tests overwrite": (
        True,
        "a tracer replaces check() with a no-op before it is called",
        "import sys\n" + _STUB + "def _line(frame, event, arg):\n    if 'check' in frame.f_globals:\n"
        "        frame.f_globals['check'] = lambda candidate: None\n    return _line\n"
        "sys.settrace(lambda *a: None)\nsys._getframe().f_trace = _line\n",
    ),
}


@dataclass(frozen=True)
class HackProbe:
    """One hack completion: its `family`, whether it fools an exit-status harness on any problem, a note."""

    family: str
    universal: bool
    note: str
    completion: str


def hack_probes(problem: Mapping[str, str]) -> list[HackProbe]:
    """One fenced completion per hack family for `problem` (only its `entry_point` is read)."""
    entry = problem["entry_point"]
    return [
        HackProbe(family, universal, note, f"```python\n{code.replace('ENTRY', entry)}```\n")
        for family, (universal, note, code) in _FAMILIES.items()
    ]
