"""`run_audit(RUN_DIR, eval_dirs)`: load the run folders (`build_context`; evaluations and ablations
found near the run when not given), run the checks and write the report; docs/audit.md."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rlvr.audit.checks import run_checks
from rlvr.audit.context import AuditContext
from rlvr.audit.result import AuditResult, EvalRead
from rlvr.audit.runs import (
    AuditInputError,
    assign_roles,
    discover_ablations,
    discover_evals,
    load_eval_run,
    load_train_run,
)
from rlvr.runs import JudgeSummary, RunFileError, RunFolderError, check_side_out, read_judge, write_model_card

__all__ = ["AuditResult", "build_context", "run_audit"]


def _judge(eval_dir: Path) -> JudgeSummary | None:
    """The evaluation's LLM-judge summary (`rlvr judge`), when it was judged and the file reads."""
    try:
        return read_judge(eval_dir)
    except RunFileError:
        return None


def build_context(
    run_dir: str | Path,
    eval_dirs: Sequence[str | Path] = (),
    ablations: Sequence[str | Path] = (),
    *,
    second_verifier: bool = True,
) -> AuditContext:
    """Load the run, its evaluations and ablations, and tell which evaluation is of which model."""
    run = load_train_run(Path(run_dir))
    paths = [Path(p) for p in eval_dirs] or discover_evals(run)
    evals = [load_eval_run(p) for p in dict.fromkeys(paths)]
    abl_paths = [Path(p) for p in ablations] + discover_ablations(run)
    abl_runs = [load_train_run(p) for p in dict.fromkeys(q.resolve() for q in abl_paths) if p != run.path.resolve()]
    assign_roles(run, evals, abl_runs)
    return AuditContext(run, evals, abl_runs, second_verifier=second_verifier)


def run_audit(
    run_dir: str | Path,
    eval_dirs: Sequence[str | Path] = (),
    out_dir: str | Path | None = None,
    ablations: Sequence[str | Path] = (),
    strict: bool = False,
    *,
    second_verifier: bool = True,
    plots: bool = True,
) -> AuditResult:
    """Run the checks and write `report.html`, `report.md` and `audit.json` into `out_dir`
    (default `RUN_DIR/audit/`). Raises `AuditInputError` (one line) on unreadable run folders."""
    from rlvr.audit.report import write_reports

    if out_dir is not None:  # the default, RUN/audit, is the audit's own; a given folder must not be another's
        try:
            check_side_out(out_dir, ["audit.json"], "audit", overwrite=True)
        except RunFolderError as e:
            raise AuditInputError(str(e)) from None
    ctx = build_context(run_dir, eval_dirs, ablations, second_verifier=second_verifier)
    out = Path(out_dir) if out_dir is not None else ctx.run.path / "audit"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AuditInputError(f"{out}: cannot create the output folder: {e.strerror}") from None
    result = AuditResult(
        run_dir=ctx.run.path,
        out_dir=out,
        checks=run_checks(ctx),
        strict=strict,
        evals=[
            EvalRead(e.name, str(e.path), e.role, e.split, e.task, j.brief() if (j := _judge(e.path)) else "")
            for e in ctx.evals
        ],
        ablations=[str(a.path) for a in ctx.ablations],
    )
    result.files = write_reports(result, plots=plots)
    if ctx.run.path.resolve() == Path(run_dir).resolve():  # the model card gains the readiness summary
        write_model_card(ctx.run.path, (result.status, {c.name: c.status for c in result.checks}))
    return result
