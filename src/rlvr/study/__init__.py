"""Studies: conditions x seeds from one base, on the same problems, with paired comparisons
(`rlvr study`; docs/study.md).

The names below are imported on first use, so that mounting the CLI (`rlvr.study.cli`) does not load
torch (the config's `train:` is typed by `TrainConfig`) for `rlvr --help`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlvr.lazy import lazy_names

if TYPE_CHECKING:
    from rlvr.study.config import QUICK, STUDY_PRESETS, Condition, StudyConfig
    from rlvr.study.run import StudyError, run_study

_WHERE = {
    "rlvr.study.config": ["QUICK", "STUDY_PRESETS", "Condition", "StudyConfig"],
    "rlvr.study.run": ["StudyError", "run_study"],
}

__all__ = ["QUICK", "STUDY_PRESETS", "Condition", "StudyConfig", "StudyError", "run_study"]


__getattr__ = lazy_names(__name__, _WHERE)
