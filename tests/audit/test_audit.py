"""The readiness audit on small synthetic run folders written by hand, so each expected verdict is known.

A run group is a GRPO run (`grpo/`), its base (`base/model`), and evaluations of either model; each
test changes one thing (a format-only reward, a length explosion, a copied test set, a leaked
holdout hash, ...) and checks the verdict and the evidence of the check that should notice it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from rlvr.audit import AuditInputError, audit_command, audit_verifier, build_context, probes_for, run_audit
from rlvr.audit.checks import CHECKS, check_verifier
from rlvr.audit.contamination import build_index, contamination_report, masked, words
from rlvr.audit.context import GreedyChange
from rlvr.audit.drift import window_means
from rlvr.audit.runs import model_key
from rlvr.evaluate.compare import paired_tests
from rlvr.runs import clean
from rlvr.runs.review import Agreement, ClassifierStats, Headline, ReviewStats, ReviewSummary, Verifiers
from rlvr.tasks import load_task, problems_hash

N_TRAIN = 200


# ------------------------------------------------------------------ builders
def _write(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".yaml":
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in obj))
    else:
        path.write_text(json.dumps(obj, indent=1))


def _metrics(steps: int = 20, **curves) -> list[dict[str, Any]]:
    """Per-step rows; each curve is a function of the step (1-based) or a constant."""
    base = {
        "train/completion_len/mean": 30.0,
        "train/completion_len/correct": 28.0,
        "train/completion_len/incorrect": 32.0,
        "train/entropy": 0.5,
        "train/truncated_frac": 0.0,
        "train/zero_std_frac": 0.4,
        "train/accuracy": lambda s: 0.3 + 0.01 * s,
        "reward/total/mean": lambda s: 0.3 + 0.01 * s,
        "reward/outcome/mean": lambda s: 0.3 + 0.01 * s,
    }
    base.update(curves)
    return [
        {"step": s, **{k: (v(s) if callable(v) else v) for k, v in base.items() if v is not None}}
        for s in range(1, steps + 1)
    ]


def _samples(n: int = 40, rewards=None) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        ok = i % 2 == 0
        text = " 3+4=<<3+4=7>>7\n#### 7" if ok else " 3+5=<<3+5=8>>8\n8*2=<<8*2=16>>16\n#### 16"
        r = rewards(i, ok) if rewards else {"outcome": 1.0 if ok else 0.0}
        rows.append({"step": 1 + i // 8, "problem_id": f"arith-easy-train-0-{i}", "group": i // 4, "completion": text,
                     "tokens": 12 if ok else 20, "truncated": False, "rewards": r, "total": sum(r.values()),
                     "advantage": 0.0, "correct": ok})  # fmt: skip
    return rows


def train_run(root: Path, name: str = "grpo", *, rewards=None, metrics=None, samples=None, eval_every: int = 0,
              data: dict | None = None) -> Path:  # fmt: skip
    """A GRPO run folder trained from `root/base/model` on 200 arith problems."""
    run = root / name
    probs = load_task("arith", "train", n=N_TRAIN, seed=0)
    rewards = rewards or [{"name": "outcome", "weight": 1.0, "params": {}}]
    cfg = {"model": str(root / "base"), "task": "arith", "preset": "easy", "n_train": N_TRAIN, "seed": 0,
           "rewards": rewards, "eval_every": eval_every, "eval_n": 20, "steps": 20, "out": str(run)}  # fmt: skip
    _write(run / "config.yaml", cfg)
    hashes = data or {"train": {"task": "arith", "n": N_TRAIN, "hash": problems_hash(probs)}}
    _write(run / "manifest.json", {"command": "train", "data": hashes})
    _write(run / "metrics.jsonl", metrics if metrics is not None else _metrics())
    _write(run / "samples" / "train.jsonl", samples if samples is not None else _samples())
    (root / "base" / "model").mkdir(parents=True, exist_ok=True)
    return run


def _metric(value: float, k: int, tokens: float) -> dict[str, Any]:
    return {"value": value, "ci": [value - 0.05, value + 0.05], "k": k, "n": 4, "tokens_per_problem": tokens}


def eval_run(root: Path, name: str, model: Path, *, split: str = "test", acc: float = 0.5, tok: float = 30.0,
             questions: list[tuple[str, str]] | None = None, metrics: dict | None = None, n: int = 20,
             task: str = "arith") -> Path:  # fmt: skip
    """An evaluation folder of `model` on `n` arith problems of `split` (or the given questions)."""
    path = root / "evals" / name
    probs = load_task("arith", split, n=n, seed=0, allow_holdout=True)  # type: ignore[arg-type]
    items = questions or [(p.id, p.question) for p in probs]
    golds = {p.id: p.answer for p in probs}
    c = round(acc * 4)
    per_problem = [{"id": i, "n_steps": 1, "correct": c, "n": 4, "tokens": tok, "greedy": c >= 2} for i, _ in items]
    default = {"pass@1": _metric(acc, 1, tok), "pass@4": _metric(min(1, acc + 0.2), 4, 4 * tok),
               "maj@4": _metric(acc, 4, 4 * tok), "greedy": _metric(acc, 1, tok)}  # fmt: skip
    data_hash = problems_hash(probs) if questions is None else "custom"
    result = {"model": str(model / "model"), "task": task, "preset": "easy", "split": split, "data_hash": data_hash,
              "n_problems": len(items), "n_samples": 4, "temperature": 1.0, "top_p": 1.0, "max_new_tokens": 64,
              "metrics": metrics if metrics is not None else default, "per_problem": per_problem}  # fmt: skip
    _write(path / "eval.json", result)
    _write(path / "config.yaml", {"model": str(model), "task": task, "preset": "easy", "split": split, "seed": 0,
                                  "n_problems": n, "n_samples": 4, "out": str(path)})  # fmt: skip
    _write(path / "manifest.json", {"command": "eval", "data": {split: {"task": "arith", "n": n, "hash": data_hash}}})
    rows = [{"problem_id": i, "question": q, "gold": golds.get(i, "7"), "sample": 0, "completion": "#### 7",
             "correct": False, "tokens": int(tok)} for i, q in items]  # fmt: skip
    _write(path / "samples.jsonl", rows)
    return path


def group(tmp_path: Path, **train_kw) -> tuple[Path, list[Path]]:
    """The usual group: a run plus base and trained evaluations on test and holdout."""
    run = train_run(tmp_path, **train_kw)
    evals = [
        eval_run(tmp_path, "base-test", tmp_path / "base", acc=0.25),
        eval_run(tmp_path, "grpo-test", run, acc=0.5),
        eval_run(tmp_path, "base-holdout", tmp_path / "base", split="holdout", acc=0.25),
        eval_run(tmp_path, "grpo-holdout", run, split="holdout", acc=0.25),
    ]
    return run, evals


def check(run: Path, evals: list[Path], name: str, ablations=(), **kw):
    ctx = build_context(run, evals, ablations, second_verifier=False, **kw)
    return CHECKS[name](ctx)


# ------------------------------------------------------------------ run folders and roles
def test_roles_follow_a_copied_or_moved_group_of_folders(tmp_path: Path) -> None:
    """Evaluations name their model by absolute path; the manifests also record it relative to each
    folder (`paths.model.from_run`), so a copied or moved demo folder still knows which is which."""
    import shutil

    from rlvr.runs.folder import _model_paths

    run, evals = group(tmp_path / "a")
    for folder in [run, *evals]:
        cfg = yaml.safe_load((folder / "config.yaml").read_text())
        manifest = json.loads((folder / "manifest.json").read_text())
        _write(
            folder / "manifest.json", {**manifest, "paths": {"model": _model_paths(folder, cfg["model"]).model_dump()}}
        )
    want = {"base-test": "base", "grpo-test": "trained", "base-holdout": "base", "grpo-holdout": "trained"}
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    shutil.move(tmp_path / "a", tmp_path / "moved")
    for where in ("copy", "moved"):
        moved = [tmp_path / where / e.relative_to(tmp_path / "a") for e in evals]
        ctx = build_context(tmp_path / where / "grpo", moved, second_verifier=False)
        assert {e.name: e.role for e in ctx.evals} == want, where


def test_model_key_and_roles(tmp_path: Path) -> None:
    assert model_key("/r/grpo/checkpoints/step-000010") == Path("/r/grpo")
    assert model_key("/r/base/model") == Path("/r/base")
    run, evals = group(tmp_path)
    ctx = build_context(run, evals, second_verifier=False)
    assert {e.name: e.role for e in ctx.evals} == {
        "base-test": "base", "grpo-test": "trained", "base-holdout": "base", "grpo-holdout": "trained",
    }  # fmt: skip
    assert [(b.name, t.name) for b, t in ctx.pairs] == [("base-test", "grpo-test"), ("base-holdout", "grpo-holdout")]


def test_evaluations_are_discovered_next_to_the_run(tmp_path: Path) -> None:
    run, _ = group(tmp_path)
    ctx = build_context(run, second_verifier=False)
    assert sorted(e.name for e in ctx.evals) == ["base-holdout", "base-test", "grpo-holdout", "grpo-test"]


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(AuditInputError, match="no such run folder"):
        build_context(tmp_path / "nope")
    run = train_run(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(AuditInputError, match="no eval.json"):
        build_context(run, [tmp_path / "empty"])
    _write(tmp_path / "sft" / "config.yaml", {"model": "tiny"})
    _write(tmp_path / "sft" / "manifest.json", {"command": "sft"})
    with pytest.raises(AuditInputError, match="not a GRPO training run"):
        build_context(tmp_path / "sft")


# ------------------------------------------------------------------ 1. matched compute
def test_matched_compute_pass_with_paired_change(tmp_path: Path) -> None:
    run, evals = group(tmp_path)
    r = check(run, evals, "matched_compute")
    assert r.status == "pass", r.summary
    pair = r.evidence.pairs[0]
    assert pair.split == "test" and pair.multi_sample == ["pass@4", "maj@4"]
    assert pair.token_ratio == pytest.approx(1.0)
    assert pair.change.gain == pytest.approx(0.25)  # 1 of 4 -> 2 of 4 correct on every problem
    assert "pass@1 0.250 -> 0.500" in r.summary


def test_paired_change_equals_paired_tests(tmp_path: Path) -> None:
    """The audit's paired change is `evaluate.compare.paired_tests` on the per-problem arrays."""
    run = train_run(tmp_path)
    evals = [eval_run(tmp_path, "base-test", tmp_path / "base"), eval_run(tmp_path, "grpo-test", run)]
    rng = np.random.default_rng(0)
    arrays = []
    for path in evals:
        e = json.loads((path / "eval.json").read_text())
        correct, greedy = rng.integers(0, 5, len(e["per_problem"])), rng.random(len(e["per_problem"])) < 0.5
        for row, c, g in zip(e["per_problem"], correct, greedy, strict=True):
            row.update(correct=int(c), greedy=bool(g))
        (path / "eval.json").write_text(json.dumps(e))
        arrays.append((correct / 4, greedy))
    change = build_context(run, evals, second_verifier=False).changes["test"]
    p1, g = paired_tests((arrays[0][0], arrays[1][0]), (arrays[0][1], arrays[1][1]), seed=0)
    assert (change.base, change.trained, change.gain, change.ci) == (p1.value_a, p1.value_b, p1.diff, tuple(p1.ci))
    assert change.greedy == GreedyChange(g.value_a, g.value_b, g.pvalue)


