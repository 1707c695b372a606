"""Typed `summary.json` of a demo folder (`DemoSummary`): the tests, the metrics before and after
GRPO and the audit's verdicts, as `rlvr demo` prints them.
"""

from __future__ import annotations

from rlvr.runs.eval import Metric
from rlvr.runs.records import _Record

__all__ = [
    "DemoAudit",
    "DemoSplit",
    "DemoSummary",
    "DemoTest",
]


class DemoTest(_Record):
    """One paired test of the demo's GRPO model against its SFT base (`evaluate.compare.PairedTest`)."""

    a: str
    b: str
    metric: str
    n_problems: int
    value_a: float
    value_b: float
    diff: float
    ci: list[float]
    test: str
    pvalue: float
    pvalue_adj: float | None = None


class DemoSplit(_Record):
    tests: list[DemoTest]
    metrics: dict[str, dict[str, Metric]]  # base (or sft-matched) / grpo -> metric name -> metric


class DemoAudit(_Record):
    status: str
    checks: dict[str, str]  # check -> pass / warn / fail


class DemoSummary(_Record):
    """`summary.json` of `rlvr demo`: the plan, per split the paired tests and both models' metrics
    (GRPO against its base), GRPO against the compute-matched SFT baseline on test (`sft_matched`,
    None when the plan skips it), the audit's verdicts, and where each run and the report are."""

    schema_version: int = 1
    plan: dict[str, int | bool]
    splits: dict[str, DemoSplit]
    sft_matched: DemoSplit | None = None
    audit: DemoAudit
    report: str
    runs: dict[str, str]
