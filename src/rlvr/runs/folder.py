"""Run folders being written (`RunDir`: config.yaml, manifest.json, metrics.jsonl, samples/), the checks
before one is touched, and the model card. Every command writes one while it holds its lock
(`rlvr.runs.lock`); docs/outputs.md lists the files.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rlvr.config import dump_config
from rlvr.runs.io import RunFileError, append_jsonl, read_jsonl, read_yaml, write_json, write_jsonl
from rlvr.runs.lock import TREE_ENV, RunLock, RunLockedError, check_unlocked
from rlvr.runs.records import Host, Manifest, ModelPaths, Paths, read_manifest
from rlvr.trackers import Trackers, open_trackers

__all__ = [
    "RunDir",
    "RunFolderError",
    "check_out",
    "check_out_file",
    "check_resume",
    "check_side_out",
    "check_space",
    "make_folder",
    "relocated_model",
    "trained_on",
    "write_model_card",
    "package_versions",
    "git_commit",
]

_PACKAGES = ("rlvr", "torch", "transformers", "tokenizers", "numpy", "scipy", "pydantic", "peft", "trl")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that decide a run's numbers."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_commit() -> str | None:
    """The commit of the rlvr source tree, with `-dirty` when it has uncommitted changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        res = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        sha = res.stdout.strip()
        if res.returncode != 0 or not sha:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


class RunFolderError(ValueError):
    """`--out` cannot take a new run: it holds one already, or it cannot be written."""


def check_out(
    path: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    resumable: bool = False,
    reads: Sequence[str | Path] = (),
) -> None:
    """Refuse, before any work, a run folder that would lose what it holds or cannot be written: a
    folder with a run in it (unless `overwrite` or `resume`), one under a read-only parent, a file,
    too long a name, a symlink loop, one that is, holds or lies inside the `--model` the command
    `reads`, and one inside another run folder or a model folder (unless a study or search writing its
    own tree made it). The one check of every command's output path (`check_side_out` and
    `check_out_file` share its parts)."""
    p = Path(path)
    _check_name_length(p)  # before any stat of `p`, which would raise ENAMETOOLONG
    _check_not_inside(p, reads)
    manifest = p / "manifest.json"
    if not resume and not overwrite and manifest.is_file():
        try:
            finished = read_manifest(manifest).finished
        except RunFileError:
            finished = False
        what = (
            "a finished run" if finished else "an unfinished run" + (" (resume it with --resume)" if resumable else "")
        )
        raise RunFolderError(f"{p}: holds {what}; give another --out, or --overwrite to replace it")
    _check_writable_folder(p, "a run")


def check_out_file(path: str | Path, *, reads: Sequence[str | Path] = ()) -> None:
    """Refuse, before any work, an output *file* (`rlvr verify --out`) that cannot be written: a
    folder, a path under a file, too long a name, a symlink loop, a read-only or uncreatable folder,
    and one of the files the command `reads`. An existing file is replaced, as `> FILE` would."""
    p = Path(path)
    _check_name_length(p)
    here = _resolved(p)
    for r in reads:
        if _resolved(Path(r)) == here:
            raise RunFolderError(f"{p}: --out is {r}, the file this command reads; give another --out")
    if p.is_dir():
        raise RunFolderError(f"{p}: is a folder, not a file; give --out a file name")
    _check_writable_folder(p.parent, "the output", out=p)


