"""The OS layer of the reward sandbox: bubblewrap command line (`Backend.argv`), seccomp filter
(`seccomp_program`), `detect()`, and one worker process (`WorkerProcess`), which talks to the jailed
`worker.py` over pipes with a deadline on every read and write. The exact flags: docs/sandbox.md."""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import sysconfig
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rlvr
from rlvr.procs import LineProcess, WorkerError, WorkerTimeout
from rlvr.sandbox.static import ALLOWED_MODULES, ENTRY, FROM_ONLY, HIDDEN_ATTRS, SAFE_BUILTINS

__all__ = [
    "DEFAULT_LIMITS",
    "Backend",
    "SandboxUnavailable",
    "UnsafeSandboxWarning",
    "WorkerError",
    "WorkerProcess",
    "WorkerTimeout",
    "detect",
    "get_backend",
    "seccomp_program",
    "worker_config",
]

JAIL_UID = 65534  # nobody
JAIL_PKG_ROOT = "/opt/rlvr"  # the rlvr package is mounted read-only at /opt/rlvr/rlvr
WORKER_SCRIPT = "sandbox/worker.py"  # run as a script, relative to the rlvr package directory
TMPFS_BYTES = 16 << 20
SELFTEST_TIMEOUT_S = 15.0
DEFAULT_LIMITS = {
    "memory_bytes": 1 << 30,  # RLIMIT_AS
    "file_bytes": 8 << 20,  # RLIMIT_FSIZE
    "open_files": 64,  # RLIMIT_NOFILE
    "processes": 32,  # RLIMIT_NPROC (uid 65534, counted across sandboxes; seccomp blocks fork anyway)
    "cpu_s": 3600,  # RLIMIT_CPU hard cap for a worker's lifetime; the soft limit is set per call
    "core_bytes": 0,
}


class SandboxUnavailable(RuntimeError):
    """No OS-level isolation is available here, so untrusted reward code cannot be run."""


class UnsafeSandboxWarning(RuntimeWarning):
    """Candidate code is running without OS isolation (`unsafe_no_sandbox=True`)."""


