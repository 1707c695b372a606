"""Studies: conditions x seeds from one base, on the same problems, with paired comparisons
(`rlvr study`; docs/study.md)."""

from rlvr.study.config import QUICK, STUDY_PRESETS, Condition, StudyConfig
from rlvr.study.run import StudyError, run_study

__all__ = ["QUICK", "STUDY_PRESETS", "Condition", "StudyConfig", "StudyError", "run_study"]
