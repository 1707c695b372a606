"""Readiness checks 4-5, whether the evaluation data can show a gain: contamination (evaluation items
seen in training) and the private holdout (never used for choices, never leaked into training)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import model_serializer

from rlvr.audit import plots
from rlvr.audit.contamination import ContaminationReport, TrainIndex, build_index, contamination_report
from rlvr.audit.context import AuditContext, PairedChange
from rlvr.audit.result import CheckResult, Record, Status, Table, check, fmt, worst
from rlvr.audit.runs import EvalRun
from rlvr.tasks import Construction, DataError, HoldoutError, get_task, load_task

__all__ = ["ContaminationEvidence", "HoldoutEvidence", "check_contamination", "check_holdout"]


class SetEntry(Record):
    """One evaluation set compared with training (`report` None: nothing to compare). audit.json keeps
    the report's fields beside the set's, as it always has."""

    set: str
    source: str
    eval: str | None = None
    task: str | None = None
    report: ContaminationReport | None = None
    construction: Construction | None = None

    @model_serializer(mode="wrap")
    def _flat_report(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        report = out.pop("report", None)
        construction = out.pop("construction", None)
        if report is None:
            out = {"set": out["set"], "source": out["source"]}
        else:
            out = {"set": out["set"], "eval": out["eval"], "task": out["task"], "source": out["source"], **report}
        if construction is not None:
            out["construction"] = construction
        return out

    def summary(self) -> str:
        if self.report is None:
            return f"{self.set}: not compared"
        r = self.report
        text = f"{self.set}: {r.exact_items} of {r.n_items} items in training, {r.ngram_share:.0%} n-gram flagged"
        if self.construction is not None:
            text += " (disjoint by construction: verified)" if self.construction.ok else " (construction violated)"
        return text


class SetExample(Record):
    """A contamination example of the report: the set it came from and the item beside training's."""

    set: str
    id: str
    question: str
    overlap: float
    exact_duplicate: bool
    train_id: str | None
    train_question: str | None


class ContaminationEvidence(Record):
    n_train: int | None = None
    train_hash_verified: bool | None = None
    sets: list[SetEntry] = []
    notes: list[str] = []
    thresholds: dict[str, float] = {}
    explanation: str | None = None  # why a templated task is judged on whole items
    error: str | None = None  # the training problems could not be re-created, or the check could not run


class Guard(Record):
    ok: bool
    detail: str


class HoldoutEvidence(Record):
    guard: Guard | None = None
    holdout_hashes: dict[str, str | None] = {}
    train_hashes: dict[str, str] = {}
    equal_hashes: list[str] = []
    trained_on_holdout_split: list[str] = []
    train_sample_ids: int = 0
    leaked_ids: list[str] = []
    side_by_side: dict[str, PairedChange] = {}
    error: str | None = None  # the check could not run (or, where said, what it could not read)


CONTAMINATED_DATASET = 0.02  # more than this share of an evaluation set flagged: the set is contaminated
TEMPLATE_DETECT = 0.5  # a set whose items mostly match a training question with numbers masked is templated
_SPLIT_ORDER = {"test": 0, "holdout": 1, "dev": 2}
TEMPLATED_NOTE = (
    "{task} is templated: its questions share template phrases by construction, so many 8-grams of any test "
    "question occur in training although the question itself never does. For templated data the check judges whole "
    "items (exact duplicates) and the task's construction (test/dev questions hash into their own split; holdout "
    "questions use templates training never uses), and reports the raw n-gram overlap for information only."
)


# ------------------------------------------------------------------ 4. contamination
def _templated(task: str) -> bool:
    """Whether the task's questions share template phrases by construction (`Task.templated`)."""
    try:
        return get_task(task).templated
    except DataError:
        return False


def _judge(rep: ContaminationReport, task: str, split: str) -> tuple[Status, list[str]]:
    n, notes = rep.n_items, []
    status: Status = "pass"
    if rep.exact_items:
        status = "fail" if rep.exact_share > CONTAMINATED_DATASET else "warn"
        notes.append(f"{split}: {rep.exact_items} of {n} items appear verbatim in training")
    if rep.ngram_share > CONTAMINATED_DATASET:
        share = f"{rep.ngram_share:.0%} of items share > {rep.item_threshold:.0%} of their 8-grams with training"
        if _templated(task):
            notes.append(f"{split}: {share}: template phrases shared by construction; judged on whole items")
        elif rep.template_share >= TEMPLATE_DETECT:
            status = worst([status, "warn"])
            notes.append(f"{split}: {share}; {rep.template_share:.0%} match a training question with numbers masked")
        else:
            status = "fail"
            notes.append(f"{split}: {share}")
    return status, notes


