"""rlvr study: conditions x seeds from one base, pooled metrics, paired comparisons, resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rlvr.config import ConfigError, load_config
from rlvr.evaluate.compare import paired_tests
from rlvr.evaluate.stats import adjust_pvalues
from rlvr.grpo.config import TrainOverrides
from rlvr.runs import read_eval
from rlvr.study import STUDY_PRESETS, StudyConfig, StudyError, run_study
from rlvr.study.analysis import analyse
from rlvr.study.config import Condition, trains_rft
from rlvr.study.records import StudyJobResult, read_study


def _cfg(tmp_path: Path, base: Path, **kw) -> StudyConfig:  # type: ignore[no-untyped-def]
    values = {
        "base": str(base), "seeds": [0, 1], "steps": 2, "eval_n": 12, "eval_samples": 2, "workers": 0,
        "train": {"prompts_per_step": 2, "group_size": 2, "sampling": {"max_new_tokens": 16}},
        "conditions": [{"name": "base", "kind": "base"},
                       {"name": "outcome", "train": {"rewards": [{"name": "outcome"}]}},
                       {"name": "sft", "kind": "sft-oracle"}],
        "out": str(tmp_path / "study"),
    }  # fmt: skip
    values.update(kw)
    return load_config(StudyConfig, None, values)


def test_study_end_to_end_then_resume_reruns_only_what_is_missing(tmp_path: Path, tiny_model_dir: Path) -> None:
    cfg = _cfg(tmp_path, tiny_model_dir)
    logs: list[str] = []
    study = run_study(cfg, log=logs.append)
    out = Path(cfg.out)
    assert not study.failed, study.errors
    assert read_study(out) == study and json.loads((out / "study.json").read_text())["schema_version"] == 1
    assert [c.name for c in study.conditions] == ["base", "outcome", "sft"]
    assert [len(c.runs) for c in study.conditions] == [1, 2, 2]
    assert [c.pooled.n_seeds for c in study.conditions if c.pooled] == [1, 2, 2]
    # the sft-oracle arm got the GRPO runs' median time, and says so
    assert any("sft-oracle" in n for n in study.notes)
    assert all(r.train_seconds and r.steps_done and r.steps_done >= 1 for r in study.condition("sft").runs)
    # every arm on the same problems; vs base: 2 arms x 2 tests; the GRPO arm vs the sft-oracle baseline: 1 x 2
    assert study.n_problems == 12
    pairs = [(t.condition, t.reference, t.metric) for t in study.comparisons]
    assert len(pairs) == 6 and ("outcome", "sft", "greedy") in pairs and ("outcome", "base", "pass@1") in pairs
    assert all(t.pvalue_adj is not None and t.pvalue_adj >= t.pvalue - 1e-12 for t in study.comparisons)
    # the pooled pass@1 difference is the one statistics path on the seed-averaged rates
    evals = {k: read_eval(out / "evals" / k) for k in ("base", "outcome-s0", "outcome-s1")}
    ids = sorted(p.id for p in evals["base"].per_problem)

    def rates(e):  # type: ignore[no-untyped-def]
        rows = {r.id: r for r in e.per_problem}
        return np.array([rows[i].correct / rows[i].n for i in ids])

    pooled = (rates(evals["outcome-s0"]) + rates(evals["outcome-s1"])) / 2
    t = next(t for t in study.comparisons if (t.condition, t.reference, t.metric) == ("outcome", "base", "pass@1"))
    assert t.diff == pytest.approx(paired_tests((rates(evals["base"]), pooled))[0].diff)
    html = (out / "study_report.html").read_text()
    assert "data:image/png;base64," in html and "Paired comparisons" in html and "sft-oracle" in html
    # a lost evaluation: --resume reruns that one job only, and the numbers of the others stay
    shutil.rmtree(out / "evals" / "outcome-s1")
    logs.clear()
    again = run_study(_cfg(tmp_path, tiny_model_dir), resume=True, log=logs.append)
    assert any("running 1 of" in line for line in logs), logs
    assert again.condition("sft") == study.condition("sft")  # the sft arm was kept as it was
    assert again.condition("outcome").pooled == study.condition("outcome").pooled  # the rerun: same seed, same numbers
    # a finished study is not overwritten by a new one
    with pytest.raises(ValueError, match="holds a finished run"):
        run_study(_cfg(tmp_path, tiny_model_dir), log=logs.append)


def test_presets_validate_and_bad_configs_are_refused(tmp_path: Path) -> None:
    for name, conditions in STUDY_PRESETS.items():
        cfg = load_config(StudyConfig, None, {}, base={"conditions": conditions})
        assert cfg.conditions[0].kind == "base", name
    gran = load_config(StudyConfig, None, {}, base={"conditions": STUDY_PRESETS["granularity"]})
    assert [c.name for c in gran.conditions] == ["base", "outcome", "process", "hybrid-0.9", "hybrid-0.5", "hybrid-0.1",
                                                 "rft", "sft-oracle"]  # fmt: skip
    # on the embedded world's rung, each arm with the demo's recipe
    assert gran.preset == "small" and {c.preset for c in gran.conditions if c.kind == "grpo"} == {"demo", "demo-rft"}
    # RFT is a baseline: the oracle's time is matched to the policy-gradient arms only
    assert [c.name for c in gran.conditions if trains_rft(c)] == ["rft"]
    assert trains_rft(Condition(name="x", train=TrainOverrides.model_validate({"objective": "rft"})))
    # a config written with the oracle's earlier name still reads
    old = load_config(StudyConfig, None, {"conditions": [{"name": "g"}, {"name": "s", "kind": "sft-matched"}]})
    assert old.conditions[1].kind == "sft-oracle"
    bad = [
        ({"conditions": [{"name": "a"}, {"name": "a"}]}, "condition names repeat: a"),
        ({"conditions": [{"name": "s", "kind": "sft-matched"}]}, "needs at least one grpo condition"),
        ({"conditions": [{"name": "b", "kind": "base", "train": {"lr": 1}}]}, "apply to grpo conditions only"),
        ({"conditions": [{"name": "../x"}]}, "field 'conditions.0.name'"),
        ({"conditions": []}, "field 'conditions'"),
        ({"conditions": [{"name": "b", "kind": "base"}], "judge": {"modle": "m"}}, "field 'judge.modle'"),
        ({"conditions": [{"name": "b", "kind": "base"}], "judge": {"n": 0}}, "field 'judge.n'"),
    ]
    for values, message in bad:
        with pytest.raises(ConfigError, match=message):
            load_config(StudyConfig, None, values)
    # the judge's settings are checked on load and written as given (no defaults, no environment)
    judged = load_config(StudyConfig, None, {"conditions": [{"name": "b", "kind": "base"}],
                                             "judge": {"model": "m", "n": 5}})  # fmt: skip
    assert judged.judge is not None and judged.judge.n == 5 and judged.judge.max_retries == 3
    assert judged.model_dump(mode="json")["judge"] == {"model": "m", "n": 5}


def test_a_bad_condition_is_refused_before_the_folder_is_touched(tmp_path: Path, tiny_model_dir: Path) -> None:
    # `train:` is typed as TrainConfig's fields: caught where the config is read, with its path
    with pytest.raises(ConfigError, match=r"field 'conditions.0.train.rewards.0': unknown reward 'nope'"):
        _cfg(tmp_path, tiny_model_dir, conditions=[{"name": "x", "train": {"rewards": [{"name": "nope"}]}}])
    with pytest.raises(ConfigError, match=r"field 'train.lrr': unknown field"):
        _cfg(tmp_path, tiny_model_dir, train={"lrr": 1e-4})
    # what spans fields is checked when the runs are planned, still before the folder is touched
    cfg = _cfg(tmp_path, tiny_model_dir, conditions=[{"name": "x", "preset": "nope"}])
    with pytest.raises(StudyError, match="unknown train preset 'nope'"):
        run_study(cfg, log=lambda m: None)
    assert not Path(cfg.out).exists()


def test_every_grpo_arm_is_compared_with_the_sft_oracle_baseline(tmp_path: Path) -> None:
    """References: the base (every trained arm), the first trained arm (the others, not sft-oracle) and
    sft-oracle (every GRPO arm, the first included), each pair once, all under one Holm correction."""

    def write(name: str, correct: list[int]) -> str:
        d = tmp_path / name
        d.mkdir()
        rows = [{"id": f"p{i}", "n": 2, "correct": c, "tokens": 5.0, "greedy": c > 0} for i, c in enumerate(correct)]
        (d / "eval.json").write_text(json.dumps({"task": "arith", "split": "test", "metrics": {}, "per_problem": rows}))
        return str(d)

    arms = {"base": ("base", [0, 0, 1, 2]), "a": ("grpo", [2, 1, 1, 2]), "b": ("grpo", [1, 1, 2, 2]),
            "s": ("sft-matched", [0, 1, 1, 2])}  # fmt: skip
    results = {
        name: StudyJobResult(key=name, kind=kind, condition=name, seed=0, status="done", eval_dir=write(name, correct))
        for name, (kind, correct) in arms.items()
    }
    conditions = [{"name": n, "kind": k} for n, (k, _) in arms.items()]
    study = analyse(load_config(StudyConfig, None, {"conditions": conditions, "seeds": [0]}), tmp_path, "b", results)
    pairs = sorted({(t.condition, t.reference) for t in study.comparisons})
    assert pairs == [("a", "base"), ("a", "s"), ("b", "a"), ("b", "base"), ("b", "s"), ("s", "base")]
    assert len(study.comparisons) == 12  # pass@1 and greedy per pair
    holm = adjust_pvalues([t.pvalue for t in study.comparisons], "holm")
    assert [t.pvalue_adj for t in study.comparisons] == pytest.approx(holm)


def test_analysis_pools_seeds_and_pairs_each_seed_with_the_reference(tmp_path: Path) -> None:
    """Hand-made evaluations: the pooled pass@1, its seed range, and greedy McNemar over (problem, seed)."""

    def write(name: str, correct: list[int], greedy: list[bool]) -> str:
        d = tmp_path / name
        d.mkdir()
        rows = [{"id": f"p{i}", "n": 2, "correct": c, "tokens": 5.0, "greedy": g}
                for i, (c, g) in enumerate(zip(correct, greedy, strict=True))]  # fmt: skip
        overall = {"n_completions": 8, "cot_pass@1": sum(correct) / 8, "trace_validity": sum(correct) / 16,
                   "chain_length_deviation": 1.0, "process_step_ratio": 0.5, "valid_given_correct": None}  # fmt: skip
        fidelity = {"overall": overall, "by_steps": {"1": overall}}
        e = {"task": "arith", "split": "test", "metrics": {}, "per_problem": rows, "fidelity": fidelity}
        (d / "eval.json").write_text(json.dumps(e))
        return str(d)

    results = {
        "base": {"kind": "base", "condition": "base", "seed": 0, "status": "done",
                 "eval_dir": write("base", [0, 0, 1, 2], [False, False, True, True])},
        "a-s0": {"kind": "grpo", "condition": "a", "seed": 0, "status": "done",
                 "eval_dir": write("a0", [2, 1, 1, 2], [True, False, True, True])},
        "a-s1": {"kind": "grpo", "condition": "a", "seed": 1, "status": "done",
                 "eval_dir": write("a1", [2, 2, 1, 2], [True, True, True, True])},
    }  # fmt: skip
    cfg = load_config(StudyConfig, None, {"conditions": [{"name": "base", "kind": "base"}, {"name": "a"}]})
    study = analyse(cfg, tmp_path, "b", {k: StudyJobResult(key=k, **r) for k, r in results.items()})
    a = study.condition("a").pooled
    assert a is not None and a.pass_at_1.value == pytest.approx((0.75 + 0.875) / 2) and a.pass_at_1.seeds.min == 0.75
    assert a.greedy.mean == pytest.approx((0.75 + 1.0) / 2)
    p1, g = study.comparisons
    assert p1.diff == pytest.approx(0.8125 - 0.375) and p1.diff_per_seed == pytest.approx([0.375, 0.5])
    # greedy pairs: seed 0 flips p0 (b01=1), seed 1 flips p0 and p1 (b01=2): exact McNemar p = 2 * 0.5^3
    assert g.metric == "greedy" and g.pvalue == pytest.approx(0.25) and g.diff_per_seed == [0.25, 0.5]
    assert p1.pvalue_per_seed is None and g.pvalue_per_seed is not None and len(g.pvalue_per_seed) == 2
    # fidelity: each run's overall block, pooled over seeds
    assert study.condition("a").runs[0].fidelity["cot_pass@1"] == 0.75
    assert a.fidelity["trace_validity"].mean == pytest.approx((6 / 16 + 7 / 16) / 2)
    holm = adjust_pvalues([p1.pvalue, g.pvalue], "holm")
    assert [t.pvalue_adj for t in study.comparisons] == pytest.approx(holm)
    assert study.to_json()["conditions"][1]["pooled"]["pass@1"]["value"] == a.pass_at_1.value  # the file's keys
    # a seed whose run logged no train accuracy draws no curve (it crashed the plot)
    from rlvr.study.report import _curves

    assert _curves(study.model_copy(update={"curves": {"a": {"0": [0.1, 0.2, 0.3], "1": []}}})) is not None
    assert _curves(study.model_copy(update={"curves": {"a": {"0": []}}})) is None


@pytest.mark.slow
def test_quick_preset_on_the_embedded_default_from_the_command_line(tmp_path: Path) -> None:
    """`rlvr study --preset reward-separation --quick`: builds the embedded base, runs 3 arms x 2 seeds
    in 2 worker processes, writes study.json and the report, and prints the tables."""
    import os
    import subprocess
    import sys

    out = tmp_path / "sep"
    argv = ["study", "--preset", "reward-separation", "--quick", "--workers", "2", "--out", str(out)]
    env = {**os.environ, "COLUMNS": "200"}  # rich fits its tables to the terminal: give it room to print names
    res = subprocess.run([sys.executable, "-m", "rlvr", *argv], capture_output=True, text=True, timeout=1500, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    study = json.loads((out / "study.json").read_text())
    assert [c["name"] for c in study["conditions"]] == ["base", "both", "correctness-only", "format-only"]
    assert all(c["pooled"]["n_seeds"] == (1 if c["name"] == "base" else 2) for c in study["conditions"])
    assert study["n_problems"] == 40 and (out / "base" / "model" / "config.json").is_file()
    assert "paired comparisons" in res.stdout and "correctness-only" in res.stdout


@pytest.mark.slow
def test_a_study_on_the_real_model_with_gsm8k(tmp_path: Path, real_model_dir: Path) -> None:
    """The same command on SmolLM2-135M-Instruct and GSM8K through its chat template (tiny budget:
    one LoRA GRPO step per arm, 4 problems): the real path of the granularity grid runs end to end."""
    cfg = tmp_path / "study.yaml"
    cfg.write_text(
        f"base: {real_model_dir}\ntask: gsm8k\nseeds: [0]\nsteps: 1\neval_n: 4\neval_samples: 1\nworkers: 0\n"
        "train: {n_train: 8, prompts_per_step: 2, group_size: 2, lora: {r: 4, alpha: 8},\n"
        "        sampling: {max_new_tokens: 48}}\n"
        "conditions:\n  - {name: base, kind: base}\n  - {name: outcome, train: {rewards: [{name: outcome}]}}\n"
        "  - {name: hybrid-0.9, train: {rewards: [{name: hybrid, params: {lam: 0.9}}]}}\n"
        f"out: {tmp_path / 'study'}\n"
    )
    from rlvr.config import load_config as load

    study = run_study(load(StudyConfig, cfg), log=lambda m: None)
    assert not study.failed, study.errors
    assert study.n_problems == 4 and [c.name for c in study.conditions] == ["base", "outcome", "hybrid-0.9"]
    e = read_eval(Path(str(study.condition("outcome").runs[0].eval_dir)))
    assert e.task == "gsm8k" and e.prompt_format == "chat" and e.max_new_tokens == 48


@pytest.mark.slow
def test_study_jobs_run_as_ray_tasks(tmp_path: Path, tiny_model_dir: Path) -> None:
    pytest.importorskip("ray")
    cfg = _cfg(tmp_path, tiny_model_dir, ray="local", seeds=[0],
               conditions=[{"name": "base", "kind": "base"}, {"name": "outcome"}])  # fmt: skip
    try:
        study = run_study(cfg, log=lambda m: None)
    finally:
        import ray

        ray.shutdown()
    assert not study.failed, study.errors
    assert [c.pooled.n_seeds for c in study.conditions if c.pooled] == [1, 1]