def test_matched_compute_warns_on_unmatched_budget_and_fails_without_multi_sample(tmp_path: Path) -> None:
    run = train_run(tmp_path)
    base = eval_run(tmp_path, "base-test", tmp_path / "base", tok=30)
    long = eval_run(tmp_path, "grpo-test", run, tok=60)
    r = check(run, [base, long], "matched_compute")
    assert r.status == "warn" and r.evidence.pairs[0].token_ratio == pytest.approx(2.0)
    only_p1 = eval_run(tmp_path, "grpo-test", run, metrics={"pass@1": _metric(0.5, 1, 30)})
    r = check(run, [base, only_p1], "matched_compute")
    assert r.status == "fail" and "no pass@k or maj@k" in r.summary


def test_matched_compute_warns_when_more_than_5_percent_were_truncated(tmp_path: Path) -> None:
    run = train_run(tmp_path)
    base = eval_run(tmp_path, "base-test", tmp_path / "base")
    trained = eval_run(tmp_path, "grpo-test", run)
    assert check(run, [base, trained], "matched_compute").status == "pass"
    result = json.loads((trained / "eval.json").read_text())
    (trained / "eval.json").write_text(json.dumps({**result, "truncated_frac": 0.02, "greedy_truncated_frac": 0.3}))
    r = check(run, [base, trained], "matched_compute")
    assert r.status == "warn" and "completions cut at max_new_tokens: trained 30%" in r.summary
    assert r.evidence.pairs[0].truncated_frac == {"base": 0.0, "trained": 0.3}


