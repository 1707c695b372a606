"""The in-jail side of the reward sandbox: loads one candidate reward and answers calls over pipes.

Run by `rlvr.sandbox.jail` as a script inside the OS jail, never imported as a module; it imports only
the standard library and `rlvr.verify`. Everything after `load` runs untrusted code in this process,
so the host trusts nothing this process writes. The protocol: docs/sandbox.md ("Worker protocol")."""

from __future__ import annotations

import builtins
import importlib
import inspect
import json
import math
import os
import resource
import sys
import types
from typing import Any

MAX_ERROR_CHARS = 500


class SandboxImportError(ImportError):
    """An import the sandbox policy does not allow."""


def _set_limits(limits: dict[str, int]) -> None:
    """Lower the resource limits before any candidate code runs (soft = hard, so they stick)."""
    table = {
        "memory_bytes": resource.RLIMIT_AS,
        "file_bytes": resource.RLIMIT_FSIZE,
        "open_files": resource.RLIMIT_NOFILE,
        "processes": resource.RLIMIT_NPROC,
        "cpu_s": resource.RLIMIT_CPU,
        "core_bytes": resource.RLIMIT_CORE,
    }
    for key, res in table.items():
        if key in limits:
            _, hard = resource.getrlimit(res)
            value = limits[key] if hard == resource.RLIM_INFINITY else min(limits[key], hard)
            resource.setrlimit(res, (value, value))


class _Module(types.SimpleNamespace):
    """What `import M` gives a candidate: M's public functions, classes and constants only.

    It deliberately has no `__name__`: `from M import x` falls back to `sys.modules["M.x"]` when
    the namespace lacks `x` and has a `__name__`, which would hand out the real submodule."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"sandboxed module has no attribute {attr!r} (only public functions, classes, constants)")


class _Policy:
    """The module allowlist handed to candidates as read-only-ish namespaces (cached per name)."""

    def __init__(self, cfg: dict[str, Any]):
        self.modules: set[str] = set(cfg["modules"])
        self.from_only: dict[str, set[str]] = {k: set(v) for k, v in cfg["from_only"].items()}
        self.hidden: dict[str, set[str]] = {k: set(v) for k, v in cfg["hidden"].items()}
        self.builtin_names: list[str] = cfg["builtins"]
        self._cache: dict[str, _Module] = {}

    def namespace(self, name: str) -> _Module:
        """Public non-module attributes of an allowed module, plus its allowed submodules."""
        if name in self._cache:
            return self._cache[name]
        attrs: dict[str, Any] = {}
        if name in self.modules:
            mod = importlib.import_module(name)
            public = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
            for attr in public:
                if attr.startswith("_") or attr in self.hidden.get(name, ()):
                    continue  # a hidden name is never even looked up (a lazy one would load its module)
                value = getattr(mod, attr, None)
                if not isinstance(value, types.ModuleType):
                    attrs[attr] = value
        for sub in self.modules:
            head, _, tail = sub.rpartition(".")
            if head == name:
                attrs[tail] = self.namespace(sub)
        ns = _Module(**attrs)
        self._cache[name] = ns
        return ns

    def guarded_import(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level:
            raise SandboxImportError("relative imports are not allowed in the sandbox")
        if name in self.from_only:
            wanted = list(fromlist or ())
            if not wanted or any(n not in self.from_only[name] for n in wanted):
                raise SandboxImportError(f"only `from {name} import {', '.join(sorted(self.from_only[name]))}`")
            mod = importlib.import_module(name)
            return _Module(**{n: getattr(mod, n) for n in wanted})
        if name not in self.modules:
            raise SandboxImportError(f"import of {name!r} is not allowed in the sandbox")
        return self.namespace(name if fromlist else name.split(".")[0])

    def builtins(self) -> dict[str, Any]:
        safe = {n: getattr(builtins, n) for n in self.builtin_names if hasattr(builtins, n)}
        safe["__import__"] = self.guarded_import
        return safe


def _describe(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = type(exc).__name__
    return text[:MAX_ERROR_CHARS]


def _is_policy_error(exc: BaseException, policy: _Policy) -> bool:
    """A violation of the restricted namespace rather than an ordinary bug in the module."""
    if isinstance(exc, ImportError) or "sandboxed module" in str(exc):
        return True
    name = getattr(exc, "name", None)
    return isinstance(exc, NameError) and hasattr(builtins, str(name)) and name not in policy.builtin_names


def _check_entry(fn: Any, entry: str) -> str | None:
    if not isinstance(fn, types.FunctionType):
        return f"`{entry}` is not a plain function (got {type(fn).__name__})"
    params = list(inspect.signature(fn).parameters.values())
    first_ok = bool(params) and params[0].name == "completions" and params[0].kind is params[0].POSITIONAL_OR_KEYWORD
    if not first_ok or not any(p.kind is p.VAR_KEYWORD for p in params):
        return f"`{entry}` must have the signature {entry}(completions, **kwargs)"
    return None


def _load(msg: dict[str, Any], cfg: dict[str, Any], policy: _Policy) -> tuple[Any, dict[str, Any]]:
    """Execute the candidate module (stage 2) in its namespace (stage 3); returns (fn, reply)."""
    entry = cfg["entry"]
    ns: dict[str, Any] = {"__name__": "candidate"}
    if cfg["restricted"]:
        ns["__builtins__"] = policy.builtins()
    try:
        code = compile(msg["source"], "<candidate>", "exec", dont_inherit=True)
        exec(code, ns)
    except BaseException as exc:  # noqa: BLE001 - anything the candidate raises is a load failure
        stage = "namespace" if cfg["restricted"] and _is_policy_error(exc, policy) else "load"
        return None, {"ok": False, "stage": stage, "error": _describe(exc)}
    fn = ns.get(entry)
    problem = _check_entry(fn, entry) if cfg["restricted"] else (None if callable(fn) else f"no callable `{entry}`")
    if problem:
        return None, {"ok": False, "stage": "namespace", "error": problem}
    return fn, {"ok": True}


def _encode(value: Any) -> Any:
    """One returned item as plain JSON; the host decides whether it is valid."""
    kind = type(value)
    if value is None or kind is bool:
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return {"type": "int (too large)"}
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    return {"type": kind.__name__[:40]}


def _cpu_budget(seconds: float, cpu_cap: int) -> None:
    """The soft CPU limit `seconds` (+1) above what this process has used, the hard one `cpu_cap`."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)  # never above what this process inherited (ulimit -t)
    cap = cpu_cap if hard == resource.RLIM_INFINITY else min(cpu_cap, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(int(used.ru_utime + used.ru_stime + seconds) + 1, cap), cap))


