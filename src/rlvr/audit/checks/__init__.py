"""The seven readiness checks. Each reads an `AuditContext` and returns a `CheckResult` with a status
(pass / warn / fail), a one-line summary, its evidence (JSON-safe), examples, and display tables.
By what they check: `measurement` (1-3: matched compute, verifier, reward separation), `data`
(4-5: contamination, private holdout), `behaviour` (6-7: training drift, human judgment). Thresholds
are module constants; docs/audit.md explains each check.
"""

from __future__ import annotations

from collections.abc import Callable

from rlvr.audit.checks.behaviour import check_drift, check_human
from rlvr.audit.checks.data import check_contamination, check_holdout
from rlvr.audit.checks.measurement import check_matched_compute, check_reward_separation, check_verifier
from rlvr.audit.context import AuditContext
from rlvr.audit.result import ABOUT, TITLES, CheckResult, worst
from rlvr.runs.audit import EVIDENCE

__all__ = [
    "ABOUT", "CHECKS", "TITLES", "CheckResult", "run_checks", "worst", "check_contamination", "check_drift",
    "check_holdout", "check_human", "check_matched_compute", "check_reward_separation", "check_verifier",
]  # fmt: skip


CHECKS: dict[str, Callable[[AuditContext], CheckResult]] = {
    "matched_compute": check_matched_compute,
    "verifier": check_verifier,
    "reward_separation": check_reward_separation,
    "contamination": check_contamination,
    "holdout": check_holdout,
    "drift": check_drift,
    "human": check_human,
}


def run_checks(ctx: AuditContext, only: list[str] | None = None) -> list[CheckResult]:
    """Run the checks in order (all, or those named in `only`). A check that crashes is reported as
    a failed check naming the error, so one broken input never hides the other six verdicts."""
    out = []
    for name, fn in CHECKS.items():
        if only is not None and name not in only:
            continue
        try:
            out.append(fn(ctx))
        except Exception as e:  # noqa: BLE001 - reported as the check's verdict
            out.append(
                CheckResult(
                    name, "fail", f"the check could not run: {type(e).__name__}: {e}", EVIDENCE[name](error=repr(e))
                )
            )
    return out