def test_matched_compute_compares_the_whole_sampling_record(tmp_path: Path) -> None:
    """A system prompt or stop strings that differ between base and trained evaluations make the
    settings differ (eval.json's `sampling` record), not only the fields older files state."""
    run = train_run(tmp_path)
    base = eval_run(tmp_path, "base-test", tmp_path / "base")
    trained = eval_run(tmp_path, "grpo-test", run)
    record = {"max_new_tokens": 64, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "stop": [], "prompt_format": "plain",
              "system_prompt": None, "max_prompt_tokens": None}  # fmt: skip
    for path, sampling in ((base, record), (trained, {**record, "system_prompt": "Think step by step."})):
        result = json.loads((path / "eval.json").read_text())
        (path / "eval.json").write_text(json.dumps({**result, "sampling": sampling}))
    r = check(run, [base, trained], "matched_compute")
    assert r.status == "warn" and "system_prompt: None vs Think step by step." in r.summary
    assert r.evidence.pairs[0].settings_differ == ["system_prompt: None vs Think step by step."]


def test_matched_compute_fails_without_a_base_evaluation(tmp_path: Path) -> None:
    run = train_run(tmp_path)
    r = check(run, [eval_run(tmp_path, "grpo-test", run)], "matched_compute")
    assert r.status == "fail" and "no evaluation of the base model" in r.summary