def _call(fn: Any, msg: dict[str, Any], cpu_cap: int) -> dict[str, Any]:
    reply: dict[str, Any] = {"id": msg["id"]}
    _cpu_budget(msg.get("cpu_s", 10), cpu_cap)
    completions = msg["completions"]
    try:
        result = fn(completions, **msg["kwargs"])
        if not isinstance(result, list | tuple):
            reply.update(ok=False, error=f"returned {type(result).__name__}, not a list")
        elif len(result) > 2 * len(completions) + 16:  # wrong length; too long to be worth sending
            reply.update(ok=False, error=f"returned {len(result)} values for {len(completions)} completions")
        else:
            reply.update(ok=True, values=[_encode(v) for v in result])
    except BaseException as exc:  # noqa: BLE001 - report, never die on candidate errors
        reply.update(ok=False, error=_describe(exc))
    used = resource.getrusage(resource.RUSAGE_SELF)
    reply["cpu"] = round(used.ru_utime + used.ru_stime, 3)
    return reply


def _exec(ns: dict[str, Any], msg: dict[str, Any], cpu_cap: int) -> dict[str, Any]:
    """Run a snippet as a Python interpreter would (`rlvr.envs.python_tool`): in the namespace earlier
    snippets left, what it prints captured, and the value of a last expression printed as the REPL
    does; the first error ends it, reported as its last traceback line."""
    import ast
    import io

    reply: dict[str, Any] = {"id": msg["id"], "ok": True, "error": None}
    _cpu_budget(msg.get("cpu_s", 5), cpu_cap)
    buf, saved = io.StringIO(), (sys.stdout, sys.stderr)
    sys.stdout = sys.stderr = buf
    try:
        tree = ast.parse(msg["code"], "<tool>")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<tool>", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<tool>", "eval"), ns)
            if value is not None:
                print(repr(value))
    except BaseException as exc:  # noqa: BLE001 - the model's error is its to read
        reply["error"] = _describe(exc)
    finally:
        sys.stdout, sys.stderr = saved
    out = buf.getvalue()
    limit = int(msg.get("max_chars", 2000))
    reply["stdout"] = out if len(out) <= limit else out[:limit] + f"... [{len(out) - limit} characters cut]"
    return reply


def _decode_hook(obj: dict[str, Any]) -> Any:
    """Rebuild `Step`s that the host sent as {"$step": [expr, result]}."""
    if len(obj) == 1 and "$step" in obj:
        try:
            from rlvr.verify.steps import Step

            return Step(*obj["$step"])
        except ImportError:
            return {"expr": obj["$step"][0], "result": obj["$step"][1]}
    return obj


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    proto = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process

    def send(obj: dict[str, Any]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(proto, data) :]

    sys.path[:] = [cfg["path"]] + [p for p in sys.path if p and not p.startswith(os.path.dirname(__file__))]
    policy = _Policy(cfg)  # allowed modules are imported on first use, under the limits
    _set_limits(cfg["limits"])
    os.dup2(devnull, 2)  # start-up errors reached the host; candidate output goes nowhere
    sys.stderr = sys.stdout
    if cfg.get("selftest"):
        send({"ok": True, "uid": os.getuid()})
        return 0
    fn = None
    scope: dict[str, Any] = {"__name__": "__main__"}  # what `exec` snippets share, call after call
    for line in sys.stdin.buffer:
        msg = json.loads(line, object_hook=_decode_hook)
        if msg["op"] == "exec":
            send(_exec(scope, msg, cfg["limits"]["cpu_s"]))
        elif msg["op"] == "load":
            fn, reply = _load(msg, cfg, policy)
            send(reply)
        elif msg["op"] == "call" and fn is not None:
            try:
                send(_call(fn, msg, cfg["limits"]["cpu_s"]))
            except Exception as e:  # the worker's own failure (e.g. a limit it may not set): say which
                send({"id": msg.get("id"), "ok": False, "error": f"sandbox worker: {type(e).__name__}: {e}"})
        else:
            send({"id": msg.get("id"), "ok": False, "error": "no reward loaded"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
