"""The in-jail side of the code verifier: loads one solution and calls its function with plain data.

Run by `rlvr.harness.verifier` as a script inside the OS jail (`python -I -S -B
/opt/rlvr/rlvr/harness/worker.py CONFIG_JSON`), never imported as a module; it imports only the
standard library and `plaindata.py` from its own folder. It holds no test and no expected value:
the host sends arguments, this process sends back what the solution returned, and the host compares.
Everything after `load` runs untrusted code in this process, so the host trusts nothing it writes.

Protocol (one JSON object per line; requests on a duplicate of the original stdin, replies on a
duplicate of the original stdout, while fds 0, 1 and 2 point at /dev/null): first `{"ready": true,
"uid": N}`; then `{"op": "load", "source": ..., "entry": NAME}` -> `{"ok": true}` | `{"ok": false,
"error": ...}`; then any number of `{"op": "call", "id": k, "args": [...], "kwargs": {...}}` (arguments
in `plaindata` encoding) -> `{"id": k, "ok": true, "value": ...}` | `{"id": k, "ok": false, "type":
EXCEPTION_NAME, "error": ...}`; and for stdin/stdout programs `{"op": "run", "id": k, "source": ...,
"stdin": TEXT}` -> `{"id": k, "ok": true, "stdout": TEXT, "error": null | ...}`.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

MAX_ERROR_CHARS = 300


def _set_limits(limits: dict[str, int]) -> None:
    """Lower the resource limits before any solution code runs (soft = hard, so they stick)."""
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


def _describe(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = type(exc).__name__
    return text[:MAX_ERROR_CHARS]


def _run(msg: dict[str, Any], devnull: int) -> dict[str, Any]:
    """Run a whole program as `__main__` with `msg["stdin"]` on fd 0 and fd 1 captured (stdin/stdout
    mode): the reply carries what it printed (at most RLIMIT_FSIZE; more kills the worker) and the
    error that ended it, if any (a SystemExit with status 0 or None is not an error)."""
    with open("/tmp/.stdin", "wb") as f:
        f.write(msg["stdin"].encode())
    fd_in, fd_out = os.open("/tmp/.stdin", os.O_RDONLY), os.open("/tmp/.stdout", os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd_in, 0)
    os.dup2(fd_out, 1)
    os.close(fd_in)
    saved = sys.stdin, sys.stdout
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - restored below
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - flushed and restored below
    error = None
    try:
        exec(compile(msg["source"], "<solution>", "exec", dont_inherit=True), {"__name__": "__main__"})
    except SystemExit as exc:
        if exc.code not in (0, None):
            error = f"exit status {str(exc.code)[:100]}"
    except BaseException as exc:  # noqa: BLE001 - the program's error fails its test
        error = _describe(exc)
    finally:
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001 - a stdout the program closed or replaced
            pass
        sys.stdin, sys.stdout = saved
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
    os.lseek(fd_out, 0, os.SEEK_SET)
    out = os.read(fd_out, 2 << 20)
    os.close(fd_out)
    return {"id": msg["id"], "ok": True, "stdout": out.decode(errors="replace"), "error": error}


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    here = os.path.join(cfg["path"], "rlvr", "harness")
    sys.path.insert(0, here)
    import plaindata  # noqa: PLC0415 - by path: this script is not run as part of the rlvr package

    sys.path.remove(here)
    proto = os.dup(1)
    inp = os.fdopen(os.dup(0), "rb")  # requests on a private fd; the solution's stdin is /dev/null (input() -> EOF)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the process
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process

    def send(obj: dict[str, Any]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(proto, data) :]

    _set_limits(cfg["limits"])
    os.dup2(devnull, 2)  # start-up errors reached the host; solution output goes nowhere
    sys.stderr = sys.stdout
    send({"ready": True, "uid": os.getuid()})
    fn = None
    while line := inp.readline():
        msg = json.loads(line)
        if msg["op"] == "load":
            ns: dict[str, Any] = {"__name__": "__solution__"}
            try:
                exec(compile(msg["source"], "<solution>", "exec", dont_inherit=True), ns)
                fn = ns.get(msg["entry"])
                reply: dict[str, Any] = {"ok": callable(fn)}
                if fn is None or not callable(fn):
                    reply["error"] = f"the solution defines no function {msg['entry']!r}"
            except BaseException as exc:  # noqa: BLE001 - whatever the solution raises is its failure
                reply = {"ok": False, "error": _describe(exc)}
            send(reply)
        elif msg["op"] == "call" and fn is not None:
            reply = {"id": msg["id"]}
            try:
                args = plaindata.decode(msg["args"])
                kwargs = plaindata.decode(msg["kwargs"])
                value = plaindata.encode(fn(*args, **kwargs), convert=True)
                reply.update(ok=True, value=value)
            except BaseException as exc:  # noqa: BLE001 - report, never die on the solution's errors
                reply.update(ok=False, type=type(exc).__name__[:60], error=_describe(exc))
            try:
                send(reply)
            except ValueError as exc:  # an int too long for json (sys.get_int_max_str_digits)
                send({"id": msg["id"], "ok": False, "type": "ValueError", "error": _describe(exc)})
        elif msg["op"] == "run":
            send(_run(msg, devnull))
        else:
            send({"id": msg.get("id"), "ok": False, "type": "RuntimeError", "error": "no solution loaded"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