# ------------------------------------------------------------------ 2. verifier audit
def test_probes_cover_the_three_kinds() -> None:
    probes = {p.form: p for p in probes_for("1000")}
    assert probes["#### with commas"].completion == "#### 1,000" and probes["#### with commas"].should_accept
    assert probes["number words"].completion == "The answer is one thousand."
    hedge = probes["hedge #### g or w"]
    assert hedge.completion == "#### 1000 or 1001" and not hedge.should_accept
    assert "fraction" in {p.form for p in probes_for("2.5")} and probes_for("not a number") == []


def test_verifier_audit_numbers() -> None:
    res = audit_verifier(["18", "1000", "2.5", "7/3", "-4", "0"], use_second=False)
    assert (res.recall, res.specificity, res.rejection) == (1.0, 1.0, 1.0)
    assert res.n_golds == 6 and res.failures == []
    # a verifier that accepts any completion containing the gold string, on the 34 probes of "18":
    # it misses 36/2, \frac{72}{4} and "eighteen" (10/13), accepts 180, -18 and the gold as an
    # intermediate (3/6), and accepts every hedge or conflict that mentions 18 (8/15 rejected)
    naive = audit_verifier(["18"], verify=lambda c, g: g in c, use_second=False)
    assert naive.counts == {"equivalent": 13, "wrong": 6, "adversarial": 15}
    assert naive.recall == pytest.approx(10 / 13)
    assert naive.specificity == pytest.approx(3 / 6)
    assert naive.rejection == pytest.approx(8 / 15)
    forms = {f.form for f in naive.failures}
    assert {"fraction", "answer is 10g", "hedge #### g or w"} <= forms


def test_verifier_check_fails_a_naive_verifier(tmp_path: Path, monkeypatch) -> None:
    import rlvr.audit.checks.measurement as checks

    run, evals = group(tmp_path)
    ctx = build_context(run, evals, second_verifier=False)
    assert check_verifier(ctx).status == "pass"
    real = checks.audit_verifier
    naive = {"verify": lambda c, g: g in c}  # in place of the run's task verifier
    monkeypatch.setattr(checks, "audit_verifier", lambda golds, **kw: real(golds, **{**kw, **naive}))
    r = check_verifier(ctx)
    assert r.status == "fail" and r.examples and r.evidence.rejection < 0.85


def test_second_verifier_disagreement_is_reported() -> None:
    pytest.importorskip("math_verify")
    res = audit_verifier(["18", "4"], max_second=100)
    sec = res.second
    assert sec.name == "math_verify" and sec.n == len(probes_for("18")) + len(probes_for("4"))
    assert 0 < sec.disagreement < 0.5
    # on every probe where they disagree, the probe label says who is right
    assert sec.rlvr_right + sec.second_right == round(sec.disagreement * sec.n)
    assert all(ex.right in ("rlvr", "math_verify") for ex in sec.examples)


# ------------------------------------------------------------------ 3. reward separation
def test_format_only_run_fails_reward_separation(tmp_path: Path) -> None:
    metrics = _metrics(**{"reward/outcome/mean": None, "reward/format_gsm8k/mean": lambda s: 0.2 + 0.04 * s})
    run, evals = group(tmp_path, rewards=[{"name": "format_gsm8k", "weight": 1.0}], metrics=metrics)
    r = check(run, evals, "reward_separation")
    assert r.status == "fail" and "no correctness term" in r.summary
    assert r.evidence.shares.kinds["format"].share == pytest.approx(1.0)