def make_folder(path: str | Path) -> Path:
    """`mkdir -p` for an output folder already checked by `check_out`: a failure the check cannot
    foresee (a place only the kernel refuses, e.g. /proc) is a `RunFolderError` naming the path."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunFolderError(f"{p}: cannot create the folder ({e.strerror}); give another --out") from None
    return p


def _check_name_length(p: Path) -> None:
    limit = os.pathconf(".", "PC_NAME_MAX")
    if too_long := [part for part in p.parts if len(part.encode()) > limit]:
        raise RunFolderError(f"{p}: the name {too_long[0][:40]}... is longer than the file system's {limit} bytes")


def _resolved(p: Path, what: str = "") -> Path:
    """`p` absolute with its links followed; a symlink loop is a RunFolderError (`what`, e.g. "not a
    model folder", says which input `p` is). A path that does not exist yet resolves as it is."""
    loop = "a symlink loop: a link that leads back to itself"
    try:
        resolved = p.expanduser().resolve()
    except RuntimeError:  # Python 3.11's pathlib reports a loop so
        why = loop
    except OSError as e:
        why = loop if e.errno == errno.ELOOP else f"cannot follow the path: {e.strerror}"
    else:
        try:
            os.stat(resolved)  # a loop that resolve() passed over (newer pythons do not raise there)
            return resolved
        except OSError as e:
            if e.errno != errno.ELOOP:
                return resolved  # not there yet (an output to make), or an input refused where it is read
            why = loop
    raise RunFolderError(f"{p}: {what} ({why})" if what else f"{p}: {why}")


def _existing(p: Path) -> Path:
    """The nearest of `p` and its parents that exists (the file system root at worst)."""
    try:
        return next(q for q in (p, *p.parents) if q.exists() or q.is_symlink())
    except StopIteration:  # a relative path none of whose parts exist: the working directory
        return Path(".")
    except OSError as e:
        raise RunFolderError(f"{p}: cannot look at the path ({e.strerror})") from None


def _check_writable_folder(p: Path, what: str, *, out: Path | None = None) -> None:
    """`p` is, or can be made, a folder that this process can write `what` into (`out`: the path the
    user gave, when `p` is the folder of an output file)."""
    out = p if out is None else out
    existing = _existing(p)
    if existing.is_symlink() and not existing.exists():
        raise RunFolderError(f"{out}: {existing} is a broken or looping symlink, not a folder; give another --out")
    if not existing.is_dir():
        where = "is a file" if existing == out else f"lies under {existing}, a file"
        raise RunFolderError(f"{out}: {where}, not a folder; give another --out")
    if not os.access(existing, os.W_OK):
        raise RunFolderError(f"{existing}: not writable, so {out} cannot hold {what}")


def _check_not_inside(p: Path, reads: Sequence[str | Path]) -> None:
    here = _resolved(p)
    for r in reads:
        src = _resolved(Path(r), "not a model folder")
        if here == src:
            raise RunFolderError(f"{p}: --out is the --model this command reads ({r}); give another --out")
        if here in src.parents or src in here.parents:
            raise RunFolderError(f"{p}: overlaps {r}, which this command reads; give another --out")
    owner = os.environ.get(TREE_ENV)
    if owner is not None and (str(here) == owner or Path(owner) in here.parents):
        return  # a study's or search's own tree, laid out by the command that holds it
    for up in here.parents:
        if (up / "manifest.json").is_file():
            raise RunFolderError(f"{p}: inside {up}, another command's run folder; give an --out outside it")
        if (up / "config.json").is_file() and any(up.glob("*.safetensors")):
            raise RunFolderError(f"{p}: inside {up}, a model folder; give an --out outside it")


# What marks a folder as one command's output: another command must never write into it.
_OUTPUTS = ("manifest.json", "eval.json", "compare.json", "audit.json", "slice.jsonl", "results.json", "study.json")


def check_side_out(path: str | Path, owns: Sequence[str], command: str, *, overwrite: bool = False) -> None:
    """For a command that writes a few files into a folder (compare, audit, review export): refuse,
    before writing, a folder that holds another command's output (a run, an evaluation, ...), and one
    that holds this command's earlier output (`owns`) unless `overwrite`; and what `check_out` refuses
    of any output path (a file, too long a name, not writable)."""
    p = Path(path)
    _check_name_length(p)
    _check_writable_folder(p, f"{command}'s output")
    if foreign := [n for n in _OUTPUTS if n not in owns and (p / n).exists()]:
        raise RunFolderError(f"{p}: holds {foreign[0]}, another command's output; give {command} another --out")
    if not overwrite and (mine := [n for n in owns if (p / n).exists()]):
        raise RunFolderError(f"{p}: holds an earlier {command} ({mine[0]}); --overwrite replaces it, or another --out")


def check_space(path: str | Path, need_bytes: int, what: str) -> None:
    """Refuse, before any work, a run that cannot fit on the disk of `path` (`what` says what needs
    the space, e.g. "5 checkpoints and the final model")."""
    p = Path(path)
    free = shutil.disk_usage(_existing(p)).free
    if need_bytes > free:
        raise RunFolderError(
            f"{p}: {what} need about {need_bytes / 2**30:.2f} GiB, {free / 2**30:.2f} GiB free on that disk; "
            "free space, or save fewer checkpoints (save_every)"
        )


def _model_paths(run: Path, model: Any) -> ModelPaths | None:
    """Where the run's model input is, absolute and relative to the run folder, so a moved or copied
    run folder (with its base beside it) still finds it (`relocated_model`)."""
    if not isinstance(model, str) or not Path(model).expanduser().exists():
        return None
    absolute = Path(model).expanduser().resolve()
    return ModelPaths(absolute=str(absolute), from_run=os.path.relpath(absolute, run.resolve()))


def relocated_model(run: str | Path, model: str) -> str | None:
    """The model input of a run folder that moved: `model` as recorded no longer exists (a relative
    path from another working directory, or a moved base), but the path recorded relative to the run
    folder does. None when `model` exists as it is or nothing better is known."""
    if Path(model).expanduser().exists():
        return None
    try:
        paths = read_manifest(run).paths.model or ModelPaths()
    except RunFileError:
        return None
    candidates = [Path(run) / paths.from_run] if paths.from_run is not None else []
    candidates += [Path(paths.absolute)] if paths.absolute is not None else []
    return next((str(c.resolve()) for c in candidates if c.exists()), None)


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def check_resume(path: str | Path, config: BaseModel) -> None:
    """Refuse to resume a run whose config.yaml was edited after it started: the keys that differ
    from the config recorded in its manifest (`out` may differ: a moved folder)."""
    manifest = Path(path) / "manifest.json"
    try:
        recorded = read_manifest(manifest).config
    except RunFileError as e:
        raise RunFolderError(f"{manifest}: cannot read the run's manifest ({e})") from None
    if recorded is None:
        return  # a run from before configs were recorded
    now, then = _flat(config.model_dump(mode="json")), _flat(recorded)
    if isinstance(then.get("model"), str) and relocated_model(path, then["model"]) == now.get("model"):
        now["model"] = then["model"]  # the same model, found from the moved run folder
    # a key the recorded config lacks is a setting added to rlvr after the run started (every field is
    # recorded, defaults included): the run resumes with its value, so older runs stay resumable
    changed = sorted(k for k in then.keys() | now.keys() if k != "out" and k in then and now.get(k) != then.get(k))
    if changed:
        raise RunFolderError(
            f"{Path(path) / 'config.yaml'}: edited since the run started ({', '.join(changed)}); "
            "restore it, or start a new run from it with --config and another --out"
        )


class RunDir:
    """A run folder being written. Creating it writes `config.yaml` and `manifest.json`. With
    `write=False` (a data-parallel rank other than 0) nothing is written: rank 0 owns the folder."""

    def __init__(
        self,
        path: str | Path,
        config: BaseModel,
        *,
        command: str,
        resume: bool = False,
        write: bool = True,
        overwrite: bool = False,
    ) -> None:
        self.path, self.writes = Path(path), write
        self.started = time.time()
        self.manifest = Manifest()
        self.trackers: Trackers | None = None
        self.lock: RunLock | None = None
        if not write:
            return
        try:
            check_unlocked(self.path)  # before anything is touched: a refusal changes no byte
            check_out(self.path, resume=resume, overwrite=overwrite)
            if overwrite and not resume and (self.path / "manifest.json").is_file():
                shutil.rmtree(self.path)  # asked for; the inputs were checked before this point
            self.lock = RunLock(self.path, command, tree=command in ("study", "search"))
        except RunLockedError as e:  # another live command holds the folder
            raise RunFolderError(str(e)) from None
        except OSError as e:  # a place the checks could not foresee refusing (only the kernel knows)
            raise RunFolderError(f"{self.path}: cannot create the folder ({e.strerror}); give another --out") from None
        (self.path / "samples").mkdir(exist_ok=True)
        dump_config(config, self.path / "config.yaml")
        fields: dict[str, object] = {
            "command": command,
            "argv": sys.argv,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git_commit": git_commit(),
            "versions": package_versions(),
            "host": Host(platform=platform.platform(), cpus=os.cpu_count()),
            "seeds": {},
            "data": {},
            "config": config.model_dump(mode="json"),
        }
        if (paths := _model_paths(self.path, getattr(config, "model", None))) is not None:
            fields["paths"] = Paths(model=paths)
        if resume and (self.path / "manifest.json").exists():
            old = read_manifest(self.path)
            fields.update(old.model_dump(include={"seeds", "data", "config", "paths"}, exclude_unset=True))
            fields["resumed_from"] = old.created
        elif not resume:
            (self.path / "metrics.jsonl").write_text("")
        self.manifest = Manifest.model_validate(fields)
        self.write_manifest()
        flat = _flat(self.manifest.config)
        self.trackers = open_trackers(list(getattr(config, "report_to", [])), self.path, flat)

    def write_manifest(self, **updates: Any) -> None:
        """Merge `updates` (manifest fields, validated as `Manifest`) into the manifest and rewrite it
        atomically; only the fields given so far are written."""
        self.manifest = Manifest.model_validate({**self.manifest.model_dump(exclude_unset=True), **updates})
        if not self.writes:
            return
        write_json(self.path / "manifest.json", self.manifest.model_dump(mode="json", exclude_unset=True))

    def log(self, metrics: Mapping[str, float]) -> None:
        """Append one step's metrics to metrics.jsonl (flushed, so a crash loses nothing logged)."""
        if not self.writes:
            return
        append_jsonl(self.path / "metrics.jsonl", [dict(metrics)])
        if self.trackers is not None:
            self.trackers.log(metrics)

    def truncate_logs(self, step: int) -> None:
        """Drop what metrics.jsonl and samples/train.jsonl logged after `step` (a run resuming from
        its checkpoint at `step` logs those steps again). Rows are kept as written."""
        if not self.writes:
            return
        for path in (self.path / "metrics.jsonl", self.path / "samples" / "train.jsonl"):
            if path.exists():
                write_jsonl(path, [r for r in read_jsonl(path) if r.get("step", 0) <= step])

    def close(self) -> None:
        """Close the experiment trackers (`report_to`) and release the folder's lock; metrics.jsonl
        needs nothing."""
        if self.trackers is not None:
            self.trackers.close()
            self.trackers = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def append_samples(self, name: str, rows: Sequence[BaseModel]) -> None:
        """Append completions (records such as `TrainSample`, one JSON object per line) to
        samples/<name>.jsonl."""
        if not self.writes:
            return
        append_jsonl(self.path / "samples" / f"{name}.jsonl", [r.model_dump(mode="json") for r in rows])

    def write_json(self, name: str, obj: dict[str, Any]) -> Path:
        """Write a JSON record (e.g. eval.json) into the folder atomically, with its schema version."""
        return write_json(self.path / name, obj)

    def write_jsonl(self, name: str, rows: Sequence[BaseModel]) -> Path:
        """Write records (e.g. an evaluation's `EvalSample` rows as samples.jsonl) into the folder atomically."""
        return write_jsonl(self.path / name, [r.model_dump(mode="json") for r in rows])


def write_model_card(run_dir: str | Path, readiness: tuple[str, dict[str, str]] | None = None) -> Path | None:
    """`RUN/model/README.md`, so that a saved model explains itself: base model, data and hashes,
    rewards, objective, steps and sampling from the run's manifest, and the audit's readiness summary
    (`(status, {check: status})`) when one ran. None when the run has no model."""
    run = Path(run_dir)
    if not (run / "model" / "config.json").is_file():
        return None
    try:
        m = read_manifest(run)
    except RunFileError:
        return None  # not a run folder rlvr wrote
    cfg = m.config or {}
    rewards = ", ".join(f"{r['name']} x{r.get('weight', 1.0):g}" for r in cfg.get("rewards", [])) or "?"
    data = "; ".join(f"{k}: {v.task} n={v.n} hash {v.hash}" for k, v in m.data.items())
    lines = [
        f"# GRPO model trained by rlvr ({m.command or 'train'})",
        "",
        f"- base model: `{m.model.path if m.model and m.model.path else cfg.get('model')}`",
        f"- data: {data}",
        f"- rewards: {rewards}",
        f"- objective: {cfg.get('objective')} {json.dumps(m.objective or {}, sort_keys=True)}",
        f"- steps: {cfg.get('steps')} x {cfg.get('prompts_per_step')} prompts x {cfg.get('group_size')} samples, "
        f"lr {cfg.get('lr')}, seed {cfg.get('seed')}, LoRA {'yes (merged)' if cfg.get('lora') else 'no'}",
        f"- prompt format: {m.prompt_format}; sampling: {json.dumps(cfg.get('sampling', {}), sort_keys=True)}",
        f"- rlvr {m.versions.get('rlvr')}, git {m.git_commit}, created {m.created}",
        "",
        "Reproduce: `rlvr train --config config.yaml` (the run folder's resolved config).",
    ]
    if readiness is not None:
        status, checks = readiness
        summary = ", ".join(f"{k}: {v}" for k, v in checks.items())
        lines += ["", f"## Readiness audit: {status}", "", summary, "", "See `audit/report.html`."]
    path = run / "model" / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def trained_on(model: str | Path) -> tuple[str, str] | None:
    """(task, arith rung) that the run folder holding `model` trained on, from its config.yaml: a run
    folder, or its `model/`; None for a plain model folder or a config without them."""
    p = Path(model).expanduser()
    for folder in (p, p.parent) if p.name == "model" else (p,):
        try:
            cfg = read_yaml(folder / "config.yaml")
        except RunFileError:
            continue
        task, preset = cfg.get("task"), cfg.get("preset")
        return (task, preset) if isinstance(task, str) and isinstance(preset, str) else None
    return None
