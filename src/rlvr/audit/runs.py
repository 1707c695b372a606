"""Read run folders for the audit (the GRPO run, its evaluations, its ablations) and tell which
evaluation is of which model (`assign_roles`); bad input raises `AuditInputError`, one line naming the
file. What is read and how roles are assigned: docs/audit.md, "Inputs"."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from rlvr import runs
from rlvr.runs.metrics import MetricsLog, read_metrics

__all__ = [
    "AuditInputError",
    "EvalRun",
    "TrainRun",
    "assign_roles",
    "discover_ablations",
    "discover_evals",
    "eval_pairs",
    "load_eval_run",
    "load_train_run",
    "model_key",
    "read_samples",
]

R = TypeVar("R")
CORRECTNESS_REWARDS = ("outcome", "process", "hybrid")
FORMAT_REWARDS = ("format_exact", "format_approx", "format_gsm8k")


class AuditInputError(ValueError):
    """A run folder the audit cannot read; the message is one line naming the file."""


def _read(read: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """`read(*args, **kwargs)` of the run files, a file that does not read raised as AuditInputError."""
    try:
        return read(*args, **kwargs)
    except runs.RunFileError as e:
        raise AuditInputError(str(e)) from None


def _read_manifest(folder: Path) -> runs.Manifest:
    """The folder's manifest.json (an empty one when the folder has none)."""
    return _read(runs.read_manifest, folder) if (folder / "manifest.json").is_file() else runs.Manifest()


def read_samples(path: Path) -> list[runs.Sample]:
    """A samples file's rows (missing file: none); a bad row raises AuditInputError."""
    return _read(runs.read_samples, path, missing_ok=True)


def _num(value: Any) -> float:
    """A logged number, or NaN (metrics.jsonl writes NaN as null)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


@dataclass(frozen=True)
class RewardWeight:
    """One reward of a run's config: registry name (or file function) and weight."""

    name: str
    weight: float


@dataclass
class _RunFolder:
    """What a GRPO run and an evaluation folder share: config, manifest and samples (read once)."""

    path: Path
    config: dict[str, Any]
    manifest: runs.Manifest
    _samples: list[runs.Sample] | None = field(default=None, repr=False, kw_only=True)
    _samples_file: ClassVar[str]

    @property
    def name(self) -> str:
        return self.path.name

    def samples(self) -> list[runs.Sample]:
        """Rows of the folder's samples file (read once)."""
        if self._samples is None:
            self._samples = read_samples(self.path / self._samples_file)
        return self._samples


@dataclass
class TrainRun(_RunFolder):
    """A GRPO run folder: resolved config, manifest, per-step metrics and samples/train.jsonl."""

    metrics: MetricsLog
    _samples_file = "samples/train.jsonl"

    @property
    def rewards(self) -> list[RewardWeight]:
        """The rewards of config.yaml, defaults filled in."""
        return [
            RewardWeight(spec["name"], _num(spec.get("weight", 1.0)))
            for spec in self.config.get("rewards") or []
            if isinstance(spec, dict) and isinstance(spec.get("name"), str)
        ]


@dataclass
class EvalRun(_RunFolder):
    """An evaluation folder and its samples.jsonl; `role` is trained, base, ablation or other (docs/audit.md)."""

    result: runs.EvalResult
    role: str = "other"
    ablation: str | None = None
    checkpoint: bool = False
    keys: list[Path] = field(default_factory=list)
    _samples_file = "samples.jsonl"

    @property
    def split(self) -> str:
        return str(self.result.split or self.config.get("split") or "?")

    @property
    def task(self) -> str:
        return str(self.result.task or self.config.get("task") or "?")

    @property
    def group(self) -> tuple[str, str, str, str]:
        """Evaluations in the same group scored the same problems."""
        preset = str(self.result.preset or self.config.get("preset") or "")
        return (self.task, preset, self.split, str(self.result.data_hash or ""))


def load_train_run(path: Path) -> TrainRun:
    """A GRPO run folder; AuditInputError when it is not one."""
    path = Path(path)
    if not path.is_dir():
        raise AuditInputError(f"{path}: no such run folder")
    if not (path / "config.yaml").is_file():
        raise AuditInputError(f"{path}: not a run folder (no config.yaml)")
    config = _read(runs.read_yaml, path / "config.yaml")
    manifest = _read_manifest(path)
    if manifest.command not in (None, "train") or not isinstance(config.get("rewards"), list):
        what = manifest.command or "unknown"
        raise AuditInputError(f"{path}: not a GRPO training run (command {what!r}, no rewards in config.yaml)")
    if not (path / "metrics.jsonl").is_file():
        raise AuditInputError(f"{path}: no metrics.jsonl")
    return TrainRun(path, config, manifest, _read(read_metrics, path / "metrics.jsonl"))


def load_eval_run(path: Path) -> EvalRun:
    """An evaluation folder; AuditInputError when it has no readable eval.json."""
    path = Path(path)
    if not (path / "eval.json").is_file():
        raise AuditInputError(f"{path}: not an evaluation folder (no eval.json)")
    result = _read(runs.read_eval, path)
    config = _read(runs.read_yaml, path / "config.yaml") if (path / "config.yaml").is_file() else {}
    return EvalRun(path, config, _read_manifest(path), result)


