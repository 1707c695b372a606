"""`rlvr search`: the reward-search loop (`Search`, `run_search`), driven from one process that owns
the store (OUT/search.db; `--resume` skips what finished). The stages and what each reads: docs/search.md."""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rlvr.grpo.config import TrainOverrides
from rlvr.runs import RunDir, write_json
from rlvr.runs.records import load_record
from rlvr.search.config import SearchConfig
from rlvr.search.executor import JobDied, run_jobs
from rlvr.search.proposer import Candidate, ChatProposer, OfflineProposer, RankedResult
from rlvr.search.records import (
    CandidateResult,
    ControlResult,
    DevScores,
    EnsembleResult,
    FinalComparison,
    FinalTest,
    RoundSummary,
    ScreenResult,
    SearchResults,
    SeedRun,
    SeedsResult,
)
from rlvr.search.screen import ScreenJob
from rlvr.search.store import CandidateRow, Store
from rlvr.tasks import task_names

__all__ = ["BoardRow", "run_search", "make_proposer", "rank_key", "SearchError", "Search"]

Log = Callable[[str], None]


class SearchError(RuntimeError):
    """The search cannot go on (proposer unreachable, bad setup); what finished is in the store."""


def _members_tag(names: list[str]) -> str:
    """A short hash of an ensemble's member names, so a changed ensemble never reuses a result."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:8]


def make_proposer(cfg: SearchConfig):
    p = cfg.proposer
    if p.kind == "offline":
        return OfflineProposer(seed=cfg.seed)
    import os

    return ChatProposer(
        base_url=p.base_url,
        model=p.model,
        api_key=os.environ.get(p.api_key_env),
        temperature=p.temperature,
        timeout=p.timeout_s,
    )


def rank_key(result: ScreenResult | None) -> tuple[float, float, float]:
    """Sort key (higher is better): steps reached (halving), dev F1, dev accuracy."""
    if result is None or not result.done or result.scores is None:
        return (-1.0, -1.0, -1.0)
    return (float(result.steps or 0), result.scores.f1, result.scores.accuracy)


@dataclass(frozen=True)
class BoardRow:
    """A candidate on the leaderboard and its best screening result (None: never screened)."""

    row: CandidateRow
    result: ScreenResult | None

    @property
    def done(self) -> bool:
        return self.result is not None and self.result.done


class Search:
    def __init__(self, cfg: SearchConfig, *, resume: bool = False, log: Log = print, write_run: bool = True) -> None:
        self.cfg, self.log = cfg, log
        self.out = Path(cfg.out).resolve()  # absolute: screens may run in other processes or on Ray nodes
        if not resume and (self.out / "search.db").exists():
            raise FileExistsError(f"{self.out}: a search is already there; pass --resume or another --out")
        if cfg.task not in task_names():
            known = ", ".join(task_names())
            raise ValueError(f"task {cfg.task!r}: reward search needs a registered task with train/dev/test ({known})")
        self.proposer = make_proposer(cfg)  # fails here, before any training, on a bad proposer setup
        if resume:
            Store(self.out / "search.db").close()  # a damaged store is refused before the folder is touched
        self.rundir = RunDir(self.out, cfg, command="search", resume=resume) if write_run else None
        self.store = Store(self.out / "search.db")
        self.base: str = ""

    # ------------------------------------------------------------------ helpers
    def _train_overrides(self) -> TrainOverrides:
        """What every screening run trains with: `train`, the base rewards, the task and the threads."""
        c = self.cfg
        return TrainOverrides.model_validate(
            {
                **c.train.values(),
                "rewards": [r.model_dump() for r in c.base_rewards],
                "task": c.task,
                "preset": c.preset,
                "threads": c.threads,
            }
        )

    def job(self, key: str, kind: str, members: list[CandidateRow], steps: int, seed: int) -> ScreenJob:
        c = self.cfg
        return ScreenJob(
            key=key,
            kind=kind,
            members=tuple((m.name, m.source) for m in members),
            model=self.base,
            steps=steps,
            seed=seed,
            out=str(self.out / "screens" / key.replace("/", "__")),
            train=self._train_overrides(),
            candidate_weight=c.candidate_weight,
            candidate_timeout_s=c.candidate_timeout_s,
            unsafe_no_sandbox=c.unsafe_no_sandbox,
            eval_split="dev",
            eval_n=c.dev_n,
            eval_samples=c.dev_samples,
        )

    def _run(self, jobs: list[ScreenJob], label: str) -> dict[str, ScreenResult]:
        """Run the jobs not already in the store; return every job's result by key."""
        todo = [j for j in jobs if (self.store.screen(j.key) or ScreenResult(key=j.key, retryable=True)).retryable]
        if len(todo) < len(jobs):
            self.log(f"{label}: {len(jobs) - len(todo)} screen(s) already done, {len(todo)} to run")
        done = [0]

        def on_result(job: ScreenJob, got: ScreenResult | JobDied) -> None:
            result = (
                ScreenResult(key=got.key, status="failed", retryable=True, error=got.error)
                if isinstance(got, JobDied)
                else got
            )
            self.store.add_screen(job.key, job.kind, job.names, job.steps, job.seed, result)
            done[0] += 1
            if result.done and result.scores is not None:
                s = result.scores
                msg = f"F1 {s.f1:.3f} acc {s.accuracy:.3f} ({result.seconds or 0:.0f} s)"
            else:
                msg = f"FAILED: {result.error or '?'}"
            self.log(f"{label} [{done[0]}/{len(todo)}] {job.key}: {msg}")

        run_jobs(todo, on_result, workers=self.cfg.workers, ray=self.cfg.ray, cpus_per_job=self.cfg.threads or 1)
        return {j.key: self.store.screen(j.key) or ScreenResult(key=j.key, error="no result stored") for j in jobs}

    def cand_key(self, name: str, steps: int, seed: int | None = None) -> str:
        return f"cand/{name}/s{steps}/seed{self.cfg.seed if seed is None else seed}"

    def best_result(self, name: str) -> ScreenResult | None:
        """The candidate's result at the largest step budget it was screened with."""
        rows = [s.result for s in self.store.screens("candidate") if s.members == [name]]
        return max(rows, key=rank_key) if rows else None

    # ------------------------------------------------------------------ stages
    def ensure_base(self) -> str:
        if self.cfg.base_model:
            from rlvr.models.load import resolve_model_path

            return str(resolve_model_path(self.cfg.base_model))
        model = self.out / "base" / "model"
        if (model / "config.json").exists():
            return str(model)
        from rlvr.config import load_config
        from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

        self.log(f"base: SFT from scratch, {self.cfg.sft_steps} steps -> {self.out / 'base'}")
        sft = load_config(
            SFTConfig,
            None,
            {
                "steps": self.cfg.sft_steps,
                "seed": self.cfg.seed,
                "out": str(self.out / "base"),
                "task": self.cfg.task,
                "preset": self.cfg.sft_preset or self.cfg.preset,
            },
            base=dict(SFT_PRESETS["arith-base"]),
        )
        return str(run_sft(sft) / "model")

    def history(self) -> list[RankedResult]:
        out = []
        for row in self.store.candidates():
            if row.accepted is False:
                failure = f"rejected at {row.stage}: {row.reason}"
            elif (res := self.best_result(row.name)) is None:
                continue
            elif not res.done or res.scores is None:
                failure = res.error or "failed"
            elif (res.steps or 0) < self.cfg.screen_steps:  # cut by halving: not comparable with full-budget scores
                failure = f"cut by successive halving after {res.steps} steps (dev F1 {res.scores.f1:.3f})"
            else:
                s = res.scores
                ci = (s.f1_ci[0], s.f1_ci[1]) if s.f1_ci else (s.f1, s.f1)
                out.append(RankedResult(row.name, row.source, row.description, s.f1, ci))
                continue
            out.append(RankedResult(row.name, row.source, row.description, failure=failure))
        return out

    def propose(self, rnd: int) -> list[CandidateRow]:
        if not self.store.round_proposed(rnd):
            proposer = self.proposer
            if isinstance(proposer, ChatProposer):
                proposer.rounds = rnd - 1
            try:
                cands: list[Candidate] = proposer.propose(self.cfg.candidates, self.history())
            except Exception as e:  # network, server or parsing trouble: stop with what finished stored
                raise SearchError(f"round {rnd}: the proposer failed: {type(e).__name__}: {e}") from e
            known = {r.name for r in self.store.candidates()}
            cands = [Candidate(c.name, c.source, c.description, c.parents, rnd) for c in cands if c.name not in known]
            if not cands:  # not marked as proposed, so a resumed search asks again
                self.log(f"round {rnd}: the proposer returned no new candidate")
                return []
            self.store.add_round(rnd, cands)
            self.log(f"round {rnd}: {len(cands)} candidate(s) proposed")
        return self.store.candidates(rnd)

    def validate(self, rows: list[CandidateRow]) -> list[CandidateRow]:
        from rlvr.sandbox import validate

        for row in rows:
            if row.accepted is None:
                v = validate(
                    row.source, timeout_s=self.cfg.candidate_timeout_s, unsafe_no_sandbox=self.cfg.unsafe_no_sandbox
                )
                self.store.set_validation(row.name, v.accepted, v.stage, v.reason, v.probe_raw)
                self.log(f"  {row.name}: {'accepted' if v.accepted else f'rejected at {v.stage}: {v.reason}'}")
        return [r for r in self.store.candidates(rows[0].round) if r.accepted] if rows else []

    def screen_round(self, rnd: int, rows: list[CandidateRow]) -> None:
        c = self.cfg
        alive = rows
        rungs = c.halving.rungs if c.halving.enabled else [1.0]
        for i, frac in enumerate(rungs):
            steps = max(1, round(frac * c.screen_steps))
            jobs = [self.job(self.cand_key(r.name, steps), "candidate", [r], steps, c.seed) for r in alive]
            results = self._run(jobs, f"round {rnd} rung {i + 1}/{len(rungs)} ({steps} steps)")
            if i + 1 < len(rungs):
                ranked = sorted(alive, key=lambda r: rank_key(results[self.cand_key(r.name, steps)]), reverse=True)
                alive = ranked[: max(1, math.ceil(c.halving.keep * len(ranked)))]

    def leaderboard(self) -> list[BoardRow]:
        rows = [BoardRow(row, self.best_result(row.name) if row.accepted else None) for row in self.store.candidates()]
        rows.sort(key=lambda x: rank_key(x.result), reverse=True)
        return rows

    def pick_ensembles(self, board: list[BoardRow]) -> dict[str, list[CandidateRow]]:
        """`top`, `diverse` (skipped when it equals `top`) and `random`, of size min(ensemble_size,
        screened candidates); none with fewer than two screened candidates."""
        good = [x.row for x in board if x.done]
        k = min(self.cfg.ensemble_size, len(good))
        if k < 2:
            self.log(f"ensembles: {len(good)} screened candidate(s), at least 2 needed; skipped")
            return {}
        if k < self.cfg.ensemble_size:
            self.log(f"ensembles: only {len(good)} screened candidates; ensembles of {k}")
        top = good[:k]
        by_round: dict[int, list[CandidateRow]] = {}
        for r in good:
            by_round.setdefault(r.round, []).append(r)
        # the best of each round in turn, then the second best of each, ...
        by_depth = itertools.zip_longest(*(by_round[rnd] for rnd in sorted(by_round)))
        diverse = [r for depth in by_depth for r in depth if r is not None][:k]
        rng = random.Random(self.cfg.seed * 7919 + 13)
        rand = rng.sample(sorted(good, key=lambda r: r.name), k)  # from the screened ones, like the others
        out = {"top": top, "diverse": diverse, "random": rand}
        if {r.name for r in diverse} == {r.name for r in top}:
            self.log("ensembles: the diverse ensemble equals the top one; trained once")
            del out["diverse"]
        return out

    def test_scores(self, res: ScreenResult) -> DevScores:
        """A screened run's model on the test split (stored, so a resumed search never re-evaluates)."""
        from rlvr.search.screen import evaluate_model

        c, key = self.cfg, f"test/{res.key}"
        stored = self.store.get_meta(key)
        if stored is not None:
            return load_record(DevScores, stored)
        got = evaluate_model(
            Path(res.run_dir or "") / "model",
            "test",
            c.test_n,
            c.test_samples,
            task=c.task,
            preset=c.preset,
            seed=c.seed,
            threads=c.threads,
        )
        self.store.set_meta(key, got.model_dump(mode="json"))
        return got

    def final(self, configs: dict[str, ScreenResult], pairs: list[tuple[str, str]] | None = None) -> FinalComparison:
        """Test-split scores of each configuration's model and McNemar tests (`evaluate.compare.paired_tests`)
        of each against the control, plus `pairs` (a, b) given by name, all adjusted as one family."""
        from rlvr.evaluate.compare import paired_tests
        from rlvr.evaluate.stats import adjust_pvalues

        c = self.cfg
        scores: dict[str, DevScores] = {}
        for name, res in configs.items():
            scores[name] = got = self.test_scores(res)
            self.log(f"test {name}: pass@1 {got.accuracy:.3f} F1 {got.f1:.3f} greedy {got.greedy or 0:.3f}")
        wanted = [("control", name) for name in scores if name != "control"] + list(pairs or [])
        tests: list[FinalTest] = []
        for a, b in wanted:
            sa, sb = scores.get(a), scores.get(b)
            if sa is None or sb is None or sa.per_problem is None or sb.per_problem is None:
                continue
            na, nb = sa.n_samples, sb.n_samples
            p1, g = paired_tests(
                ([x / na for x in sa.per_problem.correct], [x / nb for x in sb.per_problem.correct]),
                (sa.per_problem.greedy, sb.per_problem.greedy),
                names=(a, b),
                seed=c.seed,
            )
            tests.append(
                FinalTest(
                    a=a,
                    b=b,
                    b01=g.detail["b01"],
                    b10=g.detail["b10"],
                    pvalue=g.pvalue,
                    greedy_diff=(sb.greedy or 0.0) - (sa.greedy or 0.0),
                    pass1_diff=p1.diff,
                    pass1_diff_ci=list(p1.ci),
                )
            )
        adj = adjust_pvalues([t.pvalue for t in tests], c.correction)
        for t, p in zip(tests, adj, strict=True):
            t.p_adjusted, t.significant = p, p < 0.05
        return FinalComparison(
            n_problems=c.test_n,
            n_samples=c.test_samples,
            correction=c.correction,
            scores={k: v.short() for k, v in scores.items()},
            tests=tests,
        )

    def seeds_result(self, kind: str | None, runs: list[ScreenResult]) -> SeedsResult:
        """The best ensemble's seed runs: dev F1 and test pass@1 per seed, with mean and sd of each."""
        tests = [self.test_scores(r) if r.done else None for r in runs]
        f1s = [r.scores.f1 for r in runs if r.done and r.scores is not None]
        accs = [t.accuracy for t in tests if t is not None]
        return SeedsResult(
            ensemble=kind or "?",
            runs=[
                SeedRun(seed=r.seed, status=r.status, scores=_short(r.scores), test=_short(t))
                for r, t in zip(runs, tests, strict=True)
            ],
            f1_mean=_mean(f1s),
            f1_sd=_sd(f1s),
            test_mean=_mean(accs),
            test_sd=_sd(accs),
        )

    # ------------------------------------------------------------------ the loop
    def run(self) -> SearchResults:
        c = self.cfg
        t0 = time.time()
        if not c.unsafe_no_sandbox:  # a machine without the sandbox fails now, not after the base is built
            from rlvr.sandbox.jail import detect

            detect()
        self.base = self.ensure_base()
        if self.rundir is not None:
            self.rundir.write_manifest(seeds={"search": c.seed}, base_model=self.base)
        ctrl_key = f"baseline/s{c.screen_steps}/seed{c.seed}"
        control = self._run([self.job(ctrl_key, "baseline", [], c.screen_steps, c.seed)], "control")[ctrl_key]
        for rnd in range(1, c.rounds + 1):
            rows = self.propose(rnd)
            accepted = self.validate(rows)
            self.screen_round(rnd, accepted)
        board = self.leaderboard()
        ens = self.pick_ensembles(board)
        steps = c.steps_final
        tags = {kind: _members_tag([r.name for r in m]) for kind, m in ens.items()}

        def ens_key(kind: str, seed: int) -> str:
            return f"ens/{kind}-{tags[kind]}/s{steps}/seed{seed}"

        ens_jobs = {kind: self.job(ens_key(kind, c.seed), "ensemble", m, steps, c.seed) for kind, m in ens.items()}
        ens_results = self._run(list(ens_jobs.values()), "ensembles")
        ens_out = {kind: ens_results[j.key] for kind, j in ens_jobs.items()}
        ranked_ens = sorted(
            ((k, v) for k, v in ens_out.items() if k != "random"), key=lambda kv: rank_key(kv[1]), reverse=True
        )
        best_kind = ranked_ens[0][0] if ranked_ens and ranked_ens[0][1].done else None
        seed_runs: list[ScreenResult] = []
        if best_kind is not None and c.seeds > 1:
            jobs = [
                self.job(ens_key(best_kind, c.seed + s), "seed", ens[best_kind], steps, c.seed + s)
                for s in range(1, c.seeds)
            ]
            res = self._run(jobs, f"seeds ({best_kind} ensemble)")
            seed_runs = [ens_out[best_kind]] + [res[j.key] for j in jobs]
        best = next((x for x in board if x.done), None)
        if steps != c.screen_steps:  # the final comparison holds the training budget fixed
            jobs = [self.job(f"baseline/s{steps}/seed{c.seed}", "baseline", [], steps, c.seed)]
            if best:
                jobs.append(self.job(self.cand_key(best.row.name, steps), "final", [best.row], steps, c.seed))
            got = self._run(jobs, f"final budget ({steps} steps)")
            control = got[jobs[0].key]
            if best:
                best = BoardRow(best.row, got[jobs[1].key])
        finals = {"control": control} if control.done else {}
        if best and best.result is not None and best.result.done:
            finals[f"best single ({best.row.name})"] = best.result
        finals.update({f"{k} ensemble": v for k, v in ens_out.items() if v.done})
        # The paper's selection control: the best ensemble against a random one of the same size.
        pairs = [("random ensemble", f"{best_kind} ensemble")] if best_kind and "random ensemble" in finals else []
        final = self.final(finals, pairs)
        seeds_out = self.seeds_result(best_kind, seed_runs) if seed_runs else None
        results = self.results(control, board, ens, ens_out, seeds_out, final, time.time() - t0)
        write_json(self.out / "results.json", results.to_json())
        from rlvr.search.report import write_report

        write_report(results, self.out / "search_report.html")
        if self.rundir is not None:
            self.rundir.write_manifest(finished=True, wall_s=time.time() - t0)
        return results

    def results(
        self,
        control: ScreenResult,
        board: list[BoardRow],
        ens: dict[str, list[CandidateRow]],
        ens_out: dict[str, ScreenResult],
        seeds_out: SeedsResult | None,
        final: FinalComparison,
        wall_s: float,
    ) -> SearchResults:
        cands = []
        for rank, x in enumerate(board, 1):
            row, res = x.row, x.result
            screened = {k: getattr(res, k) for k in ("error", "steps", "train", "reward_audit")} if res else {}
            cands.append(
                CandidateResult(
                    **vars(row),  # the candidate as stored
                    **screened,
                    rank=rank if x.done else None,
                    status="rejected" if row.accepted is False else (res.status if res else "not screened"),
                    scores=_short(res.scores if res else None),
                )
            )
        rounds = []
        for rnd in range(1, self.cfg.rounds + 1):
            f1s = [x.scores.f1 for x in cands if x.round == rnd and x.scores is not None]
            rounds.append(
                RoundSummary(
                    round=rnd,
                    proposed=sum(x.round == rnd for x in cands),
                    accepted=sum(x.round == rnd and bool(x.accepted) for x in cands),
                    f1=f1s,
                    best_f1=max(f1s) if f1s else None,
                )
            )
        ensembles = [
            EnsembleResult(
                kind=k,
                members=[m.name for m in ens[k]],
                status=v.status,
                error=v.error,
                scores=_short(v.scores),
                reward_audit=v.reward_audit,
            )
            for k, v in ens_out.items()
        ]
        return SearchResults(
            config=self.cfg.model_dump(mode="json"),
            base_model=self.base,
            wall_s=wall_s,
            control=ControlResult(status=control.status, scores=_short(control.scores), error=control.error),
            rounds=rounds,
            candidates=cands,
            ensembles=ensembles,
            seeds=seeds_out,
            final=final,
        )


def _short(scores: DevScores | None) -> DevScores | None:
    return None if scores is None else scores.short()


def _mean(xs: list[float]) -> float | None:
    return float(sum(xs) / len(xs)) if xs else None


def _sd(xs: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def run_search(cfg: SearchConfig, *, resume: bool = False, log: Log = print) -> SearchResults:
    """Run (or resume) a search into `cfg.out`; returns what results.json holds."""
    search = Search(cfg, resume=resume, log=log)
    try:
        return search.run()
    finally:
        search.store.close()
        if search.rundir is not None:
            search.rundir.close()
