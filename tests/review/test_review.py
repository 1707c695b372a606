"""Tests for rlvr.review: stratified slice, label store, label files, statistics, JSON API and CLI."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from rlvr.evaluate.stats import cohen_kappa
from rlvr.review import (
    Conflict,
    Label,
    LabelError,
    LabelStore,
    ReviewError,
    compute_stats,
    export_slice,
    load_eval,
    load_slice,
    parse_label,
    read_label_file,
    select,
    strata_of,
)
from rlvr.review.cli import review_app
from rlvr.review.items import ReviewSample
from rlvr.review.stats import classifier_stats, consensus, corrected_accuracy, reviewer_agreement, write_stats
from rlvr.review.store import StoredLabel
from rlvr.runs.review import read_review_stats

# ---------------------------------------------------------------- fixtures


def sample_row(pid: int, s: int, correct: bool, **kw: Any) -> dict[str, Any]:
    """One samples.jsonl row for the problem `(pid + 2) + 3 then * 2`."""
    a = pid + 2
    gold = str((a + 3) * 2)
    good = f"First {a} + 3 = {a + 3}. Then {a + 3} * 2 = {(a + 3) * 2}. The answer is {gold}."
    bad = f"First {a} + 3 = {a + 4}. Then {a + 4} * 2 = {(a + 4) * 2}. The answer is {(a + 4) * 2}."
    row = {
        "problem_id": f"p{pid:03d}",
        "question": f"Add 3 to {a}, then double it.",
        "gold": gold,
        "gold_solution": f"{a}+3=<<{a}+3={a + 3}>>{a + 3}\n{a + 3}*2=<<{a + 3}*2={gold}>>{gold}\n#### {gold}",
        "gold_steps": [[f"{a}+3", str(a + 3)], [f"{a + 3}*2", gold]],
        "n_steps": 2,
        "sample": s,
        "temperature": 1.0,
        "completion": good if correct else bad,
        "parsed": gold if correct else str((a + 4) * 2),
        "correct": correct,
        "reason": "match" if correct else "mismatch",
        "tokens": 20 + 3 * pid + s,
        "truncated": False,
        "process_score": 1.0 if correct else 0.0,
        "rewards": {"outcome": float(correct), "format": 1.0},
        "verifier2_correct": correct,
    }
    row.update(kw)
    return row


def population(n_problems: int = 12, n_samples: int = 4) -> list[dict[str, Any]]:
    """A mixed evaluation: easy/medium/hard problems, some unparsed, truncated and disputed rows."""
    rows = []
    for p in range(n_problems):
        for s in range(n_samples):
            correct = (p + s) % (1 + p % 3) == 0
            kw: dict[str, Any] = {}
            if p % 5 == 0 and s == 1:
                correct = False
                kw.update(parsed=None, reason="no answer", truncated=True, tokens=400)
            if p % 4 == 1 and s == 2:
                kw.update(verifier2_correct=not correct)
            if p % 6 == 2 and s == 0:
                kw.update(process_score=0.2 if correct else 0.9)
            rows.append(sample_row(p, s, correct, **kw))
    return rows


def write_eval(path: Path, rows: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    meta = meta or {"model": "tiny", "task": "arith", "split": "test", "n_samples": 4, "temperature": 1.0}
    (path / "eval.json").write_text(json.dumps({**meta, "metrics": {"pass@1": 0.5}}))
    (path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def review_dir(tmp_path: Path) -> Path:
    return export_slice(write_eval(tmp_path / "eval", population()), n=10, seed=0)


# ---------------------------------------------------------------- reading samples


HEAD = '{"problem_id": "p", "question": "q", "gold": "1", "completion": "c", '


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (HEAD + '"correct": "yes"}', "field 'correct'"),
        (HEAD + '"sample": 1}', "missing field 'correct'"),
        (HEAD + '"correct": true, "gold_steps": [1]}', "field 'gold_steps.0': input should be a valid list, got 1"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "invalid JSON"),
    ],
)
def test_bad_sample_rows_name_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    good = json.dumps(sample_row(0, 0, True))
    (tmp_path / "samples.jsonl").write_text(f"{good}\n\n{line}\n")
    with pytest.raises(ReviewError, match=f"samples.jsonl:3: {message}") as e:
        load_eval(tmp_path)
    assert "\n" not in str(e.value)


def test_duplicate_samples_and_missing_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ReviewError, match="samples.jsonl: not found"):
        load_eval(tmp_path)
    write_eval(tmp_path, [sample_row(0, 0, True), sample_row(0, 0, False)])
    with pytest.raises(ReviewError, match="samples.jsonl:2: duplicate problem_id/sample 'p000:0'"):
        load_eval(tmp_path)


def test_optional_fields_get_defaults(tmp_path: Path) -> None:
    minimal = {"problem_id": "p", "question": "q", "gold": "1", "completion": "c", "correct": False}
    write_eval(tmp_path, [minimal])
    _, rows = load_eval(tmp_path)
    assert rows[0].gold_steps == [] and rows[0].n_steps == 0 and rows[0].parsed is None
    (strata,), basis = strata_of(rows)
    assert strata == {
        "verdict": "unparsed",
        "reward": "none",
        "length": "q1",
        "disagreement": "n/a",
        "difficulty": "medium",
    }
    assert basis == "n_steps"


# ---------------------------------------------------------------- strata and selection


def test_strata_of_each_dimension() -> None:
    rows = [
        sample_row(0, 0, True, tokens=10),
        sample_row(0, 1, True, tokens=20, verifier2_correct=False),
        sample_row(0, 2, False, tokens=30, process_score=0.9),
        sample_row(1, 0, False, tokens=40, parsed=None, truncated=True, verifier2_correct=True, process_score=0.8),
        sample_row(1, 1, False, tokens=50, rewards={"outcome": None}),
        sample_row(2, 0, True, tokens=60),
        sample_row(2, 1, True, tokens=70),
    ]
    strata, basis = strata_of([ReviewSample.model_validate(r) for r in rows])
    assert basis == "pass_rate"
    col = {d: [s[d] for s in strata] for d in strata[0]}
    assert col["verdict"] == [
        "correct",
        "correct",
        "incorrect",
        "unparsed",
        "incorrect",
        "correct",
        "correct",
    ]
    assert col["disagreement"] == ["agree", "verifier2", "process", "both", "agree", "agree", "agree"]
    assert col["length"] == ["q1", "q1", "q2", "truncated", "q3", "q4", "q4"]
    # summed rewards are 1 (wrong) or 2 (right); a row whose rewards are all null has none
    assert col["reward"] == ["high", "high", "low", "low", "none", "high", "high"]
    # pass rates: p000 2/3 (medium, not > 2/3), p001 0 (hard), p002 1 (easy)
    assert col["difficulty"] == ["medium"] * 3 + ["hard"] * 2 + ["easy"] * 2


def test_select_balances_each_dimension_and_prefers_new_problems() -> None:
    rng = np.random.default_rng(0)
    n_rows = 400
    verdict = rng.choice(["correct", "incorrect", "unparsed"], size=n_rows, p=[0.85, 0.13, 0.02])
    disagree = rng.choice(["agree", "process"], size=n_rows, p=[0.95, 0.05])
    strata = [{"verdict": str(v), "disagreement": str(d)} for v, d in zip(verdict, disagree, strict=True)]
    groups = [f"p{i // 4}" for i in range(n_rows)]
    order = select(strata, groups, 60, seed=3)
    assert len(order) == len(set(order)) == 60
    picked = [strata[i] for i in order]
    n_unparsed = int((verdict == "unparsed").sum())
    n_disagree = int((disagree == "process").sum())
    # each value's share is 60/3 = 20 (verdict) and 60/2 = 30 (disagreement), up to what exists
    assert sum(s["verdict"] == "unparsed" for s in picked) == min(n_unparsed, 20)
    assert sum(s["disagreement"] == "process" for s in picked) == min(n_disagree, 30)
    assert 15 <= sum(s["verdict"] == "incorrect" for s in picked) <= 25
    assert len({groups[i] for i in order}) >= 54  # repeats only where a rare stratum needs them
    same = select([{"verdict": "correct"}] * n_rows, groups, 60, seed=3)
    assert len({groups[i] for i in same}) == 60  # with nothing to balance, 60 distinct problems
    # the first 12 picks are themselves spread out: every verdict appears
    assert {strata[i]["verdict"] for i in order[:12]} == {"correct", "incorrect", "unparsed"}


def test_select_is_deterministic_given_a_seed() -> None:
    strata = [{"verdict": "correct" if i % 3 else "incorrect"} for i in range(50)]
    groups = [str(i) for i in range(50)]
    assert select(strata, groups, 10, seed=1) == select(strata, groups, 10, seed=1)
    assert select(strata, groups, 10, seed=1) != select(strata, groups, 10, seed=2)
    assert sorted(select(strata, groups, 99, seed=0)) == list(range(50))


def test_export_writes_a_stable_slice_with_strata(tmp_path: Path) -> None:
    rows = population()
    eval_dir = write_eval(tmp_path / "eval", rows)
    review = export_slice(eval_dir, n=10, seed=0)
    assert review == eval_dir / "review"
    first = (review / "slice.jsonl").read_bytes()
    meta, items = load_slice(review)
    assert meta is not None and len(items) == meta.n == 10 and meta.n_population == len(rows)
    assert [it.index for it in items] == list(range(10))
    assert all(it.item_id == f"{it.problem_id}:{it.sample}" for it in items)
    assert all(set(it.strata) == {"verdict", "reward", "length", "disagreement", "difficulty"} for it in items)
    assert meta.population_correct == sum(r["correct"] for r in rows)
    assert sum(meta.strata_slice["verdict"].values()) == 10
    assert meta.strata_slice["verdict"]["unparsed"] >= 2  # 3 of 48 rows, oversampled
    assert meta.eval.model == "tiny" and meta.eval.metrics == {"pass@1": 0.5}
    assert json.loads((review / "export.json").read_text())["eval"] == {
        "model": "tiny", "task": "arith", "split": "test", "n_samples": 4, "temperature": 1.0,
        "metrics": {"pass@1": 0.5},
    }  # fmt: skip
    # same seed, same bytes; shuffled input rows do not matter; another seed or --out elsewhere
    (eval_dir / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))
    export_slice(eval_dir, n=10, seed=0)
    assert (review / "slice.jsonl").read_bytes() == first
    other = export_slice(eval_dir, n=10, seed=5, out=tmp_path / "other")
    assert (other / "slice.jsonl").read_bytes() != first


def test_bad_eval_and_export_json_name_the_field(tmp_path: Path) -> None:
    eval_dir = write_eval(tmp_path / "eval", population(3, 2), {"model": 7, "task": "arith"})
    with pytest.raises(ReviewError, match=r"eval.json: field 'model': Input should be a valid string"):
        load_eval(eval_dir)
    write_eval(eval_dir, population(3, 2), {"model": "m", "per_problem": "anything", "extra": [1]})
    meta, _ = load_eval(eval_dir)  # only the fields a review records are read
    assert meta.model == "m" and meta.task is None and "extra" not in meta.model_dump()
    review = export_slice(eval_dir, n=4)
    export = json.loads((review / "export.json").read_text())
    (review / "export.json").write_text(json.dumps({**export, "n_population": "many"}))
    with pytest.raises(ReviewError, match=r"export.json: field 'n_population'"):
        load_slice(review)
    (review / "export.json").unlink()  # a slice not written by `rlvr review export`
    meta, items = load_slice(review)
    assert meta is None and len(items) == 4
    assert compute_stats(review, n_resamples=10).eval is None


def test_export_refuses_to_orphan_labels(review_dir: Path) -> None:
    eval_dir = review_dir.parent
    LabelStore(review_dir / "labels.db")
    export_slice(eval_dir, n=10, seed=0)  # same slice: fine
    with pytest.raises(ReviewError, match="holds labels for a different slice"):
        export_slice(eval_dir, n=10, seed=1)
    export_slice(eval_dir, n=10, seed=1, force=True)
    with pytest.raises(ReviewError, match="--items must be >= 1"):
        export_slice(eval_dir, n=0)


# ---------------------------------------------------------------- labels and store


IDS = {"p000:0", "p001:1"}
GOOD = {"item_id": "p000:0", "reviewer": "ann", "answer_correct": True, "reasoning_valid": False}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"item_id": "nope:0"}, "item_id"),
        ({"item_id": None}, "item_id"),
        ({"reviewer": "a b"}, "reviewer"),
        ({"reviewer": ""}, "reviewer"),
        ({"answer_correct": "yes"}, "answer_correct"),
        ({"reasoning_valid": None}, "reasoning_valid"),
        ({"error_category": "typo"}, "error_category"),
        ({"reasoning_valid": True, "error_category": "calculation"}, "error_category"),
        ({"note": 3}, "note"),
    ],
)
def test_parse_label_rejects_malformed_fields(change: dict[str, Any], field: str) -> None:
    with pytest.raises(LabelError) as e:
        parse_label({**GOOD, **change}, IDS)
    assert e.value.field == field and str(e.value).startswith(f"field '{field}'")


def test_parse_label_accepts_csv_strings() -> None:
    row = {**GOOD, "answer_correct": "Yes", "reasoning_valid": "0", "error_category": "", "note": ""}
    assert parse_label(row, IDS, strings=True) == Label("p000:0", "ann", True, False, None, "")
    with pytest.raises(LabelError):
        parse_label(row, IDS)  # JSON wants real booleans


def test_store_commits_versions_and_keeps_history(tmp_path: Path) -> None:
    db = tmp_path / "labels.db"
    store = LabelStore(db)
    first = store.put(Label("p000:0", "ann", True, True), expected_version=0)
    assert first.version == 1 and first.source == "web"
    with pytest.raises(Conflict, match="is at version 1, you edited version 0"):
        store.put(Label("p000:0", "ann", False, False, "other"), expected_version=0)
    store.put(Label("p000:0", "ann", False, False, "other", "hm"), expected_version=1)
    store.put(Label("p000:0", "bob", True, True), expected_version=0)
    again = LabelStore(db)  # a fresh process sees everything
    assert again.get("p000:0", "ann") == StoredLabel(
        "p000:0", "ann", False, False, "other", "hm", 2, "web", again.get("p000:0", "ann").updated_at
    )
    assert [lab.reviewer for lab in again.labels()] == ["ann", "bob"]
    assert again.history_count() == 3
    mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_store_serialises_concurrent_writers(tmp_path: Path) -> None:
    store = LabelStore(tmp_path / "labels.db")
    errors: list[Exception] = []

    def write(reviewer: str) -> None:
        try:
            for k in range(15):
                store.put(Label(f"i{k}", reviewer, k % 2 == 0, True), expected_version=0)
        except Exception as e:  # pragma: no cover - shown by the assertion
            errors.append(e)

    threads = [threading.Thread(target=write, args=(name,)) for name in ("ann", "bob", "cy")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(store.labels()) == 45 and store.history_count() == 45


def test_store_same_label_raced_by_two_writers_one_wins(tmp_path: Path) -> None:
    store = LabelStore(tmp_path / "labels.db")
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def write(k: int) -> None:
        barrier.wait()
        try:
            store.put(Label("i0", "ann", k % 2 == 0, True, None, f"tab {k}"), expected_version=0)
            outcomes.append("ok")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 3 + ["ok"]
    assert store.get("i0", "ann").version == 1 and store.history_count() == 1


def test_import_is_all_or_nothing(tmp_path: Path) -> None:
    store = LabelStore(tmp_path / "labels.db")
    labels = [Label("a", "ann", True, True), Label("b", "ann", False, False, "derivation")]
    assert store.import_labels(labels, "import:x") == {"added": 2, "updated": 0, "unchanged": 0}
    changed = [Label("a", "ann", True, True), Label("c", "ann", True, True), Label("b", "ann", True, True)]
    with pytest.raises(Conflict, match="already labelled 'b' differently"):
        store.import_labels(changed, "import:y")
    assert {lab.item_id for lab in store.labels()} == {"a", "b"}  # 'c' was rolled back
    assert store.import_labels(changed, "import:y", overwrite=True) == {
        "added": 1,
        "updated": 1,
        "unchanged": 1,
    }
    assert store.get("b", "ann").version == 2 and store.get("b", "ann").source == "import:y"


def test_read_label_file_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "bob.jsonl"
    jsonl.write_text(json.dumps({**GOOD, "reviewer": "bob"}) + "\n")
    assert read_label_file(jsonl, IDS) == [Label("p000:0", "bob", True, False)]
    csv_file = tmp_path / "cy.csv"
    csv_file.write_text(
        "item_id,answer_correct,reasoning_valid,error_category,note\n"
        'p000:0,yes,no,calculation,"3+4, not 8"\np001:1,1,1,,\n'
    )
    got = read_label_file(csv_file, IDS, reviewer="cy")
    assert got == [
        Label("p000:0", "cy", True, False, "calculation", "3+4, not 8"),
        Label("p001:1", "cy", True, True),
    ]
    csv_file.write_text("item_id,reviewer,answer_correct,reasoning_valid\np000:0,cy,1,1\np000:0,cy,0,1\n")
    with pytest.raises(ReviewError, match=r"cy.csv:3: item 'p000:0' labelled twice by 'cy' \(first on line 2\)"):
        read_label_file(csv_file, IDS)
    csv_file.write_text("item_id,reviewer,answer_correct,reasoning_valid\np000:0,cy,maybe,1\n")
    with pytest.raises(ReviewError, match="cy.csv:2: field 'answer_correct': must be true or false, got 'maybe'"):
        read_label_file(csv_file, IDS)


# ---------------------------------------------------------------- statistics


def L(item: str, who: str, answer: bool, reasoning: bool = True) -> StoredLabel:  # noqa: N802
    return StoredLabel(item, who, answer, reasoning)


def test_consensus_ties_count_as_not_correct() -> None:
    labels = [L("a", "x", True), L("a", "y", False), L("b", "x", True), L("b", "y", True), L("b", "z", False)]
    assert consensus(labels) == {
        "a": {"answer_correct": False, "reasoning_valid": True},
        "b": {"answer_correct": True, "reasoning_valid": True},
    }


def test_reviewer_agreement_is_pairwise_kappa_on_shared_items() -> None:
    x = [True, True, False, False, True, False]
    y = [True, False, False, False, True, True]
    labels = [L(f"i{k}", "x", v) for k, v in enumerate(x)] + [L(f"i{k}", "y", v) for k, v in enumerate(y)]
    labels.append(L("only-x", "x", True))
    (pair,) = reviewer_agreement(labels)
    # 4 of 6 agree; each rater says yes 3 of 6 times: p_e = 0.5, kappa = (4/6 - 1/2) / (1/2) = 1/3
    assert pair.a == "x" and pair.b == "y" and pair.n == 6
    assert pair.answer_agreement == pytest.approx(4 / 6)
    assert pair.answer_kappa == pytest.approx(1 / 3) == cohen_kappa(x, y)
    assert pair.reasoning_kappa == 1.0


def test_classifier_stats_and_corrected_accuracy_by_hand() -> None:
    s = classifier_stats([True] * 6 + [False] * 4, [True] * 5 + [False] + [True] * 1 + [False] * 3)
    assert (s.tp, s.fp, s.fn, s.tn) == (5, 1, 1, 3)
    assert s.precision == pytest.approx(5 / 6) and s.recall == pytest.approx(5 / 6)
    # population: the verifier passes 70%; people confirm 5/6 of its passes and find 1/4 of its fails right
    out = corrected_accuracy([True] * 6 + [False] * 4, [True] * 5 + [False] + [True] + [False] * 3, 0.7, seed=0)
    assert out.value == pytest.approx(0.7 * 5 / 6 + 0.3 * 1 / 4)
    assert out.ci is not None and out.ci[0] < out.value < out.ci[1]
    assert out == corrected_accuracy([True] * 6 + [False] * 4, [True] * 5 + [False] + [True] + [False] * 3, 0.7)
    assert corrected_accuracy([True, True], [True, False], 0.5).value is None  # no verifier-wrong labels


def test_compute_stats_on_a_labelled_slice(review_dir: Path) -> None:
    _, items = load_slice(review_dir)
    store = LabelStore(review_dir / "labels.db")
    first = items[:6]
    human = [True, False, True, True, False, False]
    for it, h in zip(first, human, strict=True):
        store.put(Label(it.item_id, "ann", h, h, None if h else "calculation"), 0)
    for it, h in zip(first[:4], [True, False, False, True], strict=True):
        store.put(Label(it.item_id, "bob", h, True), 0)
    s = compute_stats(review_dir, seed=0, n_resamples=500)
    assert s.schema_ == "rlvr.review.stats/1" and s.n_items == 10 and s.n_labelled == 6
    assert s.reviewers == {"ann": 6, "bob": 4}
    assert s.agreement.pairs[0].n == 4 and s.agreement.items_multiply_labelled == 4
    # consensus: items 0-3 are 2-reviewer majorities (ties -> False), 4-5 are ann alone
    cons = [True, False, False, True, False, False]
    verdict = [bool(it.correct) for it in first]
    p1 = s.headline.pass_at_1
    assert p1.n == 6 and p1.human.value == pytest.approx(2 / 6)
    assert p1.verifier.value == pytest.approx(np.mean(verdict))
    assert p1.human_minus_verifier.value == pytest.approx(2 / 6 - np.mean(verdict))
    tp = sum(v and c for v, c in zip(verdict, cons, strict=True))
    assert s.verifiers.verifier.tp == tp
    assert s.verifiers.verifier.precision == (tp / sum(verdict) if sum(verdict) else None)
    assert s.errors["calculation"] == 3
    assert set(s.by_stratum) == {"verdict", "reward", "length", "disagreement", "difficulty"}
    summary = s.summary
    assert summary.n_labelled == 6 and summary.n_reviewers == 2
    assert summary.answer_kappa_min == s.agreement.answer_kappa_min
    assert summary.pass_at_1_corrected == p1.corrected.value
    # the file keeps the documented keys and reads back equal
    path, written = write_stats(review_dir, seed=0, n_resamples=500)
    data = json.loads(path.read_text())
    assert data["schema"] == "rlvr.review.stats/1" and data["schema_version"] == 1
    assert data["summary"]["pass@1_corrected"] == p1.corrected.value and set(data["verifiers"]) >= {"verifier2"}
    assert data["headline"]["pass@1"]["n"] == 6 and data["headline"]["strict@1"]["n"] == 6
    assert read_review_stats(path) == written == s


def test_compute_stats_without_labels(review_dir: Path) -> None:
    s = compute_stats(review_dir, n_resamples=100)
    assert s.n_labelled == 0 and s.coverage == 0.0 and s.reviewers == {}
    assert s.headline.pass_at_1.human.value is None and s.headline.pass_at_1.human.ci is None
    assert s.verifiers.verifier.precision is None
    assert s.summary.verifier_in_corrected_ci is None
    path, _ = write_stats(review_dir, n_resamples=100)
    assert set(json.loads(path.read_text())["verifiers"]) == {"verifier"}  # none labelled: no second verifier


# ---------------------------------------------------------------- web API


@pytest.fixture
def client(review_dir: Path):
    from starlette.testclient import TestClient

    from rlvr.review.app import create_app

    with TestClient(create_app(review_dir)) as c:
        yield c


def test_api_item_view_and_label_round_trip(client, review_dir: Path) -> None:
    meta = client.get("/api/meta", params={"reviewer": "ann"}).json()
    assert meta["n_items"] == 10 and meta["n_labelled"] == 0 and meta["resume"] == 0
    assert meta["categories"] == ["derivation", "calculation", "missing_step", "contradiction", "other"]
    page = client.get("/")
    assert page.status_code == 200 and "rlvr review" in page.text
    item = client.get("/api/items/0", params={"reviewer": "ann"}).json()
    assert item["label"] is None and len(item["gold_steps"]) == 2
    view = item["completion_view"]
    assert "".join(seg["text"] for seg in view["segments"]) == item["completion"]
    assert {s["kind"] for s in view["steps"]} <= {"gold", "valid", "invalid"} and view["steps"]
    body = {
        "item_id": item["item_id"],
        "reviewer": "ann",
        "answer_correct": False,
        "reasoning_valid": False,
        "error_category": "calculation",
        "note": "3 + 4 is not 8",
        "version": 0,
    }
    r = client.put("/api/labels", json=body)
    assert r.status_code == 200 and r.json()["label"]["version"] == 1 and r.json()["n_labelled"] == 1
    assert r.json()["resume"] == 1
    again = client.get("/api/items/0", params={"reviewer": "ann"}).json()
    assert again["label"]["note"] == "3 + 4 is not 8"
    assert client.get("/api/items/0", params={"reviewer": "bob"}).json()["label"] is None  # kept apart
    stale = client.put("/api/labels", json=body)
    assert stale.status_code == 409 and "version 1" in stale.json()["error"]
    assert stale.json()["current"]["note"] == "3 + 4 is not 8"


@pytest.mark.parametrize(
    ("kwargs", "status", "words"),
    [
        ({"json": {**GOOD, "item_id": "ghost:9", "version": 0}}, 404, "unknown item 'ghost:9'"),
        ({"json": {**GOOD, "answer_correct": "yes", "version": 0}}, 400, "field 'answer_correct'"),
        ({"json": {**GOOD, "version": -1}}, 400, "field 'version'"),
        ({"json": [1, 2]}, 400, "must be an object"),
        ({"content": b"{oops", "headers": {"content-type": "application/json"}}, 400, "not valid JSON"),
        ({"content": b"item_id=x", "headers": {"content-type": "text/plain"}}, 415, "application/json"),
    ],
)
def test_api_rejects_bad_labels_with_json_errors(client, kwargs: dict, status: int, words: str) -> None:
    first_id = client.get("/api/items/0").json()["item_id"]
    if isinstance(kwargs.get("json"), dict) and kwargs["json"]["item_id"] == "p000:0":
        kwargs = {"json": {**kwargs["json"], "item_id": first_id}}
    r = client.put("/api/labels", **kwargs)
    assert r.status_code == status and words in r.json()["error"]
    assert client.get("/api/labels").json()["labels"] == []


def test_api_unknown_routes_and_hosts(client) -> None:
    r = client.get("/api/items/99")
    assert r.status_code == 404 and "no item at index 99" in r.json()["error"]
    r = client.get("/api/nothing")
    assert r.status_code == 404 and r.json()["error"].startswith("GET /api/nothing")
    r = client.get("/api/health", headers={"host": "evil.example:80"})
    assert r.status_code == 400 and "'evil.example:80' not allowed" in r.json()["error"]
    assert client.get("/api/health", headers={"host": "localhost:8765"}).status_code == 200
    assert client.delete("/api/labels").status_code == 405


# ---------------------------------------------------------------- CLI


def run_cli(*args: str):
    return CliRunner().invoke(review_app, [str(a) for a in args])


def test_cli_export_import_stats(tmp_path: Path) -> None:
    eval_dir = write_eval(tmp_path / "eval", population())
    r = run_cli("export", eval_dir, "--items", "8", "--seed", "1")
    assert r.exit_code == 0, r.output
    assert "wrote 8 of 48 completions" in r.output and "verdict" in r.output
    _, items = load_slice(eval_dir / "review")
    labels = tmp_path / "bob.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"item_id": it.item_id, "answer_correct": True, "reasoning_valid": True}) + "\n"
            for it in items[:3]
        )
    )
    r = run_cli("import", eval_dir, labels, "--reviewer", "bob")
    assert r.exit_code == 0 and "3 added" in r.output, r.output
    r = run_cli("stats", eval_dir, "--n-resamples", "200")
    assert r.exit_code == 0 and "3 of 8 items labelled by 1 reviewer" in r.output, r.output
    stats = json.loads((eval_dir / "review" / "stats.json").read_text())
    assert stats["n_labelled"] == 3 and stats["headline"]["pass@1"]["human"]["value"] == 1.0


def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    eval_dir = write_eval(tmp_path / "eval", population(3, 2))
    run_cli("export", eval_dir, "--items", "4")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"item_id": "p000:0", "reviewer": "bob", "answer_correct": true, "reasoning_valid": true}\n'
        '{"item_id": "zzz:1", "reviewer": "bob", "answer_correct": true, "reasoning_valid": true}\n'
    )
    cases = [
        (("export", tmp_path / "nowhere"), "samples.jsonl: not found"),
        (("import", eval_dir, bad), "bad.jsonl:2: field 'item_id': unknown item 'zzz:1'"),
        (("stats", tmp_path), "no slice.jsonl"),
        (("serve", tmp_path), "no slice.jsonl"),
    ]
    for args, words in cases:
        r = run_cli(*args)
        assert r.exit_code == 2, r.output
        assert words in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert LabelStore(eval_dir / "review" / "labels.db").labels() == []  # the good first row was not written


def test_a_label_store_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    from rlvr.review.items import ReviewError
    from rlvr.review.store import LabelStore

    (tmp_path / "labels.db").write_text("not sqlite at all")
    with pytest.raises(ReviewError, match=r"labels.db: not a review label store \(file is not a database\)"):
        LabelStore(tmp_path / "labels.db")
