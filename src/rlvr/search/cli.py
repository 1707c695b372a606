"""`rlvr search` (run or resume a reward search) and `rlvr search calibrate DIR`."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

__all__ = ["search_app"]

console = Console(stderr=True)
search_app = typer.Typer(help="Reward search: LLM- or primitive-written rewards, sandboxed and screened by GRPO.")


def _fail(msg: str) -> NoReturn:
    console.print(f"[bold red]error:[/] {msg}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _log(msg: str) -> None:
    console.print(msg, highlight=False, soft_wrap=True)


@search_app.callback(invoke_without_command=True)
def search(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option("--config", help="YAML config; flags override it.")] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help="Named search: demo (2 x 4 offline, small), sparse (2 x 6, easy), sparse-medium (2 x 6, medium)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Starting checkpoint (default: SFT one from scratch).")] = None,
    rounds: Annotated[int | None, typer.Option(help="Proposal rounds.")] = None,
    candidates: Annotated[int | None, typer.Option(help="Candidates per round.")] = None,
    steps: Annotated[int | None, typer.Option("--steps", help="GRPO steps per screening run.")] = None,
    workers: Annotated[int | None, typer.Option(help="Local screening processes (0: in this process).")] = None,
    ray: Annotated[str | None, typer.Option("--ray", help="Ray address (auto, ray://host:port, local).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed.")] = None,
    out: Annotated[str | None, typer.Option(help="Search folder.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Resume the search in this folder.")] = None,
    unsafe_no_sandbox: Annotated[
        bool, typer.Option("--unsafe-no-sandbox", help="Run candidates without OS isolation (trusted code only).")
    ] = False,
) -> None:
    """Run a reward search (or `--resume DIR` one that stopped); writes DIR/search_report.html."""
    if ctx.invoked_subcommand is not None:
        return
    from rlvr.config import load_config
    from rlvr.interrupt import Interrupted
    from rlvr.sandbox import SandboxUnavailable
    from rlvr.search.config import SEARCH_PRESETS, SearchConfig
    from rlvr.search.run import SearchError, run_search

    if resume is not None:
        if not (resume / "config.yaml").is_file() or not (resume / "search.db").is_file():
            _fail(f"{resume}: not a search folder (needs config.yaml and search.db)")
        cfg = load_config(SearchConfig, resume / "config.yaml", {"out": str(resume), "workers": workers, "ray": ray})
    else:
        if preset is not None and preset not in SEARCH_PRESETS:
            _fail(f"unknown preset {preset!r}; known: {', '.join(SEARCH_PRESETS)}")
        overrides = {
            "base_model": model,
            "rounds": rounds,
            "candidates": candidates,
            "screen_steps": steps,
            "workers": workers,
            "ray": ray,
            "seed": seed,
            "out": out,
            "unsafe_no_sandbox": True if unsafe_no_sandbox else None,
        }
        cfg = load_config(SearchConfig, config, overrides, base=dict(SEARCH_PRESETS.get(preset or "", {})))
    try:
        results = run_search(cfg, resume=resume is not None, log=_log)
    except KeyboardInterrupt:
        _fail(f"interrupted; finished screens are stored: rlvr search --resume {cfg.out}")
    except Interrupted as e:
        name = signal.Signals(e.signum).name
        _log(
            f"[bold yellow]stopped:[/] interrupted by {name}; finished screens are stored; resume with: "
            f"rlvr search --resume {cfg.out}"
        )
        raise typer.Exit(e.code) from None
    except (FileExistsError, FileNotFoundError, SandboxUnavailable, SearchError, ImportError, ValueError) as e:
        hint = f" (finished screens are stored: rlvr search --resume {cfg.out})" if isinstance(e, SearchError) else ""
        _fail(f"{e}{hint}")
    final = results.final
    if final is not None:
        for t in final.tests:
            _log(
                f"{t.b} vs {t.a}: greedy {t.greedy_diff:+.3f}, pass@1 {t.pass1_diff:+.3f}, "
                f"McNemar p={t.pvalue:.3g} ({final.correction} {t.p_adjusted:.3g})"
            )
    console.print(f"report: {Path(cfg.out) / 'search_report.html'}")


@search_app.command("calibrate")
def calibrate_cmd(
    folder: Annotated[Path, typer.Argument(help="A search folder.")],
    items: Annotated[int | None, typer.Option(help="Candidates to calibrate on (>= 3; default 4).")] = None,
    short_frac: Annotated[float, typer.Option("--short-frac", help="Short screen as a share of full.")] = 1 / 3,
    lengths: Annotated[
        str | None, typer.Option(help="Screen lengths for the cost curve, e.g. 20,40,80 (two seeds each).")
    ] = None,
    pick: Annotated[
        str, typer.Option(help="top: the best candidates; spread: candidates at evenly spaced ranks.")
    ] = "top",
    n_old: Annotated[int | None, typer.Option("--n", hidden=True)] = None,
) -> None:
    """Kendall tau of short vs full screens, of full screens across two seeds, and (--lengths) by length."""
    from rlvr.config import ConfigError, renamed_flag
    from rlvr.search.calibrate import calibrate

    try:
        n = renamed_flag("--n", n_old, "--items", items)
    except ConfigError as e:
        _fail(str(e))
    if pick not in ("top", "spread"):
        _fail(f"--pick: expected top or spread, got {pick!r}")
    try:
        steps = [int(x) for x in lengths.split(",")] if lengths else None
    except ValueError:
        _fail(f"--lengths: expected comma-separated step counts, got {lengths!r}")
    try:
        res = calibrate(folder, n=4 if n is None else n, short_frac=short_frac, lengths=steps, pick=pick, log=_log)  # type: ignore[arg-type]
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    for label, tau, p in (
        ("short vs full", res.tau_short_full, res.p_short_full),
        ("seed vs seed", res.tau_seeds, res.p_seeds),
    ):
        _log(f"Kendall tau {label}: " + ("n/a" if tau is None else f"{tau:+.2f} (p={p:.3g})"))
    for pt in res.curve:
        tau_s = "n/a" if pt.tau_seeds is None else f"{pt.tau_seeds:+.2f} (p={pt.p_seeds:.3g})"
        cost = "n/a" if pt.seconds is None else f"{pt.seconds:.0f} s"
        _log(f"{pt.steps} steps: seed vs seed tau {tau_s}, {cost} a screen")
    console.print(f"calibration: {folder / 'calibration.json'}")
