"""Run folders (docs/outputs.md): the files several packages share are written and read here, with one
NaN policy, one error style (`FILE[:LINE]: field 'x': ...`) and a schema version in each JSON file; a
file with a single owner keeps its `Record` beside that owner. Modules: `io` (read/write, `clean`,
`RunFileError`), `records` (manifest, samples; `read_record`), `eval` (eval.json, judge.json), `metrics`
(metrics.jsonl), `review` (a review folder's files), `folder` (`RunDir`, the checks before writing).
"""

from rlvr.runs.eval import EvalResult, JudgeSummary, Metric, ProblemResult, read_eval, read_judge
from rlvr.runs.folder import (
    RunDir,
    RunFolderError,
    check_out,
    check_out_file,
    check_resume,
    check_side_out,
    check_space,
    make_folder,
    relocated_model,
    trained_on,
    write_model_card,
)
from rlvr.runs.io import (
    SCHEMA_VERSION,
    RunFileError,
    append_jsonl,
    clean,
    iter_jsonl,
    read_json,
    read_jsonl,
    read_yaml,
    write_json,
    write_jsonl,
)
from rlvr.runs.records import (
    DataRef,
    Interruption,
    Manifest,
    RewardAudit,
    Sample,
    TrainSample,
    conversation_text,
    read_manifest,
    read_samples,
)

__all__ = [
    "conversation_text",
    "Interruption",
    "DataRef",
    "EvalResult",
    "JudgeSummary",
    "Manifest",
    "Metric",
    "ProblemResult",
    "RewardAudit",
    "RunDir",
    "RunFileError",
    "RunFolderError",
    "SCHEMA_VERSION",
    "Sample",
    "TrainSample",
    "append_jsonl",
    "check_out",
    "check_out_file",
    "check_side_out",
    "check_resume",
    "check_space",
    "clean",
    "iter_jsonl",
    "make_folder",
    "read_eval",
    "read_json",
    "read_jsonl",
    "read_judge",
    "read_manifest",
    "read_samples",
    "read_yaml",
    "relocated_model",
    "trained_on",
    "write_json",
    "write_jsonl",
    "write_model_card",
]