# --- seccomp ----------------------------------------------------------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# Syscall numbers from the kernel's unistd headers (asm/unistd_64.h and asm-generic/unistd.h).
_DENY = {
    "x86_64": {
        "socket": 41, "connect": 42, "accept": 43, "bind": 49, "listen": 50, "socketpair": 53,
        "accept4": 288, "fork": 57, "vfork": 58, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "unshare": 272, "setns": 308, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "keyctl": 250,
        "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
        "personality": 135, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "fanotify_init": 300, "quotactl": 179,
        "syslog": 103, "vhangup": 153, "iopl": 172, "ioperm": 173, "lookup_dcookie": 212,
        "execveat": 322, "uselib": 134, "ustat": 136, "sysfs": 139,
    },
    "aarch64": {
        "socket": 198, "socketpair": 199, "bind": 200, "listen": 201, "accept": 202, "connect": 203,
        "accept4": 242, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "keyctl": 219, "add_key": 217, "request_key": 218,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "settimeofday": 170,
        "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171, "personality": 92,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "fanotify_init": 262, "quotactl": 60,
        "syslog": 116, "vhangup": 58, "lookup_dcookie": 18, "execveat": 281,
    },
}  # fmt: skip
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE3 = 435
_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000
_EPERM, _ENOSYS = 1, 38
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def seccomp_program(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp filter (bytes of `struct sock_filter`) for bwrap's `--seccomp FD`, None on an
    architecture without a table. What it denies, and how: docs/sandbox.md ("What it denies")."""
    machine = machine or platform.machine()
    if machine not in _DENY:
        return None
    # (code, jump-true label, jump-false label, k); labels resolve to offsets after assembly
    prog: list[tuple[int, str | None, str | None, int]] = [
        (_LD_ABS, None, None, 4),  # seccomp_data.arch
        (_JEQ, "nr", "kill", _AUDIT_ARCH[machine]),
    ]
    labels = {"kill": -1, "nr": len(prog)}
    prog.append((_LD_ABS, None, None, 0))  # seccomp_data.nr
    if machine == "x86_64":
        prog.append((_JGE, "eperm", None, _X32_BIT))
    prog += [(_JEQ, "eperm", None, nr) for nr in sorted(_DENY[machine].values())]
    prog.append((_JEQ, "enosys", None, _CLONE3))
    prog.append((_JEQ, None, "allow", _CLONE[machine]))
    prog.append((_LD_ABS, None, None, 16))  # low 32 bits of args[0] (clone flags), little-endian
    prog.append((_JSET, "allow", "eperm", _CLONE_THREAD))
    tail = [
        ("allow", _RET_ALLOW),
        ("eperm", _RET_ERRNO | _EPERM),
        ("enosys", _RET_ERRNO | _ENOSYS),
        ("kill", _RET_KILL_PROCESS),
    ]
    for name, k in tail:
        labels[name] = len(prog)
        prog.append((_RET, None, None, k))
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        t = labels[jt] - i - 1 if jt else 0
        f = labels[jf] - i - 1 if jf else 0
        out += struct.pack("=HBBI", code, t, f, k)
    return out


# --- the jail ---------------------------------------------------------------------------------


def _base_python() -> str:
    """The real interpreter binary (a venv's base Python: the venv itself is not in the jail)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _package_dir() -> Path:
    return Path(rlvr.__file__).resolve().parent


def _runtime_mounts() -> tuple[list[str], list[str]]:
    """Read-only paths the interpreter needs (libraries, stdlib, the executable) and the
    site-packages directories inside them to hide behind an empty tmpfs."""
    tops = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32")
    binds = [top for top in tops if os.path.isdir(top) and not os.path.islink(top)]
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    exe = _base_python()
    for p in (str(Path(sys.base_prefix) / "lib"), paths["stdlib"], paths["platstdlib"], exe):
        if os.path.exists(p) and not any(p == b or p.startswith(b + "/") for b in binds):
            binds.append(p)
    hide = [
        p
        for p in {paths["purelib"], paths["platlib"], "/usr/lib/python3/dist-packages"}
        if os.path.isdir(p) and any(p.startswith(b + "/") for b in binds)
    ]
    return binds, sorted(hide)


def _parents(paths: list[str], covered: list[str]) -> list[str]:
    """Ancestor directories the jail must create (0755) before mounting `paths`."""
    out: set[str] = set()
    for p in paths:
        for parent in Path(p).parents:
            s = str(parent)
            if s != "/" and not any(s == c or s.startswith(c + "/") for c in covered):
                out.add(s)
    return sorted(out, key=lambda s: (s.count("/"), s))


@dataclass(frozen=True)
class Backend:
    """How workers are started: `kind` "bwrap" (isolated) or "unsafe" (rlimits only)."""

    kind: str
    bwrap: str | None = None
    privileged: bool = False  # running as root: no user namespace, setpriv drops to uid 65534
    setpriv: str | None = None
    seccomp: bool = False
    tmpfs_size: bool = True  # bwrap >= 0.8 can cap the size of /tmp
    python: str = field(default_factory=_base_python)
    expose: str = ""  # the part of the rlvr package the jail sees: "" all of it, or one subfolder (e.g. "harness")

    @property
    def pkg_root(self) -> str:
        """The folder holding the rlvr package, as the worker sees it."""
        return JAIL_PKG_ROOT if self.kind == "bwrap" else str(_package_dir().parent)

    def argv(self, cfg: dict[str, Any], seccomp_fd: int | None, script: str = WORKER_SCRIPT) -> list[str]:
        """The full command line for one worker with config `cfg`; `script` is the worker's path relative
        to the rlvr package (the reward worker unless another room brings its own, e.g. the code harness)."""
        cmd = [self.python, "-I", "-S", "-B", f"{self.pkg_root}/rlvr/{script}", json.dumps(cfg)]
        if self.kind != "bwrap":
            return cmd
        assert self.bwrap is not None
        a = [self.bwrap]
        if self.privileged:
            a += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        else:
            a += ["--unshare-all", "--uid", str(JAIL_UID), "--gid", str(JAIL_UID)]
        a += ["--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox"]
        binds, hide = _runtime_mounts()
        pkg_dest = f"{JAIL_PKG_ROOT}/rlvr" + (f"/{self.expose}" if self.expose else "")
        extra = [self.setpriv] if self.privileged and self.setpriv else []
        for d in _parents(binds + [pkg_dest] + extra, binds):
            a += ["--perms", "0755", "--dir", d]
        for top in ("/lib", "/lib64", "/lib32"):
            if os.path.islink(top):
                a += ["--symlink", os.readlink(top), top]
        for b in binds + extra:
            a += ["--ro-bind", b, b]
        a += ["--ro-bind", str(_package_dir() / self.expose), pkg_dest]
        for h in hide:
            a += ["--tmpfs", h]
        a += ["--dev", "/dev", "--perms", "1777"]
        a += ["--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"] if self.tmpfs_size else ["--tmpfs", "/tmp"]
        a += ["--remount-ro", "/", "--chdir", "/tmp"]
        if seccomp_fd is not None:
            a += ["--seccomp", str(seccomp_fd)]
        a.append("--")
        if self.privileged:
            assert self.setpriv is not None
            a += [self.setpriv, f"--reuid={JAIL_UID}", f"--regid={JAIL_UID}", "--clear-groups"]
            a += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return a + cmd


def worker_config(
    *, restricted: bool, limits: dict[str, int], selftest: bool = False, entry: str = ENTRY
) -> dict[str, Any]:
    """The worker's policy: the entry point's name, allowlists from `rlvr.sandbox.static`, limits,
    and a tag to find its processes."""
    return {
        "path": "",  # filled by WorkerProcess from the backend
        "entry": entry,
        "restricted": restricted,
        "modules": sorted(ALLOWED_MODULES),
        "from_only": {k: sorted(v) for k, v in FROM_ONLY.items()},
        "hidden": {k: sorted(v) for k, v in HIDDEN_ATTRS.items()},
        "builtins": sorted(SAFE_BUILTINS),
        "limits": {**DEFAULT_LIMITS, **limits},
        "selftest": selftest,
        "tag": uuid.uuid4().hex,
    }


def _selftest(backend: Backend) -> str | None:
    """None when a worker starts in this backend and reports uid 65534, else why not."""
    try:
        w = WorkerProcess(backend, worker_config(restricted=True, limits={}, selftest=True), SELFTEST_TIMEOUT_S)
    except WorkerError as e:
        return str(e)
    try:
        reply = w.read(time.monotonic() + SELFTEST_TIMEOUT_S, 4096)
    except WorkerError as e:
        return str(e)
    finally:
        w.kill()
    if reply.get("uid") != JAIL_UID:
        return f"the jail did not drop to uid {JAIL_UID} (got {reply.get('uid')!r})"
    return None


@functools.cache
def detect() -> Backend:
    """The bubblewrap backend after a self-test (cached), or raise `SandboxUnavailable`."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"the reward sandbox needs Linux namespaces (platform is {sys.platform})")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap is not installed (`apt-get install bubblewrap`): cannot isolate reward code"
        )
    privileged = os.geteuid() == 0
    setpriv = shutil.which("setpriv") if privileged else None
    if privileged and setpriv is None:
        raise SandboxUnavailable("running as root needs `setpriv` (util-linux) to drop to uid 65534 in the jail")
    try:
        usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise SandboxUnavailable(f"bubblewrap does not run: {e}") from e
    errors: list[str] = []
    for seccomp in (True, False) if seccomp_program() else (False,):
        backend = Backend("bwrap", bwrap, privileged, setpriv, seccomp, tmpfs_size="--size" in usage)
        err = _selftest(backend)
        if err is None:
            if errors:
                warnings.warn(f"reward sandbox runs without seccomp: {errors[0]}", RuntimeWarning, stacklevel=2)
            return backend
        errors.append(err)
    raise SandboxUnavailable(f"bubblewrap cannot create a sandbox here: {errors[-1]}")


def get_backend(unsafe_no_sandbox: bool = False) -> Backend:
    """The isolated backend; with `unsafe_no_sandbox`, fall back to a plain subprocess (warns)."""
    try:
        return detect()
    except SandboxUnavailable as e:
        if not unsafe_no_sandbox:
            raise
        warnings.warn(
            f"UNSAFE: running candidate reward code WITHOUT OS isolation (rlimits only): {e}",
            UnsafeSandboxWarning,
            stacklevel=3,
        )
        return Backend("unsafe")


# --- one worker process -----------------------------------------------------------------------


class WorkerProcess(LineProcess):
    """One sandboxed worker (`rlvr.procs.LineProcess` started in the jail): `request` writes a JSON
    line and reads the reply under a deadline. Any failure (timeout, EOF, oversized or malformed
    output, extra output) kills the sandbox and raises `WorkerError`; the owner starts a fresh one.
    Killing the process group ends bwrap, whose --die-with-parent then tears down its pid namespace."""

    def __init__(self, backend: Backend, cfg: dict[str, Any], timeout_s: float, script: str = WORKER_SCRIPT):
        cfg = {**cfg, "path": backend.pkg_root}
        self.tag = cfg["tag"]
        program = seccomp_program() if backend.seccomp else None
        read_fd = None
        if program is not None:
            read_fd, write_fd = os.pipe()
            os.write(write_fd, program)
            os.close(write_fd)
        try:
            argv = backend.argv(cfg, read_fd, script)
            fds = () if read_fd is None else (read_fd,)
            super().__init__(argv, env={}, cwd="/", pass_fds=fds, default=_jsonable, timeout_s=timeout_s)
        finally:
            if read_fd is not None:
                os.close(read_fd)


def _jsonable(obj: Any) -> Any:
    """Host-side encoding of dataset columns: `Step`s as {"$step": [expr, result]}, other
    dataclasses as dicts, anything else unknown as None."""
    from rlvr.verify.steps import Step

    if isinstance(obj, Step):
        return {"$step": [obj.expr, obj.result]}
    if isinstance(obj, tuple | set | frozenset):
        return list(obj)
    return None
