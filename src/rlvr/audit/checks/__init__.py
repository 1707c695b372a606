"""The readiness checks in the report's order (`CHECKS`) and `run_checks`. By what they check:
`measurement` (matched compute, verifier, reward separation), `data` (contamination, private holdout),
`behaviour` (training drift, human judgment), `boundary` (the reasoning boundary: pass@k at large k),
`strict` (the training samples re-verified strictly);
thresholds are module constants, docs/audit.md explains each check."""

from __future__ import annotations

from rlvr.audit.checks.behaviour import check_drift, check_human
from rlvr.audit.checks.boundary import check_boundary
from rlvr.audit.checks.data import check_contamination, check_holdout
from rlvr.audit.checks.measurement import check_matched_compute, check_reward_separation, check_verifier
from rlvr.audit.checks.strict import check_strict
from rlvr.audit.context import AuditContext
from rlvr.audit.result import Check, CheckResult

__all__ = [
    "CHECKS",
    "run_checks",
    "check_boundary",
    "check_contamination",
    "check_drift",
    "check_holdout",
    "check_human",
    "check_matched_compute",
    "check_reward_separation",
    "check_strict",
    "check_verifier",
]

CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        check_matched_compute,
        check_verifier,
        check_reward_separation,
        check_contamination,
        check_holdout,
        check_drift,
        check_human,
        check_boundary,
        check_strict,
    )
}
"""The checks in the report's order; a new check is one line here."""


def run_checks(ctx: AuditContext) -> list[CheckResult]:
    """Run the checks in order. A check that crashes is reported as a failed check naming the error,
    so one broken input never hides the other verdicts."""
    out = []
    for c in CHECKS.values():
        try:
            out.append(c(ctx))
        except Exception as e:  # noqa: BLE001 - reported as the check's verdict
            out.append(c.crashed(e))
    return out