def test_mixed_reward_shares(tmp_path: Path) -> None:
    # outcome (weight 1) pays 0.1 per step; format (weight 1) pays 0.3: correctness share = 0.25
    metrics = _metrics(**{"reward/outcome/mean": 0.1, "reward/format_gsm8k/mean": 0.3})
    rewards = [{"name": "outcome", "weight": 1.0}, {"name": "format_gsm8k", "weight": 1.0}]
    run, evals = group(tmp_path, rewards=rewards, metrics=metrics)
    r = check(run, evals, "reward_separation")
    assert r.evidence.shares.kinds["correctness"].share == pytest.approx(0.25)
    assert r.status == "warn"
    # format's weight 0.1 makes its contribution 0.03 per step: share 0.1/0.13
    run2 = train_run(tmp_path, "grpo2", rewards=[rewards[0], {"name": "format_gsm8k", "weight": 0.1}], metrics=metrics)
    r = check(run2, [], "reward_separation")
    assert r.evidence.shares.kinds["correctness"].share == pytest.approx(0.1 / 0.13)
    assert r.status == "pass"


def test_format_only_ablation_matching_the_run_warns(tmp_path: Path) -> None:
    run, evals = group(tmp_path)
    fmt_metrics = _metrics(**{"reward/outcome/mean": None, "reward/format_gsm8k/mean": 0.9})
    abl = train_run(tmp_path, "format-only", rewards=[{"name": "format_gsm8k", "weight": 1.0}], metrics=fmt_metrics)
    abl_eval = eval_run(tmp_path, "format-only-test", abl, acc=0.5)
    r = check(run, [*evals, abl_eval], "reward_separation")  # the sibling is found without --ablation
    assert [a["run"] for a in r.evidence.ablations] == ["grpo", "format-only"]
    assert r.evidence.ablations[1]["kind"] == "format-only" and r.evidence.ablations[1]["test_pass@1"] == 0.5
    assert r.status == "warn" and "format-only ablation" in r.summary


# ------------------------------------------------------------------ 4. contamination
def test_contamination_measures_by_hand() -> None:
    assert words("Ann paid $1,000.50, then 3 more.") == ["ann", "paid", "1000.50", "then", "3", "more"]
    assert masked("Tom has 12 pens") == "tom has # pens"
    train = [("t0", "a b c d e f g h i j"), ("t1", "the cat sat on 3 mats today")]
    index = build_index(train)
    items = [("e0", "A b c d e f g h i j."), ("e1", "a b c d e f g h x y"), ("e2", "the cat sat on 5 mats today"),
             ("e3", "nothing in common here")]  # fmt: skip
    rep = contamination_report(index, items)
    assert rep.overlaps == [1.0, 0.3333, 0.0, 0.0]  # e1 keeps 1 of its 3 8-grams (rounded to 4 places)
    assert rep.exact_items == 1 and rep.ngram_items == 1 and rep.template_share == 0.5
    assert rep.examples[0].train_id == "t0" and rep.examples[0].exact_duplicate


def test_arith_test_set_is_clean_by_construction(tmp_path: Path) -> None:
    run, evals = group(tmp_path)
    r = check(run, evals, "contamination")
    assert r.status == "pass", r.summary
    test = next(s for s in r.evidence.sets if s.set.startswith("test"))
    assert test.report.exact_items == 0 and test.construction.ok
    hold = next(s for s in r.evidence.sets if s.set.startswith("holdout"))
    assert hold.construction.ok and hold.report.template_share == 0.0
    assert r.evidence.train_hash_verified and "templated" in r.evidence.explanation


def test_copied_training_questions_fail_contamination(tmp_path: Path) -> None:
    run = train_run(tmp_path)
    copied = [(p.id.replace("train", "test"), p.question) for p in load_task("arith", "train", n=20)]
    leaky = eval_run(tmp_path, "grpo-test", run, questions=copied)
    r = check(run, [leaky], "contamination")
    assert r.status == "fail" and "20 of 20 items appear verbatim in training" in r.summary
    assert r.examples[0].exact_duplicate and r.examples[0].train_question == r.examples[0].question


def test_paraphrased_natural_language_items_fail_on_ngrams(tmp_path: Path) -> None:
    run = train_run(tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**cfg, "task": "gsm8k", "n_train": 300}))
    near = [
        (f"x{i}", p.question.rsplit(" ", 1)[0] + " exactly?") for i, p in enumerate(load_task("gsm8k", "train", n=10))
    ]
    r = check(run, [eval_run(tmp_path, "gsm-test", run, questions=near, task="gsm8k")], "contamination")
    entry = r.evidence.sets[0]
    assert entry.report.exact_items == 0 and entry.report.ngram_items == 10
    assert r.status == "fail" and not r.evidence.train_hash_verified  # the manifest hash is arith's


