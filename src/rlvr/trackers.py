"""Experiment trackers, as TRL users know them: `report_to: [tensorboard, trackio, wandb, mlflow]`
(docs/train.md). Each is fed the same rows as `metrics.jsonl` (the same keys, `step` as the x-axis), so a
tracker never shows a number the run folder lacks; one that is not installed is refused when the config
is read, before any work.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

__all__ = ["Tracker", "TrackerName", "Trackers", "check_installed", "open_trackers"]

TrackerName = Literal["tensorboard", "trackio", "wandb", "mlflow"]  # each is also its package's import name
PROJECT = "rlvr"


class Tracker(Protocol):
    def log(self, metrics: dict[str, float], step: int) -> None: ...
    def close(self) -> None: ...


def check_installed(names: list[str]) -> list[str]:
    """The names, once each tracker's package is importable; ValueError naming the extra otherwise."""
    for name in names:
        if importlib.util.find_spec(name) is None:
            raise ValueError(f"{name} is not installed: pip install 'rlvr[{name}]'")
    if len(set(names)) != len(names):
        raise ValueError("a tracker is named twice")
    return names


def _scalars(row: Mapping[str, float]) -> dict[str, float]:
    """The finite numbers of a metrics row, without `step` (it is the x-axis)."""
    out = {}
    for k, v in row.items():
        if k != "step" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out[k] = float(v)
    return out


class _TensorBoard:
    def __init__(self, run: Path, config: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.w = SummaryWriter(log_dir=str(run / "tensorboard"), flush_secs=10)
        self.w.add_text("config", "```\n" + "\n".join(f"{k}: {v}" for k, v in config.items()) + "\n```")

    def log(self, metrics: dict[str, float], step: int) -> None:
        for k, v in metrics.items():
            self.w.add_scalar(k, v, global_step=step)

    def close(self) -> None:
        self.w.close()


class _Trackio:
    def __init__(self, run: Path, config: dict[str, Any]) -> None:
        import trackio

        self.run = trackio.init(project=PROJECT, name=run.name, config=config, resume="allow")

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


class _Wandb:
    def __init__(self, run: Path, config: dict[str, Any]) -> None:
        import wandb

        self.run = wandb.init(project=PROJECT, name=run.name, config=config, dir=str(run))

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


class _MLflow:
    def __init__(self, run: Path, config: dict[str, Any]) -> None:
        import mlflow

        if not os.environ.get("MLFLOW_TRACKING_URI"):
            mlflow.set_tracking_uri((run / "mlruns").resolve().as_uri())
        self.mlflow = mlflow
        self.run = mlflow.start_run(run_name=run.name)
        mlflow.log_params({k: str(v)[:500] for k, v in config.items()})

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.mlflow.log_metrics({k.replace("@", "_at_"): v for k, v in metrics.items()}, step=step)

    def close(self) -> None:
        self.mlflow.end_run()


_OPEN: dict[str, Callable[[Path, dict[str, Any]], Tracker]] = {
    "tensorboard": _TensorBoard,
    "trackio": _Trackio,
    "wandb": _Wandb,
    "mlflow": _MLflow,
}


class Trackers:
    """The trackers of one run, fed row by row like metrics.jsonl."""

    def __init__(self, names: list[str], run: Path, config: dict[str, Any]) -> None:
        self.open: list[Tracker] = [_OPEN[n](run, config) for n in names]

    def log(self, row: Mapping[str, float]) -> None:
        metrics = _scalars(row)
        step = int(row.get("step", 0))
        for t in self.open:
            t.log(metrics, step)

    def close(self) -> None:
        for t in self.open:
            t.close()
        self.open = []


def open_trackers(names: list[str], run: Path, config: dict[str, Any]) -> Trackers | None:
    """The named trackers for run folder `run` (None when there are none); `config` is the run's
    resolved config as flat `dotted.key: value` pairs."""
    return Trackers(names, run, config) if names else None