def _one_set(
    ctx: AuditContext, index: TrainIndex, label: str, ev: EvalRun | None
) -> tuple[Status, SetEntry, list[str]]:
    if ev is None:  # the dev set the trainer evaluated on
        dev = ctx.dev_problems
        items = [(p.id, p.question) for p in dev.problems] if dev else []
        source, task = "re-created dev split", str(ctx.run.config.get("task"))
    else:
        (items, source), task = ctx.eval_items(ev), ev.task
    if not items:
        return "warn", SetEntry(set=label, source=source), [f"{label}: no problems to compare ({source})"]
    rep = contamination_report(index, items, max_examples=3)
    status, notes = _judge(rep, task, label)
    construction = None
    if ev is not None and _templated(task):
        loaded = ctx.eval_problems(ev)
        construction = get_task(task).construction(loaded.problems, ev.split) if loaded.verified else None
        if construction is not None and not construction.ok:
            status = "fail"
            notes.append(f"{label}: {task} construction violated: {construction.rule}")
    entry = SetEntry(
        set=label, source=source, eval=str(ev.path) if ev else None, task=task, report=rep, construction=construction
    )
    return status, entry, notes


def _eval_sets(ctx: AuditContext) -> list[tuple[str, EvalRun | None]]:
    """One evaluation per distinct problem set (test first), plus the training-time dev set."""
    seen: set[tuple[str, ...]] = set()
    sets: list[tuple[str, EvalRun | None]] = []
    for ev in sorted(ctx.evals, key=lambda e: (_SPLIT_ORDER.get(e.split, 9), e.role != "trained", e.name)):
        if ev.group not in seen:
            seen.add(ev.group)
            sets.append((f"{ev.split} ({ev.name})", ev))
    if ctx.dev_problems is not None and ctx.dev_problems.problems:
        sets.append(("dev (training-time)", None))
    return sets


@check(
    "contamination",
    "Contamination",
    "Word 8-gram overlap and exact duplicates between the training problems and each evaluation set.",
    ContaminationEvidence,
    plots.contamination,
)
def check_contamination(ctx: AuditContext) -> CheckResult:
    train = ctx.train_problems
    if train.error is not None or not train.problems:
        msg = f"cannot re-create the training problems from config.yaml: {train.error or 'none'}"
        return CheckResult("contamination", "warn", msg, ContaminationEvidence(error=train.error))
    index = build_index([(p.id, p.question) for p in train.problems])
    sets = _eval_sets(ctx)
    statuses: list[Status] = []
    entries: list[SetEntry] = []
    notes: list[str] = []
    examples: list[SetExample] = []
    for label, ev in sets:
        st, entry, nt = _one_set(ctx, index, label, ev)
        statuses.append(st)
        entries.append(entry)
        notes += nt
        examples += [SetExample(set=label, **asdict(x)) for x in (entry.report.examples if entry.report else [])]
    if not train.verified:
        statuses.append("warn")
        notes.append(f"re-created training data hash {train.actual_hash} != manifest {train.expected_hash}")
    status = worst(statuses) if sets else "warn"
    text = "; ".join(e.summary() for e in entries) if entries else "no evaluation sets to compare"
    if status != "pass" and notes:
        text += ". " + "; ".join(n for n in notes if "by construction" not in n)
    rows = [
        [
            e.set,
            r.n_items if r else None,
            r.exact_items if r else None,
            fmt(r.ngram_share if r else None, ".1%"),
            fmt(r.raw_overlap if r else None, ".1%"),
            fmt(r.template_share if r else None, ".1%"),
            "n/a" if e.construction is None else ("yes" if e.construction.ok else "NO"),
        ]
        for e, r in ((e, e.report) for e in entries)
    ]
    cols = [
        "set",
        "items",
        "exact duplicates",
        "items >50% 8-grams",
        "raw 8-gram overlap",
        "template match",
        "disjoint by construction",
    ]
    templated = sorted({e.task for e in entries if e.task and _templated(e.task)})
    evid = ContaminationEvidence(
        n_train=len(train.problems),
        train_hash_verified=train.verified,
        sets=entries,
        notes=notes,
        thresholds={"item": 0.5, "dataset": CONTAMINATED_DATASET, "ngram": 8},
        explanation=TEMPLATED_NOTE.format(task=", ".join(templated)) if templated else None,
    )
    return CheckResult("contamination", status, text, evid, examples, [Table("overlap with training", cols, rows)])


