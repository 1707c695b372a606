"""Reward search loop: config checks, scores, ensemble choice, an end-to-end search in this process,
resume after a lost screen, the local process pool, and the CLI's error paths."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rlvr.cli import app
from rlvr.config import ConfigError, load_config
from rlvr.evaluate.compare import paired_tests
from rlvr.evaluate.stats import adjust_pvalues
from rlvr.grpo.config import TrainOverrides
from rlvr.search import run as search_run
from rlvr.search.config import SearchConfig
from rlvr.search.executor import run_jobs
from rlvr.search.proposer import Candidate, OfflineProposer
from rlvr.search.records import DevScores, ScreenResult, read_search_results
from rlvr.search.screen import EnsembleReward, ScreenJob, dev_scores, f1_score
from rlvr.search.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

BAD_SOURCE = '''"""reads a file"""
RANGE = (0.0, 1.0)

def reward(completions, **kwargs):
    return [float(len(open("/etc/passwd").read()) > 0) for _ in completions]
'''


def _cfg(tmp_path: Path, model: Path, **kw) -> SearchConfig:
    values = {
        "base_model": str(model), "rounds": 2, "candidates": 2, "screen_steps": 1, "dev_n": 4, "dev_samples": 2,
        "test_n": 6, "test_samples": 2, "ensemble_size": 2, "seeds": 2, "workers": 0, "out": str(tmp_path / "s"),
        "train": {"prompts_per_step": 2, "group_size": 2, "sampling": {"max_new_tokens": 12}, "threads": 1},
        "threads": 1,
    }  # fmt: skip
    values.update(kw)
    return load_config(SearchConfig, None, values)


def _screen_job(model: Path, out: Path, **kw) -> ScreenJob:
    """A one-step control screen of the tiny model, small enough for a test; `kw` overrides fields."""
    values = {
        "key": "baseline/s1/seed0", "kind": "baseline", "members": (), "model": str(model), "steps": 1, "seed": 0,
        "out": str(out), "eval_n": 3, "eval_samples": 1,
        "train": TrainOverrides.model_validate(
            {"prompts_per_step": 2, "group_size": 2, "sampling": {"max_new_tokens": 8}, "threads": 1}
        ),
    }  # fmt: skip
    values.update(kw)
    return ScreenJob(**values)


def test_config_rejects_fields_the_search_owns_and_bad_train_values():
    with pytest.raises(ConfigError, match="steps"):
        load_config(SearchConfig, None, {"train": {"steps": 3}})
    with pytest.raises(ConfigError, match="lr"):
        load_config(SearchConfig, None, {"train": {"lr": -1}})
    with pytest.raises(ConfigError, match="rungs"):
        load_config(SearchConfig, None, {"halving": {"enabled": True, "rungs": [0.5, 0.25]}})


def test_f1_and_dev_scores_hand_computed():
    assert f1_score(0, 5, 10) == 0.0
    # precision 6/8, recall 6/10 -> F1 = 2 * .75 * .6 / 1.35
    assert f1_score(6, 8, 10) == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    correct = np.array([[1, 1], [1, 0], [0, 0], [1, 1], [1, 0]], dtype=bool)
    answered = np.array([[1, 1], [1, 1], [0, 0], [1, 1], [1, 1]], dtype=bool)
    s = dev_scores(correct, answered, seed=0)
    assert s.accuracy == pytest.approx(6 / 10)
    assert s.answered == pytest.approx(8 / 10)
    assert s.f1 == pytest.approx(f1_score(6, 8, 10))
    assert s.f1_ci is not None and s.f1_ci[0] <= s.f1 <= s.f1_ci[1]
    assert s.accuracy_ci is not None and s.accuracy_ci[0] <= s.accuracy <= s.accuracy_ci[1]


def _stored_test_scores(s, rates: dict[str, float], seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fake test scores (12 problems x 4 samples) stored as the final stage stores them; per arm, the
    per-problem pass rates and greedy correctness the comparisons must be computed from."""
    rng = np.random.default_rng(seed)
    arms = {}
    for name, p in rates.items():
        correct, greedy = rng.binomial(4, p, 12), (rng.random(12) < p).astype(int)
        per_problem = {"ids": [str(i) for i in range(12)], "correct": correct.tolist(), "answered": [4] * 12,
                       "greedy": greedy.tolist()}  # fmt: skip
        scores = {"accuracy": correct.mean() / 4, "f1": 0.0, "greedy": greedy.mean(), "n_samples": 4, "n_problems": 12}
        s.store.set_meta(f"test/{name}", {**scores, "per_problem": per_problem})
        arms[name] = (correct / 4, greedy)
    return arms