# ------------------------------------------------------------------ 5. private holdout
def test_holdout_pass_and_side_by_side(tmp_path: Path) -> None:
    run, evals = group(tmp_path)
    r = check(run, evals, "holdout")
    assert r.status == "pass", r.summary
    assert r.evidence.guard.ok and r.evidence.leaked_ids == []
    assert r.evidence.side_by_side["holdout"].gain == pytest.approx(0.0)
    assert r.evidence.side_by_side["test"].gain == pytest.approx(0.25)


def test_holdout_hash_in_training_manifest_fails(tmp_path: Path) -> None:
    hold_hash = problems_hash(load_task("arith", "holdout", n=20, allow_holdout=True))
    run, evals = group(tmp_path, data={"train": {"task": "arith", "n": 20, "hash": hold_hash}})
    r = check(run, evals, "holdout")
    assert r.status == "fail" and "equals the holdout's" in r.summary


def test_holdout_problem_in_training_samples_fails(tmp_path: Path) -> None:
    samples = _samples()
    samples[3]["problem_id"] = "arith-easy-holdout-0-5"
    run, evals = group(tmp_path, samples=samples)
    r = check(run, evals, "holdout")
    assert r.status == "fail" and "arith-easy-holdout-0-5" in r.evidence.leaked_ids


def test_no_holdout_evaluation_warns(tmp_path: Path) -> None:
    run = train_run(tmp_path)
    r = check(run, [eval_run(tmp_path, "grpo-test", run)], "holdout")
    assert r.status == "warn" and "no holdout evaluation" in r.summary


# ------------------------------------------------------------------ 6. training drift
def test_window_means() -> None:
    assert window_means([float(x) for x in range(1, 11)]) == (1.5, 9.5, 10)


def test_steady_run_has_no_drift_alarm(tmp_path: Path) -> None:
    dev = {"eval/dev/pass@1": lambda s: 0.3 + 0.01 * s if s % 5 == 0 else None}
    run, evals = group(tmp_path, metrics=_metrics(**dev))
    r = check(run, evals, "drift")
    assert r.status == "pass", r.summary
    assert r.evidence.hacking.heldout.source == "eval/dev/pass@1"


def test_rising_reward_with_flat_dev_accuracy_is_a_hacking_alarm(tmp_path: Path) -> None:
    dev = {"eval/dev/pass@1": lambda s: 0.40 if s % 5 == 0 else None, "reward/total/mean": lambda s: 0.1 + 0.04 * s}
    run, evals = group(tmp_path, metrics=_metrics(**dev))
    r = check(run, evals, "drift")
    alarm = next(a for a in r.evidence.alarms if a.alarm == "reward hacking")
    assert alarm.level == "fail" and r.status == "fail"
    assert r.evidence.hacking.reward_rise == pytest.approx(0.04 * 16)  # steps 1-4 vs 17-20


def test_hacking_alarm_falls_back_to_the_evaluations(tmp_path: Path) -> None:
    run = train_run(tmp_path, metrics=_metrics(**{"reward/total/mean": lambda s: 0.1 + 0.04 * s}))
    evals = [eval_run(tmp_path, "base-test", tmp_path / "base", acc=0.5), eval_run(tmp_path, "grpo-test", run, acc=0.5)]
    r = check(run, evals, "drift")
    assert r.evidence.hacking.heldout.source.startswith("pass@1 base-test -> grpo-test")
    assert any(a.alarm == "reward hacking" for a in r.evidence.alarms)


def test_length_explosion_and_entropy_collapse_alarms(tmp_path: Path) -> None:
    curves = {
        "train/completion_len/mean": lambda s: 30.0 * (1 + 0.2 * s),  # 30*1.5=45 early -> 30*4.7=141 late
        "train/entropy": lambda s: 0.5 / s**2,
        "train/truncated_frac": lambda s: 0.02 * s,
    }
    run, evals = group(tmp_path, metrics=_metrics(**curves))
    r = check(run, evals, "drift")
    levels = {a.alarm: a.level for a in r.evidence.alarms}
    assert levels["length explosion"] == "fail" and levels["entropy collapse"] == "fail"
    assert levels["truncation"] == "fail"  # 0.34-0.40 late
    assert r.evidence.length["mean"].ratio == pytest.approx(141 / 45)


def test_short_run_warns(tmp_path: Path) -> None:
    run, evals = group(tmp_path, metrics=_metrics(steps=5))
    r = check(run, evals, "drift")
    assert r.status == "warn" and "too short" in r.summary