# ------------------------------------------------------------------ 5. private holdout
def _guard(task: str) -> Guard:
    try:
        load_task(task, "holdout", n=1)  # type: ignore[arg-type]
    except HoldoutError:
        return Guard(ok=True, detail="load_task(..., 'holdout') raises HoldoutError without allow_holdout=True")
    except Exception as e:  # noqa: BLE001 - any other error still refuses the holdout
        return Guard(ok=True, detail=f"load_task refused the holdout ({type(e).__name__})")
    return Guard(ok=False, detail="load_task returned holdout problems without allow_holdout=True")


def _holdout_evidence(ctx: AuditContext, hold: list[EvalRun], guard: Guard) -> HoldoutEvidence:
    train_hashes = {
        f"{r.name}:{k}": v.hash for r in [ctx.run, *ctx.ablations] for k, v in r.manifest.data.items() if v.hash
    }
    hold_hashes = {e.name: e.manifest.data_hash("holdout") or e.result.data_hash for e in hold}
    same = [f"{t} == {h}" for t, th in train_hashes.items() for h, hh in hold_hashes.items() if hh and th == hh]
    hold_ids = {p.id for e in hold for p in e.result.per_problem}
    train_ids = {str(r.problem_id) for r in ctx.run.samples()}
    return HoldoutEvidence(
        guard=guard,
        holdout_hashes=hold_hashes,
        train_hashes=train_hashes,
        equal_hashes=same,
        trained_on_holdout_split=[k for k in train_hashes if k.endswith(":holdout")],
        train_sample_ids=len(train_ids),
        leaked_ids=sorted(train_ids & hold_ids)[:10] + sorted(i for i in train_ids if "-holdout-" in i)[:10],
        side_by_side=ctx.changes,
    )


@check(
    "holdout",
    "Private holdout",
    "The private holdout was never trained or selected on, and its results sit beside the public test's.",
    HoldoutEvidence,
    plots.holdout,
)
def check_holdout(ctx: AuditContext) -> CheckResult:
    guard = _guard(str(ctx.run.config.get("task", "arith")))
    hold = [e for e in ctx.evals if e.split == "holdout"]
    ev = _holdout_evidence(ctx, hold, guard)
    rows = [
        [
            split,
            fmt(c.base),
            fmt(c.trained),
            f"{c.gain:+.3f}",
            f"{c.ci[0]:+.3f} to {c.ci[1]:+.3f}",
            fmt(c.greedy.base if c.greedy else None),
            fmt(c.greedy.trained if c.greedy else None),
        ]
        for split, c in sorted(ctx.changes.items(), key=lambda kv: kv[0] != "test")
    ]
    cols = ["split", "base pass@1", "trained pass@1", "change", "95% CI", "base greedy", "trained greedy"]
    tables = [Table("holdout vs public test", cols, rows)]
    problems = []
    if not guard.ok:
        problems.append(guard.detail)
    problems += [f"a training data hash equals the holdout's ({s})" for s in ev.equal_hashes]
    problems += [f"the run loaded a holdout split ({k})" for k in ev.trained_on_holdout_split]
    if ev.leaked_ids:
        problems.append(f"training samples include holdout problems ({', '.join(ev.leaked_ids[:3])})")
    if problems:
        return CheckResult("holdout", "fail", "; ".join(problems), ev, tables=tables)
    if not hold:
        hint = (
            f"{ctx.task.name} has no private holdout: evaluate a JSONL of your own"
            if ctx.task is not None and not ctx.task.holdout
            else "rlvr eval --split holdout"
        )
        text = f"no holdout evaluation given ({hint}); training never loaded a holdout"
        return CheckResult("holdout", "warn", text, ev, tables=tables)
    hashes = ", ".join(sorted({h for h in ev.holdout_hashes.values() if h}))
    text = f"holdout hash {hashes} never used in training; no leaked ids"
    for split in ("test", "holdout"):
        if split in ctx.changes:
            c = ctx.changes[split]
            text += f"; {split} pass@1 {c.gain:+.3f} (CI {c.ci[0]:+.3f} to {c.ci[1]:+.3f})"
    return CheckResult("holdout", "pass", text, ev, tables=tables)