def test_final_tests_equal_paired_tests(tmp_path):
    """Search's final comparison: `paired_tests` against the control, McNemar p adjusted as one family."""
    cfg = _cfg(tmp_path, tmp_path / "model", test_n=12, test_samples=4)
    s = search_run.Search(cfg, log=lambda m: None, write_run=False)
    arms = _stored_test_scores(s, {"control": 0.3, "a": 0.6, "b": 0.35}, seed=0)
    for correction in ("holm", "bonferroni"):
        s.cfg = cfg.model_copy(update={"correction": correction})
        got = s.final({n: ScreenResult(key=n, run_dir=str(tmp_path)) for n in arms}).tests
        ctrl = arms["control"]
        ref = [paired_tests((ctrl[0], arms[n][0]), (ctrl[1], arms[n][1]), seed=cfg.seed) for n in ("a", "b")]
        adjusted = adjust_pvalues([g.pvalue for _, g in ref], correction)
        assert [t.b for t in got] == ["a", "b"]
        for t, (p1, g), p_adj in zip(got, ref, adjusted, strict=True):
            assert (t.pass1_diff, t.pass1_diff_ci, t.pvalue) == (p1.diff, list(p1.ci), g.pvalue)
            assert (t.p_adjusted, t.b01, t.b10) == (p_adj, g.detail["b01"], g.detail["b10"])
            assert t.greedy_diff == pytest.approx(g.diff)


def test_final_adds_the_given_pairs_to_the_family(tmp_path):
    """The best ensemble against the random one (the paper's selection control) joins the family."""
    cfg = _cfg(tmp_path, tmp_path / "model", test_n=12, test_samples=4, correction="bonferroni")
    s = search_run.Search(cfg, log=lambda m: None, write_run=False)
    arms = _stored_test_scores(s, {"control": 0.3, "top ensemble": 0.7, "random ensemble": 0.4}, seed=1)
    runs = {n: ScreenResult(key=n, run_dir=str(tmp_path)) for n in arms}
    got = s.final(runs, [("random ensemble", "top ensemble"), ("control", "missing")]).tests
    assert [(t.a, t.b) for t in got] == [("control", "top ensemble"), ("control", "random ensemble"),
                                         ("random ensemble", "top ensemble")]  # fmt: skip
    a, b = arms["random ensemble"], arms["top ensemble"]
    p1, g = paired_tests((a[0], b[0]), (a[1], b[1]), seed=cfg.seed)
    assert (got[2].pass1_diff, got[2].pvalue) == (p1.diff, g.pvalue)
    assert got[2].p_adjusted == pytest.approx(min(1.0, 3 * g.pvalue))  # three tests, Bonferroni


def test_ensemble_reward_is_a_weighted_mean_with_the_none_policy():
    class Member:
        def __init__(self, values):
            self.values, self.closed = values, False

        def __call__(self, completions, **kwargs):
            return self.values

        def close(self):
            self.closed = True

    members = [Member([1.0, 0.5, None, 1.0]), Member([0.0, 0.5, 1.0, float("nan")])]
    ens = EnsembleReward(members, weight=0.5)
    assert ens(["a", "b", "c", "d"]) == [0.25, 0.25, None, None]  # 0.5 * (1 + 0) / 2, 0.5 * (.5 + .5) / 2
    ens.close()
    assert all(m.closed for m in members)


