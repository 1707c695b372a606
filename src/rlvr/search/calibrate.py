"""`rlvr search calibrate DIR`: is a short screen a trustworthy stand-in for a full one here? Kendall's
tau of short vs full screens and of two seeds' full screens (and, with `lengths`, by screen length).
How to read it: docs/search.md ("Successive halving and calibration")."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rlvr.config import load_config
from rlvr.runs import write_json
from rlvr.runs.lock import RunLock, RunLockedError
from rlvr.search.config import SearchConfig
from rlvr.search.records import Calibration, CalibrationPoint, CalibrationRow, read_search_results
from rlvr.search.run import BoardRow, Log, Search
from rlvr.search.screen import ScreenJob
from rlvr.search.store import Store

__all__ = ["calibrate", "kendall", "pick_rows"]


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


def calibrate(
    out: str | Path,
    *,
    n: int = 4,
    short_frac: float = 1 / 3,
    lengths: list[int] | None = None,
    pick: Literal["top", "spread"] = "top",
    log: Log = print,
) -> Calibration:
    """Calibrate the search in `out` on `n` screened candidates (`pick`: the `n` best, or `n` spread
    evenly over the leaderboard from best to worst); with `lengths`, also screen each with two seeds at
    every length for the cost curve (seed-vs-seed tau and seconds per screen by screen length)."""
    out = Path(out)
    if not (out / "search.db").exists():
        raise FileNotFoundError(f"{out}: no search.db (run `rlvr search` first)")
    if lengths is not None and (not lengths or any(x < 1 for x in lengths)):
        raise ValueError(f"lengths must be positive step counts, got {lengths}")
    cfg = load_config(SearchConfig, out / "config.yaml", {"out": str(out)})
    Store(out / "search.db").close()  # a store that is not a search database is refused before the lock
    try:
        lock = RunLock(out, "search calibrate", tree=True)  # never beside a search writing the same tree
    except RunLockedError as e:
        raise ValueError(str(e)) from None
    try:
        s = Search(cfg, resume=True, log=log, write_run=False)  # leaves the search's manifest as it is
    except BaseException:
        lock.release()  # a refusal leaves no .lock behind
        raise
    try:
        return _calibrate(s, out, cfg, n, short_frac, sorted(set(lengths or [])), pick)
    finally:
        s.store.close()
        lock.release()


def pick_rows(board: list[BoardRow], n: int, pick: str) -> list[BoardRow]:
    """The `n` best rows, or `n` rows at evenly spaced ranks from the best to the worst.

    >>> [r for r in pick_rows(list(range(9)), 4, "spread")]  # stands in for BoardRows
    [0, 3, 5, 8]
    """
    if pick == "top" or n >= len(board):
        return board[:n]
    return [board[round(i * (len(board) - 1) / (n - 1))] for i in range(n)]


def _calibrate(
    s: Search,
    out: Path,
    cfg: SearchConfig,
    n: int,
    short_frac: float,
    lengths: list[int],
    pick: Literal["top", "spread"],
) -> Calibration:
    s.base = s.ensure_base()
    board = pick_rows([x for x in s.leaderboard() if x.done], n, pick)
    if len(board) < 3:
        raise ValueError(f"{out}: calibration needs at least 3 screened candidates, found {len(board)}")
    full, short = cfg.screen_steps, max(1, round(short_frac * cfg.screen_steps))
    seed2 = cfg.seed + 1
    names = [x.row.name for x in board]
    jobs: dict[str, ScreenJob] = {}
    for x in board:
        for steps, seed, kind in [
            (full, cfg.seed, "candidate"),
            (short, cfg.seed, "calibration"),
            (full, seed2, "calibration"),
        ] + [(L, sd, "calibration") for L in lengths for sd in (cfg.seed, seed2)]:
            key = s.cand_key(x.row.name, steps, seed)
            jobs.setdefault(key, s.job(key, kind, [x.row], steps, seed))
    res = s._run(list(jobs.values()), "calibrate")

    def f1(name: str, steps: int, seed: int) -> float | None:
        r = res.get(s.cand_key(name, steps, seed))
        return r.scores.f1 if r is not None and r.done and r.scores is not None else None

    rows = [
        CalibrationRow(
            name=m, full_f1=f1(m, full, cfg.seed), short_f1=f1(m, short, cfg.seed), full_f1_seed2=f1(m, full, seed2)
        )
        for m in names
    ]
    tau_s, p_s = _tau([(r.short_f1, r.full_f1) for r in rows])
    tau_2, p_2 = _tau([(r.full_f1, r.full_f1_seed2) for r in rows])
    curve = []
    for L in lengths:
        a, b = [f1(m, L, cfg.seed) for m in names], [f1(m, L, seed2) for m in names]
        secs = [
            r.seconds
            for m in names
            for sd in (cfg.seed, seed2)
            if (r := res.get(s.cand_key(m, L, sd))) is not None and r.done and r.seconds is not None
        ]
        tau, p = _tau(list(zip(a, b, strict=True)))
        curve.append(
            CalibrationPoint(
                steps=L, f1=a, f1_seed2=b, tau_seeds=tau, p_seeds=p, seconds=sum(secs) / len(secs) if secs else None
            )
        )
    result = Calibration(
        short_steps=short,
        full_steps=full,
        n=len(rows),
        pick=pick,
        tau_short_full=tau_s,
        p_short_full=p_s,
        tau_seeds=tau_2,
        p_seeds=p_2,
        rows=rows,
        curve=curve,
    )
    write_json(out / "calibration.json", result.model_dump(mode="json"))
    results_path = out / "results.json"
    if results_path.exists():
        from rlvr.search.report import write_report

        results = read_search_results(results_path)
        results.calibration = result
        write_json(results_path, results.to_json())
        write_report(results, out / "search_report.html")
    return result


def _tau(pairs: list[tuple[float | None, float | None]]) -> tuple[float | None, float | None]:
    """Kendall's tau over the pairs where both sides were scored."""
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    return kendall([a for a, _ in both], [b for _, b in both])
