"""Run folders (DESIGN.md, "Runs"): the files several packages share are written and read here, with
one NaN policy, one error style (`FILE[:LINE]: field 'x': ...`) and a schema version in each JSON file.
A file with a single owner keeps its record beside that owner, on the same `Record` base and reader
(`read_record`): audit.json in `rlvr.audit.result`, a search's results.json in `rlvr.search.records`,
study.json in `rlvr.study.records`, a demo's summary.json in `rlvr.demo`.

    io        read/write JSON, YAML and JSONL; `clean` (NaN -> null); `RunFileError`; schema versions
    records   typed `Manifest` (manifest.json), `Sample`/`TrainSample` (samples), `RewardAudit`;
              `read_record`, the one reader behind every typed JSON file
    eval      typed `EvalResult` (eval.json), `EvalSample` (samples.jsonl rows), `JudgeSummary` (judge.json)
    metrics   typed `MetricsLog` (metrics.jsonl: rows of numbers per step) and `read_metrics`
    review    typed `ReviewStats` (a review folder's stats.json)
    folder    `RunDir` (a run folder being written), the checks before one is touched, the model card
"""

from rlvr.runs.eval import EvalResult, JudgeSummary, Metric, ProblemResult, read_eval, read_judge
from rlvr.runs.folder import (
    RunDir,
    RunFolderError,
    check_out,
    check_resume,
    check_side_out,
    check_space,
    git_commit,
    package_versions,
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
    "check_side_out",
    "check_resume",
    "check_space",
    "clean",
    "git_commit",
    "iter_jsonl",
    "package_versions",
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