def _done(name: str, f1: float, steps: int = 10) -> ScreenResult:
    scores = DevScores(f1=f1, accuracy=f1, f1_ci=[f1, f1], n_problems=4, n_samples=2)
    return ScreenResult(key=name, status="done", steps=steps, scores=scores)


def test_ranking_and_ensemble_choice(tmp_path, tiny_model_dir):
    s = search_run.Search(_cfg(tmp_path, tiny_model_dir, ensemble_size=2), log=lambda m: None)
    rows = [Candidate(f"r{r}-c{i}", f"# {r}{i}\n", "d", (), r) for r in (1, 2) for i in range(3)]
    for r in (1, 2):
        s.store.add_round(r, [c for c in rows if c.round == r])
    for c in rows:
        s.store.set_validation(c.name, c.name != "r2-c2", None if c.name != "r2-c2" else "static", "", None)
    f1 = {"r1-c0": 0.5, "r1-c1": 0.4, "r1-c2": 0.1, "r2-c0": 0.3, "r2-c1": 0.2}
    for name, v in f1.items():
        s.store.add_screen(f"cand/{name}/s10/seed0", "candidate", [name], 10, 0, _done(name, v))
    # a halving survivor with more steps outranks a higher score at fewer steps
    s.store.add_screen("cand/r1-c2/s30/seed0", "candidate", ["r1-c2"], 30, 0, _done("r1-c2", 0.05, steps=30))
    board = s.leaderboard()
    assert [x.row.name for x in board][:5] == ["r1-c2", "r1-c0", "r1-c1", "r2-c0", "r2-c1"]
    assert board[-1].row.name == "r2-c2" and board[-1].result is None
    ens = s.pick_ensembles(board)
    assert [r.name for r in ens["top"]] == ["r1-c2", "r1-c0"]
    assert [r.name for r in ens["diverse"]] == ["r1-c2", "r2-c0"]  # the best of each round
    screened = {x.row.name for x in board if x.result}
    assert len(ens["random"]) == 2 and {r.name for r in ens["random"]} <= screened
    hist = {h.name: h for h in s.history()}
    assert hist["r2-c2"].failure and hist["r2-c2"].score is None
    assert hist["r1-c2"].score == 0.05  # the result at the largest budget


class _WithBadCandidate(OfflineProposer):
    """The offline proposer, plus one candidate that the sandbox must reject, in round 1."""

    def propose(self, n, history=()):
        out = super().propose(n, history)
        if not history:
            out.append(Candidate("bad-open", BAD_SOURCE, "reads a file"))
        return out