def test_rewards_paying_regardless_of_correctness_are_flagged(tmp_path: Path) -> None:
    def rewards(i: int, ok: bool) -> dict[str, float]:
        return {"outcome": float(ok), "format_gsm8k": 1.0, "length": 20.0 if not ok else 12.0}

    run, evals = group(tmp_path, samples=_samples(rewards=rewards))
    r = check(run, evals, "drift")
    flags = {f.reward: f.flags for f in r.evidence.reward_flags}
    assert flags["outcome"] == [] and flags["format_gsm8k"] == ["constant"]
    assert flags["length"][0].startswith("pays incorrect")
    assert r.status == "warn"
    s = r.evidence.structure
    assert (s.correct.steps, s.incorrect.steps) == (1.0, 2.0)
    assert (s.correct.lines, s.incorrect.lines) == (2.0, 3.0)


# ------------------------------------------------------------------ 7. human judgment
def _stats(**summary) -> dict[str, Any]:
    base = {"n_labelled": 60, "n_reviewers": 2, "answer_kappa_min": 0.8, "verifier_precision": 0.97,
            "verifier_recall": 0.98, "pass@1_verifier": 0.5, "pass@1_corrected": 0.49,
            "pass@1_corrected_ci": [0.44, 0.55], "verifier_pass@1_in_corrected_ci": True}  # fmt: skip
    stats = ReviewStats(
        review_dir="review", seed=0, n_items=60, n_labelled=60, coverage=1.0,
        summary=ReviewSummary.model_validate({**base, **summary}), agreement=Agreement(),
        verifiers=Verifiers(verifier=ClassifierStats(n=60, tp=30, fp=1, fn=1, tn=28)),
        headline=Headline.model_validate({"pass@1": {"n": 60}, "strict@1": {"n": 60}}),
    )  # fmt: skip
    return stats.to_json()


def test_human_check(tmp_path: Path) -> None:
    run, evals = group(tmp_path)
    r = check(run, evals, "human")
    assert r.status == "warn" and f"rlvr review export {evals[1]}" in r.summary
    _write(evals[1] / "review" / "stats.json", _stats())
    assert check(run, evals, "human").status == "pass"
    _write(evals[1] / "review" / "stats.json", _stats(**{"verifier_pass@1_in_corrected_ci": False}))
    r = check(run, evals, "human")
    assert r.status == "fail" and "outside the human-corrected CI" in r.summary
    _write(evals[1] / "review" / "stats.json", _stats(n_labelled=10, answer_kappa_min=None))
    r = check(run, evals, "human")
    assert r.status == "warn" and "one reviewer" in r.summary and "only 10 labelled" in r.summary
    (evals[1] / "review" / "stats.json").write_text("{not json")
    assert check(run, evals, "human").status == "warn"
    _write(evals[1] / "review" / "stats.json", {"schema": "rlvr.review.stats/1", "summary": {}})
    r = check(run, evals, "human")  # a stats file that is not one: the field, in one line
    assert r.status == "warn" and r.summary.startswith("unreadable: ") and "field 'review_dir': missing" in r.summary


# ------------------------------------------------------------------ the whole audit
def test_run_audit_writes_three_files_and_strict_exit(tmp_path: Path) -> None:
    metrics = _metrics(**{"reward/outcome/mean": None, "reward/format_gsm8k/mean": 0.5})
    run, evals = group(tmp_path, rewards=[{"name": "format_gsm8k", "weight": 1.0}], metrics=metrics)
    judged = {"model": "m", "n_judged": 3, "categories": {"calculation_error": 2, "other": 1}}
    (evals[0] / "judge.json").write_text(json.dumps(judged))  # what `rlvr judge` leaves in an evaluation
    res = run_audit(run, evals, strict=True, second_verifier=False, plots=False)
    assert res.status == "fail" and res.exit_code == 1
    data = json.loads((run / "audit" / "audit.json").read_text())
    assert [c["name"] for c in data["checks"]] == list(CHECKS) and data["status"] == "fail"
    assert (
        data["schema_version"] == 1
        and data["evaluations"][0]["judge"] == "calculation_error 2, other 1 (3 judged by m)"
    )
    md = (run / "audit" / "report.md").read_text()
    assert "| 3 | Reward separation | FAIL |" in md and "calculation_error 2, other 1 (3 judged by m)" in md
    html = (run / "audit" / "report.html").read_text()
    assert "<!DOCTYPE html>" in html and "calculation_error 2, other 1" in html
    assert run_audit(run, evals, out_dir=tmp_path / "o", second_verifier=False, plots=False).exit_code == 0