def _resolve(spec: str, anchors: list[Path]) -> Path:
    p = Path(spec).expanduser()
    if p.is_absolute():
        return p.resolve()
    for anchor in anchors:
        if (anchor / p).exists():
            return (anchor / p).resolve()
    return p.resolve()


def model_key(spec: str | Path | None, anchors: list[Path] | None = None) -> Path | None:
    """The run folder a model path belongs to: `X/model` and `X/checkpoints/step-N` give `X`."""
    if spec is None or str(spec) in ("", "tiny"):
        return None
    p = _resolve(str(spec), [Path.cwd(), *(anchors or [])])
    parts = p.parts
    if "checkpoints" in parts:
        return Path(*parts[: len(parts) - 1 - parts[::-1].index("checkpoints")])
    return p.parent if p.name == "model" else p


def _beside(folder: Path, manifest: runs.Manifest) -> str | None:
    """The model input as recorded relative to the folder (`paths.model.from_run`), when it is there:
    a copied or moved group of run folders still names its own members."""
    rel = manifest.paths.model.from_run if manifest.paths.model else None
    return str((folder / rel).resolve()) if rel is not None and (folder / rel).exists() else None


def _eval_keys(ev: EvalRun, anchors: list[Path]) -> list[Path]:
    specs = [ev.config.get("model"), ev.result.model or None, _beside(ev.path, ev.manifest)]
    return [k for k in (model_key(s, anchors) for s in specs if isinstance(s, str)) if k is not None]


def assign_roles(run: TrainRun, evals: list[EvalRun], ablations: list[TrainRun]) -> None:
    """Set each evaluation's `role` (trained, base, ablation, other) in place."""
    anchors = [run.path.resolve(), *run.path.resolve().parents]
    trained = model_key(run.path, anchors)
    base = model_key(_beside(run.path, run.manifest) or run.config.get("model"), anchors)
    abl = {model_key(a.path, anchors): a.name for a in ablations}
    for ev in evals:
        ev.keys = _eval_keys(ev, anchors)
        specs = [str(s) for s in (ev.config.get("model"), ev.result.model or None) if isinstance(s, str)]
        ev.checkpoint = any("checkpoints" in Path(s).parts for s in specs)
        if trained in ev.keys:
            ev.role = "trained"
        elif base is not None and base in ev.keys:
            ev.role = "base"
        elif any(k in abl for k in ev.keys):
            ev.role, ev.ablation = "ablation", next(abl[k] for k in ev.keys if k in abl)
        else:
            ev.role = "other"


def eval_pairs(evals: list[EvalRun]) -> list[tuple[EvalRun, EvalRun]]:
    """(base, trained) evaluations of the same problems, one pair per split; the final model's
    evaluation is preferred over a checkpoint's."""
    pairs = []
    groups = sorted({ev.group for ev in evals}, key=lambda g: (g[2] != "test", g))
    for group in groups:
        base = sorted((e for e in evals if e.group == group and e.role == "base"), key=lambda e: str(e.path))
        trained = sorted(
            (e for e in evals if e.group == group and e.role == "trained"), key=lambda e: (e.checkpoint, str(e.path))
        )
        if base and trained:
            pairs.append((base[0], trained[0]))
    return pairs


def discover_evals(run: TrainRun, max_depth: int = 2) -> list[Path]:
    """Evaluation folders near the run (its parent folder, up to `max_depth` levels down): used
    when no `--eval` is given, e.g. the demo's `runs/demo/evals/*` next to `runs/demo/grpo`."""
    root = run.path.resolve().parent
    found = []
    frontier = [root]
    for _ in range(max_depth):
        nxt = []
        for folder in frontier:
            for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
                if (child / "eval.json").is_file():
                    found.append(child)
                elif child.name not in ("checkpoints", "model", "samples", "audit"):
                    nxt.append(child)
        frontier = nxt
    return found


def reward_kind(name: str) -> str:
    """`correctness`, `format` or `other` for a registry reward name.

    >>> reward_kind("hybrid_0.5"), reward_kind("format_gsm8k"), reward_kind("length")
    ('correctness', 'format', 'other')
    """
    if name.startswith(CORRECTNESS_REWARDS):
        return "correctness"
    if name.startswith(FORMAT_REWARDS):
        return "format"
    return "other"


def ablation_kind(run: TrainRun) -> str | None:
    """`correctness-only` or `format-only` when every reward of the run is of that kind."""
    only = {reward_kind(r.name) for r in run.rewards}
    return f"{only.pop()}-only" if only in ({"correctness"}, {"format"}) else None


def discover_ablations(run: TrainRun) -> list[Path]:
    """Sibling GRPO runs from the same base whose rewards are all correctness or all format."""
    out = []
    anchors = [run.path.resolve(), *run.path.resolve().parents]
    base = model_key(_beside(run.path, run.manifest) or run.config.get("model"), anchors)
    for child in sorted(p for p in run.path.resolve().parent.iterdir() if p.is_dir()):
        if child == run.path.resolve() or not (child / "config.yaml").is_file():
            continue
        try:
            other = load_train_run(child)
        except AuditInputError:
            continue
        theirs = model_key(_beside(other.path, other.manifest) or other.config.get("model"), anchors)
        if theirs == base and ablation_kind(other) is not None:
            out.append(child)
    return out