def test_search_end_to_end_then_resume_reruns_only_what_was_lost(tmp_path, tiny_model_dir, monkeypatch, os_sandbox):
    cfg = _cfg(tmp_path, tiny_model_dir)
    monkeypatch.setattr(search_run, "make_proposer", lambda c: _WithBadCandidate(seed=c.seed))
    logs: list[str] = []
    res = search_run.run_search(cfg, log=logs.append)
    out = Path(cfg.out)
    assert (out / "search_report.html").stat().st_size > 1000
    on_disk = json.loads((out / "results.json").read_text())
    assert [r["round"] for r in on_disk["rounds"]] == [1, 2]
    names = {c["name"]: c for c in on_disk["candidates"]}
    assert len(names) == 5 and names["bad-open"]["status"] == "rejected"
    assert names["bad-open"]["stage"] in ("static", "load", "namespace", "probe")
    screened = [c for c in on_disk["candidates"] if c["status"] == "done"]
    assert len(screened) == 4 and all(c["scores"]["n_problems"] == 4 for c in screened)
    kinds = {e["kind"] for e in on_disk["ensembles"]}
    assert {"top", "random"} <= kinds <= {"top", "diverse", "random"}
    assert len(on_disk["seeds"]["runs"]) == 2
    seeds = res.seeds
    assert seeds is not None and all(r.test is not None and r.test.split == "test" for r in seeds.runs)
    assert seeds.test_mean == pytest.approx(sum(r.test.accuracy for r in seeds.runs if r.test) / 2)
    assert res.final is not None and {t.b for t in res.final.tests} >= {"top ensemble", "random ensemble"}
    best = f"{seeds.ensemble} ensemble"
    assert ("random ensemble", best) in {(t.a, t.b) for t in res.final.tests}
    for t in res.final.tests:
        assert t.p_adjusted is not None and 0 <= t.pvalue <= t.p_adjusted <= 1
    assert read_search_results(out) == res  # results.json reads back as what the search returned
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["finished"] is True and manifest["command"] == "search"
    n_screens = len(Store(out / "search.db").screens())
    assert n_screens == 1 + 4 + len(kinds) + 1  # control, candidates, ensembles, one more seed

    # lose one finished screen (as if killed while it ran), then resume
    lost = next(s.key for s in Store(out / "search.db").screens("candidate"))
    with sqlite3.connect(out / "search.db") as db:
        db.execute("DELETE FROM screens WHERE key = ?", (lost,))
    logs.clear()
    res2 = search_run.run_search(cfg, resume=True, log=logs.append)
    reran = [m for m in logs if "] " in m and ("F1" in m or "FAILED" in m)]
    assert len(reran) == 1 and lost in reran[0]
    assert not any("proposed" in m for m in logs)  # rounds are not proposed again
    assert {c.name for c in res2.candidates} == set(names)


def test_existing_search_folder_needs_resume(tmp_path, tiny_model_dir):
    cfg = _cfg(tmp_path, tiny_model_dir)
    Store(Path(cfg.out) / "search.db").close()
    with pytest.raises(FileExistsError, match="--resume"):
        search_run.Search(cfg)


def test_process_pool_runs_a_screen_in_a_fresh_process(tmp_path, tiny_model_dir):
    job = _screen_job(tiny_model_dir, tmp_path / "run")
    got: list[ScreenResult] = []
    run_jobs([job], lambda j, r: got.append(r), workers=1)
    assert got[0].status == "done" and got[0].scores is not None, got[0].error
    assert got[0].scores.n_problems == 3
    assert (tmp_path / "run" / "model" / "config.json").exists()
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_a_failing_screen_is_recorded_not_raised(tmp_path):
    job = _screen_job(tmp_path / "missing", tmp_path / "run")
    got: list[ScreenResult] = []
    run_jobs([job], lambda j, r: got.append(r), workers=0)
    assert got[0].status == "failed" and "missing" in (got[0].error or "")


