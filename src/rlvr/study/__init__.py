"""Studies: conditions x seeds from one base, on the same problems, with paired comparisons
(`rlvr study`; docs/study.md).

The names below are imported on first use, so that mounting the CLI (`rlvr.study.cli`) does not load
torch (the config's `train:` is typed by `TrainConfig`) for `rlvr --help`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlvr.study.config import QUICK, STUDY_PRESETS, Condition, StudyConfig
    from rlvr.study.run import StudyError, run_study

_WHERE = {
    "rlvr.study.config": ["QUICK", "STUDY_PRESETS", "Condition", "StudyConfig"],
    "rlvr.study.run": ["StudyError", "run_study"],
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = ["QUICK", "STUDY_PRESETS", "Condition", "StudyConfig", "StudyError", "run_study"]


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'rlvr.study' has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value
