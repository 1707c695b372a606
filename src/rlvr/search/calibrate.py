"""`rlvr search calibrate DIR`: is a short screen a trustworthy stand-in for a full one here?

For the `n` best screened candidates of a finished (or resumed) search it runs a short screen
(`short_frac * screen_steps` steps) and a second full screen with another seed, then reports Kendall's
tau (scipy) between the short and the full ranking, and between the two seeds' full rankings. A tau
near the seed-vs-seed tau says halving loses little; a tau near 0 says short runs rank by noise,
and with seed-vs-seed tau near 0 even full screens cannot separate these candidates.
"""

from __future__ import annotations

from pathlib import Path

from rlvr.config import load_config
from rlvr.runs import write_json
from rlvr.runs.search import Calibration, CalibrationRow, read_search_results
from rlvr.search.config import SearchConfig
from rlvr.search.run import Log, Search

__all__ = ["calibrate", "kendall"]


def kendall(a: list[float], b: list[float]) -> tuple[float | None, float | None]:
    """Kendall's tau-b and its p-value; (None, None) with fewer than 3 pairs or a constant side.

    >>> kendall([0.1, 0.2, 0.3, 0.4], [0.15, 0.25, 0.2, 0.5])[0]
    0.6666666666666669
    """
    import math

    from scipy.stats import kendalltau

    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None, None
    res = kendalltau(a, b)
    tau, p = float(res.statistic), float(res.pvalue)
    return (None, None) if math.isnan(tau) else (tau, p)


def calibrate(out: str | Path, *, n: int = 4, short_frac: float = 1 / 3, log: Log = print) -> Calibration:
    out = Path(out)
    if not (out / "search.db").exists():
        raise FileNotFoundError(f"{out}: no search.db (run `rlvr search` first)")
    cfg = load_config(SearchConfig, out / "config.yaml", {"out": str(out)})
    s = Search(cfg, resume=True, log=log, write_run=False)  # leaves the search's manifest as it is
    try:
        return _calibrate(s, out, cfg, n, short_frac)
    finally:
        s.store.close()


def _calibrate(s: Search, out: Path, cfg: SearchConfig, n: int, short_frac: float) -> Calibration:
    s.base = s.ensure_base()
    board = [x for x in s.leaderboard() if x.done][:n]
    if len(board) < 3:
        raise ValueError(f"{out}: calibration needs at least 3 screened candidates, found {len(board)}")
    full, short = cfg.screen_steps, max(1, round(short_frac * cfg.screen_steps))
    seed2 = cfg.seed + 1
    jobs = []
    for x in board:
        jobs.append(s.job(s.cand_key(x.row.name, full), "candidate", [x.row], full, cfg.seed))
        jobs.append(s.job(s.cand_key(x.row.name, short), "calibration", [x.row], short, cfg.seed))
        jobs.append(s.job(s.cand_key(x.row.name, full, seed2), "calibration", [x.row], full, seed2))
    res = s._run(jobs, "calibrate")

    def f1(key: str) -> float | None:
        r = res.get(key)
        return r.scores.f1 if r is not None and r.done and r.scores is not None else None

    rows = [
        CalibrationRow(name=name, full_f1=f1(s.cand_key(name, full)), short_f1=f1(s.cand_key(name, short)),
                       full_f1_seed2=f1(s.cand_key(name, full, seed2)))
        for name in (x.row.name for x in board)
    ]  # fmt: skip
    pairs_s = [(r.short_f1, r.full_f1) for r in rows if r.full_f1 is not None and r.short_f1 is not None]
    pairs_2 = [(r.full_f1, r.full_f1_seed2) for r in rows if r.full_f1 is not None and r.full_f1_seed2 is not None]
    tau_s, p_s = kendall([a for a, _ in pairs_s], [b for _, b in pairs_s])
    tau_2, p_2 = kendall([a for a, _ in pairs_2], [b for _, b in pairs_2])
    result = Calibration(short_steps=short, full_steps=full, n=len(rows), tau_short_full=tau_s, p_short_full=p_s,
                         tau_seeds=tau_2, p_seeds=p_2, rows=rows)  # fmt: skip
    write_json(out / "calibration.json", result.model_dump(mode="json"))
    results_path = out / "results.json"
    if results_path.exists():
        from rlvr.search.report import write_report

        results = read_search_results(results_path)
        results.calibration = result
        write_json(results_path, results.to_json())
        write_report(results, out / "search_report.html")
    return result