def test_cli_errors_exit_2_with_the_reason(tmp_path):
    bad = tmp_path / "search.yaml"
    bad.write_text("rounds: 2\ncandidatez: 3\n")
    r = CliRunner().invoke(app, ["search", "--config", str(bad), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 or isinstance(r.exception, ConfigError)
    msg = str(r.exception) if r.exception else r.output
    assert "search.yaml:2" in msg and "candidatez" in msg
    r = CliRunner().invoke(app, ["search", "--resume", str(tmp_path / "nowhere")])
    assert r.exit_code == 2 and "not a search folder" in r.output
    r = CliRunner().invoke(app, ["search", "--preset", "nope"])
    assert r.exit_code == 2 and "unknown preset" in r.output


@pytest.mark.slow
def test_ray_local_cluster_runs_screens(tmp_path, tiny_model_dir):
    pytest.importorskip("ray")
    jobs = [_screen_job(tiny_model_dir, tmp_path / f"run{s}", key=f"baseline/s1/seed{s}", seed=s) for s in range(2)]
    got: dict[str, ScreenResult] = {}
    try:
        run_jobs(jobs, lambda j, r: got.__setitem__(j.key, r), ray="local", cpus_per_job=1)
    finally:
        import ray

        ray.shutdown()
    assert sorted(got) == [j.key for j in jobs]
    assert all(r.status == "done" for r in got.values()), got


def _screened_search(tmp_path: Path, model: Path, steps: int, f1: dict[str, float]) -> Path:
    """A finished search folder whose candidates (named by `f1`) were screened for `steps` steps with
    seed 0 and scored `f1`; its process has ended (store and lock closed)."""
    from rlvr.config import dump_config

    cfg = _cfg(tmp_path, model, screen_steps=steps)
    s = search_run.Search(cfg, log=lambda m: None)
    s.store.add_round(1, [Candidate(name, f"# {name}\n", "d", (), 1) for name in f1])
    for name, value in f1.items():
        s.store.set_validation(name, True, None, "", None)
        s.store.add_screen(f"cand/{name}/s{steps}/seed0", "candidate", [name], steps, 0, _done(name, value, steps))
    s.store.close()
    s.rundir.close()
    dump_config(cfg, Path(cfg.out) / "config.yaml")
    return Path(cfg.out)


def test_calibrate_reports_kendall_tau_of_short_vs_full_and_seed_vs_seed(tmp_path, tiny_model_dir, monkeypatch):
    from rlvr.search.calibrate import calibrate

    full = {"c0": 0.4, "c1": 0.3, "c2": 0.2, "c3": 0.1}
    out = _screened_search(tmp_path, tiny_model_dir, 9, full)
    short = {"c0": 0.3, "c1": 0.35, "c2": 0.1, "c3": 0.05}  # one swapped pair: tau = 4/6
    seed2 = {"c0": 0.1, "c1": 0.2, "c2": 0.3, "c3": 0.4}  # reversed: tau = -1

    def fake_run_jobs(jobs, on_result, **kw):
        for j in jobs:
            name = j.names[0]
            f1 = short[name] if j.steps == 3 else seed2[name] if j.seed == 1 else full[name]
            on_result(j, _done(name, f1, j.steps))

    monkeypatch.setattr(search_run, "run_jobs", fake_run_jobs)
    res = calibrate(out, n=4, short_frac=1 / 3, log=lambda m: None)
    assert res.short_steps == 3 and res.full_steps == 9 and res.n == 4
    assert res.tau_short_full == pytest.approx(4 / 6)
    assert res.tau_seeds == pytest.approx(-1.0)
    assert json.loads((out / "calibration.json").read_text())["rows"][0]["name"] == "c0"


def test_calibrate_cost_curve_by_screen_length_on_a_spread_of_the_leaderboard(tmp_path, tiny_model_dir, monkeypatch):
    from rlvr.search.calibrate import calibrate

    out = _screened_search(tmp_path, tiny_model_dir, 6, {f"c{i}": 0.7 - i / 10 for i in range(7)})
    ran: list[tuple[str, int, int]] = []

    def fake_run_jobs(jobs, on_result, **kw):
        for j in jobs:
            name = j.names[0]
            ran.append((name, j.steps, j.seed))
            i = int(name[1:])
            # 3 steps: the second seed reverses the ranking; 12 steps: both seeds rank as the search did
            f1 = 0.5 - (i if j.steps != 3 or j.seed == 0 else -i) / 10
            r = _done(name, f1, j.steps)
            on_result(j, r.model_copy(update={"seconds": float(j.steps)}))

    monkeypatch.setattr(search_run, "run_jobs", fake_run_jobs)
    res = calibrate(out, n=4, short_frac=0.5, lengths=[12, 3], pick="spread", log=lambda m: None)
    assert [r.name for r in res.rows] == ["c0", "c2", "c4", "c6"]  # ranks 1, 3, 5, 7 of 7
    assert [pt.steps for pt in res.curve] == [3, 12]
    assert res.curve[0].tau_seeds == pytest.approx(-1.0) and res.curve[1].tau_seeds == pytest.approx(1.0)
    assert [pt.seconds for pt in res.curve] == [3.0, 12.0]
    assert ("c0", 6, 0) not in ran  # the search's own screen is reused, never rerun
    assert len(ran) == len(set(ran)) == 4 * 2 + 4 * 2 * 2 - 4  # short, seed 2; two lengths x two seeds; short = 3
    on_disk = json.loads((out / "calibration.json").read_text())
    assert on_disk["pick"] == "spread" and on_disk["curve"][1]["f1_seed2"] == pytest.approx([0.5, 0.3, 0.1, -0.1])


def _one_candidate(body: dict, n: int) -> str:
    """A fake chat reply: one new candidate module per request."""
    source = (
        f'"""Pays {n / 10} for a #### marker."""\nimport re\nRANGE = (0, 1)\n\n'
        "def reward(completions, **kwargs):\n"
        f"    return [{n / 10} if re.search('####', c) else 0.0 for c in completions]\n"
    )
    return f"```python\n{source}```"


def test_search_with_a_chat_proposer_feeds_the_ranking_back(tmp_path, tiny_model_dir, fake_chat_server, os_sandbox):
    pytest.importorskip("openai")
    server = fake_chat_server(_one_candidate)
    proposer = {"kind": "chat", "base_url": server.url, "model": "fake", "timeout_s": 5}
    cfg = _cfg(tmp_path, tiny_model_dir, candidates=1, seeds=1, proposer=proposer)
    res = search_run.run_search(cfg, log=lambda m: None)
    prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert len(prompts) == 2
    first = next(c.name for c in res.candidates if c.round == 1)
    assert first.startswith("llm-r1-") and first in prompts[1] and "score" in prompts[1]
    assert {c.round for c in res.candidates} == {1, 2}
    assert all(c.status == "done" for c in res.candidates)


NONE_SOURCE = '''"""never scores"""
RANGE = (0.0, 1.0)

def reward(completions, **kwargs):
    return [None for _ in completions]
'''


def test_a_candidate_that_never_scores_fails_its_screen(tmp_path, tiny_model_dir, os_sandbox):
    job = _screen_job(
        tiny_model_dir, tmp_path / "run", key="cand/none/s1/seed0", kind="candidate", members=(("none", NONE_SOURCE),),
        eval_n=2,
    )  # fmt: skip
    got: list[ScreenResult] = []
    run_jobs([job], lambda j, r: got.append(r), workers=0)
    assert got[0].status == "failed" and "unscorable" in (got[0].error or "")
    assert got[0].train is not None and got[0].train.candidate_none_frac == 1.0


def test_ensembles_shrink_to_the_screened_candidates_and_skip_a_duplicate_diverse(tmp_path, tiny_model_dir):
    s = search_run.Search(_cfg(tmp_path, tiny_model_dir, ensemble_size=3), log=lambda m: None)
    cands = [Candidate("a", "# a\n", "d", (), 1), Candidate("b", "# b\n", "d", (), 1)]
    s.store.add_round(1, cands)
    for c, f1 in zip(cands, (0.2, 0.1), strict=True):
        s.store.set_validation(c.name, True, None, "", None)
        s.store.add_screen(f"cand/{c.name}/s1/seed0", "candidate", [c.name], 1, 0, _done(c.name, f1, 1))
    ens = s.pick_ensembles(s.leaderboard())
    assert sorted(ens) == ["random", "top"]  # one round: diverse would equal top
    assert [r.name for r in ens["top"]] == ["a", "b"]


def test_a_killed_worker_is_retried_once_in_a_fresh_pool(tmp_path, tiny_model_dir):
    import multiprocessing
    import os
    import signal
    import time

    job = _screen_job(tiny_model_dir, tmp_path / "run", key="baseline/s3/seed0", steps=3)
    got: list[ScreenResult] = []
    runner = threading.Thread(target=run_jobs, args=([job], lambda j, r: got.append(r)), kwargs={"workers": 1})
    runner.start()
    deadline = time.time() + 60
    while not multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.05)
    victims = multiprocessing.active_children()
    assert victims, "no worker process started"
    time.sleep(1.0)
    for p in victims:
        os.kill(p.pid, signal.SIGKILL)  # as the OOM killer would
    runner.join(timeout=120)
    assert not runner.is_alive()
    assert all(p.exitcode == -signal.SIGKILL for p in victims)  # the first try really died
    assert len(got) == 1 and got[0].status == "done", got  # the second try finished


def test_pool_workers_exit_when_their_parent_is_gone():
    import subprocess
    import sys
    import time

    # the watch compares getppid() with the pid it was given; -1 is never a parent, as after a kill
    code = "from rlvr.search.executor import _exit_with_parent; import time; _exit_with_parent(-1); time.sleep(30)"
    t0 = time.time()
    rc = subprocess.run([sys.executable, "-c", code], timeout=25).returncode
    assert rc == 3 and time.time() - t0 < 20


def test_a_job_whose_worker_fails_comes_back_as_job_died():
    """What `fn` raises in a worker is reported as a `JobDied` naming the error, never raised here."""
    import os
    from types import SimpleNamespace

    from rlvr.search.executor import JobDied

    got: list[object] = []
    run_jobs([SimpleNamespace(key="k")], lambda j, r: got.append(r), workers=1, fn=os.abort)  # abort() takes no job
    assert len(got) == 1 and isinstance(got[0], JobDied) and got[0].key == "k"
    assert got[0].error.startswith("worker failed: TypeError")


def test_screening_samples_at_the_runs_own_temperature(tmp_path, tiny_model_dir, monkeypatch):
    """The dev evaluation of a screen samples as the screening run was trained (`sampling`), not at a
    fixed T = 1; greedy stays greedy."""
    from rlvr.config import SamplingConfig
    from rlvr.evaluate import runner
    from rlvr.search.screen import evaluate_model

    seen: list[float] = []
    real = runner.sample_and_score

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(0.0 if kwargs.get("greedy") else kwargs["sampling"].temperature)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "sample_and_score", spy)
    sampling = SamplingConfig(temperature=0.7, max_new_tokens=8)
    evaluate_model(tiny_model_dir, "dev", 3, 2, task="arith", preset="small", seed=0, sampling=sampling, threads=1)
    assert seen == [0.7, 0.0]