def test_audit_json_holds_each_checks_declared_record(tmp_path: Path) -> None:
    """audit.json is `AuditResult.to_json`: the checks in their declared order under their declared
    titles, each evidence record as written (NaN as null, contamination reports flat beside their set);
    a misspelt evidence field fails where it is written."""
    run, evals = group(tmp_path, metrics=_metrics(steps=3))  # too short: drift trends are NaN or absent
    res = run_audit(run, evals, second_verifier=False, plots=False)
    raw = json.loads((run / "audit" / "audit.json").read_text())
    assert json.loads(json.dumps(clean({"schema_version": 1, **res.to_json()}))) == raw
    assert [(c["name"], c["title"], c["about"]) for c in raw["checks"]] == [
        (c.name, c.title, c.about) for c in CHECKS.values()
    ]
    assert {c.name: type(c.evidence) for c in res.checks} == {n: c.evidence for n, c in CHECKS.items()}
    assert "n_items" in raw["checks"][3]["evidence"]["sets"][0]  # kept flat on disk
    drift = raw["checks"][5]["evidence"]
    assert drift["n_steps"] == 3 and drift["entropy"] is None
    for c in CHECKS.values():
        with pytest.raises(ValidationError, match="errror"):
            c.evidence(errror="a typo")
        assert c.evidence(error="x").error == "x"


def test_a_check_that_crashes_is_a_failed_verdict_with_its_own_evidence_type(tmp_path: Path, monkeypatch) -> None:
    """One broken check never hides the other verdicts: it fails, naming the error, with the evidence
    record of its own kind (its `error` set), and the three files are still written."""

    def boom(ctx):
        raise RuntimeError("disk on fire")

    for name in ("holdout", "drift"):
        monkeypatch.setitem(CHECKS, name, dataclasses.replace(CHECKS[name], run=boom))
    run, evals = group(tmp_path)
    res = run_audit(run, evals, second_verifier=False, plots=True)
    raw = {c["name"]: c for c in json.loads((run / "audit" / "audit.json").read_text())["checks"]}
    for name, kind in (("holdout", "HoldoutEvidence"), ("drift", "DriftReport")):
        c = raw[name]
        assert c["status"] == "fail" and "RuntimeError: disk on fire" in c["summary"]
        assert type(res.check(name).evidence).__name__ == kind and "disk on fire" in c["evidence"]["error"]
        assert c["title"] == CHECKS[name].title
    assert raw["matched_compute"]["status"] == "pass" and res.status == "fail"
    assert "could not run" in (run / "audit" / "report.md").read_text()


def test_audit_command_exit_codes(tmp_path: Path, capsys) -> None:
    from rich.console import Console

    quiet = Console(file=open(tmp_path / "console.txt", "w"))  # noqa: SIM115 - closed with the test
    run, evals = group(tmp_path)
    assert audit_command(tmp_path / "missing", console=quiet) == 2
    assert audit_command(run, [tmp_path / "base"], console=quiet) == 2  # not an evaluation folder
    metrics = _metrics(**{"reward/outcome/mean": None, "reward/format_gsm8k/mean": 0.5})
    bad = train_run(tmp_path, "fmt", rewards=[{"name": "format_gsm8k", "weight": 1.0}], metrics=metrics)
    assert audit_command(bad, evals, out=tmp_path / "a", strict=True, console=quiet) == 1
    assert audit_command(bad, evals, out=tmp_path / "b", strict=False, console=quiet) == 0
    quiet.file.close()
    assert "no such run folder" in (tmp_path / "console.txt").read_text()


def _cli_app():
    from rlvr.cli import app

    return app, ["audit"]


def test_cli_options_and_exit_status(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    app, prefix = _cli_app()
    run, evals = group(tmp_path)
    args = [*prefix, str(run), "--eval", str(evals[0]), "--eval", str(evals[1]), "--out", str(tmp_path / "rep")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "rep" / "audit.json").read_text())
    assert [e["name"] for e in data["evaluations"]] == ["base-test", "grpo-test"]
    assert data["checks"][4]["status"] == "warn"  # no holdout evaluation among the two given
    res = CliRunner().invoke(app, [*prefix, str(tmp_path / "missing")])
    assert res.exit_code == 2


def test_relative_model_paths_resolve_against_the_run_folders(tmp_path: Path, monkeypatch) -> None:
    run = train_run(tmp_path)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**cfg, "model": "base"}))  # as written from inside tmp_path
    ev = eval_run(tmp_path, "base-test", Path("base"))
    monkeypatch.chdir(run / "samples")  # neither the cwd nor the run folder holds `base`
    ctx = build_context(run, [ev], second_verifier=False)
    assert ctx.evals[0].role == "base"
