"""The readiness audit: `rlvr audit RUN_DIR` gathers the measurement evidence a GRPO result needs
before it is published (matched compute, verifier audit, reward separation, contamination, private
holdout, training drift, human judgment) from run folders into report.html, report.md and
audit.json. See docs/audit.md."""

from rlvr.audit.checks import CHECKS, run_checks
from rlvr.audit.cli import audit_command
from rlvr.audit.context import AuditContext
from rlvr.audit.readiness import AuditResult, build_context, run_audit
from rlvr.audit.result import Check, CheckResult
from rlvr.audit.runs import AuditInputError
from rlvr.audit.verifier_audit import Probe, audit_verifier, make_probes, probes_for

__all__ = [
    "CHECKS",
    "AuditContext",
    "AuditInputError",
    "AuditResult",
    "Check",
    "CheckResult",
    "Probe",
    "audit_command",
    "audit_verifier",
    "build_context",
    "make_probes",
    "probes_for",
    "run_audit",
    "run_checks",
]