def test_a_missing_sandbox_stops_the_search_before_the_base_is_built(tmp_path, tiny_model_dir, monkeypatch):
    from rlvr.sandbox import SandboxUnavailable, jail

    def unavailable():
        raise SandboxUnavailable("bubblewrap is not installed")

    monkeypatch.setattr(jail, "detect", unavailable)
    built = []
    monkeypatch.setattr(search_run.Search, "ensure_base", lambda self: built.append(1) or str(tiny_model_dir))
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        search_run.run_search(_cfg(tmp_path, tiny_model_dir, base_model=None), log=lambda m: None)
    assert built == []


def test_the_base_is_sfted_on_sft_preset_while_screens_use_preset(tmp_path, monkeypatch):
    """`sparse-medium`: the base is built on `easy` (sft_preset), the screens train and score on `medium`."""
    from rlvr import sft
    from rlvr.search.config import SEARCH_PRESETS

    got = {}

    def fake_sft(cfg):  # type: ignore[no-untyped-def]
        got.update(preset=cfg.preset, steps=cfg.steps)
        raise RuntimeError("stop here")

    monkeypatch.setattr(sft, "run_sft", fake_sft)
    cfg = load_config(SearchConfig, None, {"out": str(tmp_path / "s")}, base=dict(SEARCH_PRESETS["sparse-medium"]))
    assert cfg.preset == "medium" and cfg.sft_preset == "easy"
    s = search_run.Search(cfg, log=lambda m: None)
    try:
        with pytest.raises(RuntimeError, match="stop here"):
            s.ensure_base()
    finally:
        s.store.close()
    assert got == {"preset": "easy", "steps": 600}
