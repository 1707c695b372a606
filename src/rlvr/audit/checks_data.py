"""Readiness checks 4-7: contamination, private holdout, training drift and human judgment."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rlvr.audit.contamination import TrainIndex, arith_construction, build_index, contamination_report
from rlvr.audit.context import AuditContext, finite
from rlvr.audit.drift import drift_alarms, reward_flags, structure_stats
from rlvr.audit.result import CheckResult, Status, fmt, table, worst
from rlvr.audit.runs import EvalRun

__all__ = ["check_contamination", "check_drift", "check_holdout", "check_human"]

CONTAMINATED_DATASET = 0.02  # more than this share of an evaluation set flagged: the set is contaminated
TEMPLATED_TASKS = ("arith",)  # synthetic tasks whose questions share template phrases by construction
TEMPLATE_DETECT = 0.5  # a set whose items mostly match a training question with numbers masked is templated
_SPLIT_ORDER = {"test": 0, "holdout": 1, "dev": 2}
TEMPLATED_NOTE = (
    "{task} is templated: its questions share template phrases by construction, so many 8-grams of any test "
    "question occur in training although the question itself never does. For templated data the check judges whole "
    "items (exact duplicates) and the task's construction (test/dev questions hash into their own split; holdout "
    "questions use templates training never uses), and reports the raw n-gram overlap for information only."
)
HUMAN = {"min_labelled": 30, "kappa_fail": 0.4, "kappa_warn": 0.6, "pr_fail": 0.8, "pr_warn": 0.95}


# ------------------------------------------------------------------ 4. contamination
def _judge(rep: dict[str, Any], task: str, split: str) -> tuple[Status, list[str]]:
    n, notes = rep["n_items"], []
    status: Status = "pass"
    if rep["exact_share"] > CONTAMINATED_DATASET:
        status = "fail"
        notes.append(f"{split}: {rep['exact_items']} of {n} items appear verbatim in training")
    elif rep["exact_items"]:
        status = "warn"
        notes.append(f"{split}: {rep['exact_items']} of {n} items appear verbatim in training")
    if rep["ngram_share"] > CONTAMINATED_DATASET:
        share = f"{rep['ngram_share']:.0%} of items share > {rep['item_threshold']:.0%} of their 8-grams with training"
        if task in TEMPLATED_TASKS:
            notes.append(f"{split}: {share}: template phrases shared by construction; judged on whole items")
        elif rep["template_share"] >= TEMPLATE_DETECT:
            status = worst([status, "warn"])
            notes.append(f"{split}: {share}; {rep['template_share']:.0%} match a training question with numbers masked")
        else:
            status = "fail"
            notes.append(f"{split}: {share}")
    return status, notes


def _one_set(
    ctx: AuditContext, index: TrainIndex, label: str, ev: EvalRun | None
) -> tuple[Status, dict[str, Any], list[str]]:
    if ev is None:  # the dev set the trainer evaluated on
        dev = ctx.dev_problems
        items, source, task = (
            [(p.id, p.question) for p in dev.problems] if dev else [],
            "re-created dev split",
            str(ctx.run.config.get("task")),
        )
    else:
        (items, source), task = ctx.eval_items(ev), ev.task
    if not items:
        return "warn", {"set": label, "source": source}, [f"{label}: no problems to compare ({source})"]
    rep = contamination_report(index, items, max_examples=3)
    status, notes = _judge(rep, task, label)
    out = {"set": label, "eval": str(ev.path) if ev else None, "task": task, "source": source, **rep}
    if task == "arith" and ev is not None:
        loaded = ctx.eval_problems(ev)
        if loaded.verified:
            out["construction"] = arith_construction(loaded.problems, ev.split)
            if not out["construction"]["ok"]:
                status = "fail"
                notes.append(f"{label}: arith construction violated: {out['construction']['rule']}")
    return status, out, notes


def _set_summary(e: dict[str, Any]) -> str:
    if "n_items" not in e:
        return f"{e['set']}: not compared"
    text = f"{e['set']}: {e['exact_items']} of {e['n_items']} items in training, {e['ngram_share']:.0%} n-gram flagged"
    if "construction" in e:
        text += " (disjoint by construction: verified)" if e["construction"]["ok"] else " (construction violated)"
    return text


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


def check_contamination(ctx: AuditContext) -> CheckResult:
    train = ctx.train_problems
    if train.error is not None or not train.problems:
        msg = f"cannot re-create the training problems from config.yaml: {train.error or 'none'}"
        return CheckResult("contamination", "warn", msg, {"error": train.error})
    index = build_index([(p.id, p.question) for p in train.problems])
    sets = _eval_sets(ctx)
    statuses: list[Status] = []
    entries: list[dict[str, Any]] = []
    notes: list[str] = []
    examples: list[dict[str, Any]] = []
    for label, ev in sets:
        st, entry, nt = _one_set(ctx, index, label, ev)
        statuses.append(st)
        entries.append(entry)
        notes += nt
        examples += [{"set": label, **x} for x in entry.get("examples", [])]
    if not train.verified:
        statuses.append("warn")
        notes.append(f"re-created training data hash {train.actual_hash} != manifest {train.expected_hash}")
    status = worst(statuses) if sets else "warn"
    text = "; ".join(_set_summary(e) for e in entries) if entries else "no evaluation sets to compare"
    if status != "pass" and notes:
        text += ". " + "; ".join(n for n in notes if "by construction" not in n)
    rows = [
        [e["set"], e.get("n_items"), e.get("exact_items"), fmt(e.get("ngram_share"), ".1%"),
         fmt(e.get("raw_overlap"), ".1%"), fmt(e.get("template_share"), ".1%"),
         "n/a" if "construction" not in e else ("yes" if e["construction"]["ok"] else "NO")]
        for e in entries
    ]  # fmt: skip
    cols = [
        "set",
        "items",
        "exact duplicates",
        "items >50% 8-grams",
        "raw 8-gram overlap",
        "template match",
        "disjoint by construction",
    ]
    evid: dict[str, Any] = {
        "n_train": len(train.problems), "train_hash_verified": train.verified, "sets": entries, "notes": notes,
        "thresholds": {"item": 0.5, "dataset": CONTAMINATED_DATASET, "ngram": 8},
    }  # fmt: skip
    templated = sorted({e["task"] for e in entries if e.get("task") in TEMPLATED_TASKS})
    if templated:
        evid["explanation"] = TEMPLATED_NOTE.format(task=", ".join(templated))
    return CheckResult("contamination", status, text, evid, examples, [table("overlap with training", cols, rows)])


# ------------------------------------------------------------------ 5. private holdout
def _guard(task: str) -> dict[str, Any]:
    from rlvr.tasks import HoldoutError, load_task

    try:
        load_task(task, "holdout", n=1)  # type: ignore[arg-type]
    except HoldoutError:
        return {"ok": True, "detail": "load_task(..., 'holdout') raises HoldoutError without allow_holdout=True"}
    except Exception as e:  # noqa: BLE001 - any other error still refuses the holdout
        return {"ok": True, "detail": f"load_task refused the holdout ({type(e).__name__})"}
    return {"ok": False, "detail": "load_task returned holdout problems without allow_holdout=True"}


def _holdout_leaks(ctx: AuditContext, hold: list[EvalRun]) -> dict[str, Any]:
    train_hashes = {
        f"{r.name}:{k}": v["hash"]
        for r in [ctx.run, *ctx.ablations]
        for k, v in (r.manifest.get("data") or {}).items()
        if isinstance(v, dict) and isinstance(v.get("hash"), str)
    }
    hold_hashes = {e.name: e.result.get("data_hash") for e in hold}
    hold_hashes.update(
        {e.name: (e.manifest.get("data") or {}).get("holdout", {}).get("hash") or hold_hashes[e.name] for e in hold}
    )
    same = [f"{t} == {h}" for t, th in train_hashes.items() for h, hh in hold_hashes.items() if hh and th == hh]
    hold_ids = {str(p.get("id")) for e in hold for p in e.result.get("per_problem") or [] if isinstance(p, dict)}
    train_ids = {str(r.get("problem_id")) for r in ctx.run.samples()}
    return {
        "holdout_hashes": hold_hashes,
        "train_hashes": train_hashes,
        "equal_hashes": same,
        "trained_on_holdout_split": [k for k in train_hashes if k.endswith(":holdout")],
        "train_sample_ids": len(train_ids),
        "leaked_ids": sorted(train_ids & hold_ids)[:10] + sorted(i for i in train_ids if "-holdout-" in i)[:10],
    }


def check_holdout(ctx: AuditContext) -> CheckResult:
    guard = _guard(str(ctx.run.config.get("task", "arith")))
    hold = [e for e in ctx.evals if e.split == "holdout"]
    leaks = _holdout_leaks(ctx, hold)
    ev: dict[str, Any] = {"guard": guard, **leaks, "side_by_side": ctx.changes}
    rows = [
        [split, fmt(c["base"]), fmt(c["trained"]), f"{c['gain']:+.3f}", f"{c['ci'][0]:+.3f} to {c['ci'][1]:+.3f}",
         fmt(c.get("greedy", {}).get("base")), fmt(c.get("greedy", {}).get("trained"))]
        for split, c in sorted(ctx.changes.items(), key=lambda kv: kv[0] != "test")
    ]  # fmt: skip
    tables = [
        table(
            "holdout vs public test",
            ["split", "base pass@1", "trained pass@1", "change", "95% CI", "base greedy", "trained greedy"],
            rows,
        )
    ]
    problems = []
    if not guard["ok"]:
        problems.append(guard["detail"])
    problems += [f"a training data hash equals the holdout's ({s})" for s in leaks["equal_hashes"]]
    problems += [f"the run loaded a holdout split ({k})" for k in leaks["trained_on_holdout_split"]]
    if leaks["leaked_ids"]:
        problems.append(f"training samples include holdout problems ({', '.join(leaks['leaked_ids'][:3])})")
    if problems:
        return CheckResult("holdout", "fail", "; ".join(problems), ev, tables=tables)
    if not hold:
        hint = (
            "gsm8k has no private holdout: evaluate a JSONL of your own"
            if ctx.run.config.get("task") == "gsm8k"
            else "rlvr eval --split holdout"
        )
        return CheckResult(
            "holdout",
            "warn",
            f"no holdout evaluation given ({hint}); training never loaded a holdout",
            ev,
            tables=tables,
        )
    hashes = ", ".join(sorted({h for h in leaks["holdout_hashes"].values() if h}))
    text = f"holdout hash {hashes} never used in training; no leaked ids"
    for split in ("test", "holdout"):
        if split in ctx.changes:
            c = ctx.changes[split]
            text += f"; {split} pass@1 {c['gain']:+.3f} (CI {c['ci'][0]:+.3f} to {c['ci'][1]:+.3f})"
    return CheckResult("holdout", "pass", text, ev, tables=tables)


# ------------------------------------------------------------------ 6. training drift
def _drift_tables(d: dict[str, Any], struct: dict[str, Any], flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tables = []
    if d["alarms"]:
        tables.append(
            table("alarms", ["alarm", "level", "detail"], [[a["alarm"], a["level"], a["message"]] for a in d["alarms"]])
        )
    rows = [
        [f"completion length ({k})", fmt(v["early"], ".1f"), fmt(v["late"], ".1f"), fmt(v["ratio"], ".2f")]
        for k, v in d.get("length", {}).items()
    ]
    rows += [
        [k, fmt(d[k]["early"]), fmt(d[k]["late"]), fmt(d[k].get("ratio"), ".2f")]
        for k in ("entropy", "truncated_frac", "zero_std_frac")
        if k in d
    ]
    if rows:
        tables.append(
            table("early vs late training (first and last 20% of steps)", ["measure", "early", "late", "ratio"], rows)
        )
    feats = ("n", "tokens", "lines", "steps", "arith_density")
    if struct.get("n_rows"):
        rows = [[f, fmt(struct["correct"].get(f), ".3g"), fmt(struct["incorrect"].get(f), ".3g")] for f in feats]
        tables.append(table("structure of training completions", ["feature", "correct", "incorrect"], rows))
    if flags:
        rows = [[f["reward"], f["kind"], fmt(f.get("mean_correct")), fmt(f.get("mean_incorrect")),
                 fmt(f.get("corr_correct"), "+.2f"), fmt(f.get("corr_length"), "+.2f"),
                 "; ".join(f["flags"]) or f.get("note", "ok")] for f in flags]  # fmt: skip
        tables.append(
            table(
                "does each reward pay for correctness?",
                ["reward", "kind", "mean | correct", "mean | incorrect", "r(correct)", "r(length)", "flags"],
                rows,
            )
        )
    return tables


def check_drift(ctx: AuditContext) -> CheckResult:
    fallback = ctx.changes.get("test") or next(iter(ctx.changes.values()), None)
    d = drift_alarms(ctx.run, fallback)
    samples = ctx.run.samples()
    struct, flags = structure_stats(samples), reward_flags(samples)
    levels = [a["level"] for a in d["alarms"]]
    flagged = [f for f in flags if f["flags"]]
    levels += ["fail" if f["kind"] == "correctness" else "warn" for f in flagged]
    if not samples:
        levels.append("warn")
    status = worst(levels)
    parts = [a["message"] for a in d["alarms"]] + [f"reward {f['reward']}: {'; '.join(f['flags'])}" for f in flagged]
    if not samples:
        parts.append("no samples/train.jsonl: structural audit skipped")
    if not parts:
        h = d.get("hacking", {})
        held = h.get("heldout") or {}
        parts.append(
            f"no alarms over {d['n_steps']} steps: length x{fmt(d['length']['mean']['ratio'], '.2f')}, entropy "
            f"x{fmt(d['entropy']['ratio'], '.2f')}, truncation {fmt(d['truncated_frac']['late'], '.0%')}, reward "
            f"{fmt(h.get('reward_rise'), '+.3f')} with held-out {fmt(held.get('gain'), '+.3f')}"
        )
    ev = {**d, "structure": struct, "reward_flags": flags}
    return CheckResult("drift", status, "; ".join(parts), ev, tables=_drift_tables(d, struct, flags))


# ------------------------------------------------------------------ 7. human judgment
def _read_stats(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        return {"error": f"{path}: unreadable: {e}"}
    return data if isinstance(data, dict) else {"error": f"{path}: not a JSON object"}


def _human_status(s: dict[str, Any]) -> tuple[Status, list[str]]:
    n, kappa, in_ci = s.get("n_labelled"), s.get("answer_kappa_min"), s.get("verifier_pass@1_in_corrected_ci")
    fails, warns = [], []
    if in_ci is False:
        ci = s.get("pass@1_corrected_ci") or [math.nan, math.nan]
        fails.append(
            f"verifier pass@1 {fmt(s.get('pass@1_verifier'))} lies outside the human-corrected CI "
            f"[{fmt(ci[0])}, {fmt(ci[1])}]"
        )
    if finite(kappa) and kappa < HUMAN["kappa_fail"]:
        fails.append(f"reviewers disagree (kappa {kappa:.2f})")
    elif finite(kappa) and kappa < HUMAN["kappa_warn"]:
        warns.append(f"moderate reviewer agreement (kappa {kappa:.2f})")
    elif not finite(kappa):
        warns.append("one reviewer only: no agreement measured")
    for key in ("verifier_precision", "verifier_recall"):
        v = s.get(key)
        if finite(v) and v < HUMAN["pr_fail"]:
            fails.append(f"{key.replace('_', ' ')} {v:.2f} against people")
        elif finite(v) and v < HUMAN["pr_warn"]:
            warns.append(f"{key.replace('_', ' ')} {v:.2f} against people")
    if not finite(n) or n < HUMAN["min_labelled"]:
        warns.append(f"only {n or 0} labelled items (< {HUMAN['min_labelled']})")
    return ("fail" if fails else "warn" if warns else "pass"), fails + warns


def check_human(ctx: AuditContext) -> CheckResult:
    found = [
        (e, _read_stats(e.path / "review" / "stats.json"))
        for e in ctx.evals
        if (e.path / "review" / "stats.json").is_file()
    ]
    target = next((e for e in ctx.evals if e.role == "trained" and e.split == "test"), next(iter(ctx.evals), None))
    if not found:
        where = str(target.path) if target else "EVAL_DIR"
        return CheckResult("human", "warn", f"no human-labelled slice; run `rlvr review export {where}`", {"found": []})
    found.sort(key=lambda es: (es[0].role != "trained", es[0].split != "test"))
    ev, stats = found[0]
    if "error" in stats or not isinstance(stats.get("summary"), dict):
        return CheckResult(
            "human", "warn", stats.get("error") or f"{ev.path}/review/stats.json has no 'summary'", {"stats": stats}
        )
    s = stats["summary"]
    status, notes = _human_status(s)
    ci = s.get("pass@1_corrected_ci") or [None, None]
    text = (
        f"{ev.name}: {s.get('n_labelled')} items labelled by {s.get('n_reviewers')} reviewer(s); verifier precision "
        f"{fmt(s.get('verifier_precision'), '.2f')}, recall {fmt(s.get('verifier_recall'), '.2f')}; pass@1 "
        f"{fmt(s.get('pass@1_verifier'))} by the verifier vs {fmt(s.get('pass@1_corrected'))} corrected by people "
        f"(CI {fmt(ci[0])} to {fmt(ci[1])})"
    )
    if notes:
        text += "; " + "; ".join(notes)
    rows = [[str(e.path), e.role, e.split, fmt((st.get("summary") or {}).get("n_labelled"), ".0f")] for e, st in found]
    evid = {
        "eval": str(ev.path),
        "schema": stats.get("schema"),
        "summary": s,
        "thresholds": HUMAN,
        "all": [str(e.path) for e, _ in found],
    }
    return CheckResult(
        "human", status, text, evid, tables=[table("review slices", ["eval", "role", "split", "labelled"], rows)]
    )
