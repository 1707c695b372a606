"""`rlvr study`: conditions x seeds from one base (docs/study.md)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

__all__ = ["study_command"]

console = Console(stderr=True)


def _fail(msg: str) -> NoReturn:
    console.print(f"[bold red]error:[/] {msg}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _log(msg: str) -> None:
    console.print(msg, highlight=False, soft_wrap=True)


def _print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def study_command(
    config: Annotated[Path | None, typer.Option("--config", help="Study YAML (conditions, seeds, ...).")] = None,
    preset: Annotated[str | None, typer.Option(help="A named study: granularity or reward-separation.")] = None,
    out: Annotated[str | None, typer.Option(help="Study folder.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A small version of the same grid (minutes).")] = False,
    resume: Annotated[
        Path | None, typer.Option(help="Finish the study in this folder (reruns only what is missing).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Runs in parallel local processes (0: in this process).")] = None,
    ray: Annotated[str | None, typer.Option("--ray", help="Ray address (auto, ray://host:port, local).")] = None,
    model: Annotated[
        str | None, typer.Option(help="Base model or run folder (default: build the embedded base).")
    ] = None,
    task: Annotated[str | None, typer.Option(help="Task (arith, gsm8k or a JSONL file).")] = None,
    steps: Annotated[int | None, typer.Option("--steps", help="GRPO steps per run.")] = None,
    seeds: Annotated[str | None, typer.Option(help="Comma-separated seeds, e.g. 0,1,2.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a study already in --out.")] = False,
) -> None:
    """Conditions x seeds from one base, every run evaluated on the same problems; writes study.json and
    study_report.html (pooled metrics with CIs, paired comparisons with Holm, fidelity, learning curves)."""
    from rlvr.config import load_config
    from rlvr.interrupt import Interrupted
    from rlvr.study import QUICK, STUDY_PRESETS, StudyConfig, run_study
    from rlvr.study.report import comparison_rows, result_rows
    from rlvr.tasks import get_task, task_names

    seed_list = None
    if seeds is not None:
        try:
            seed_list = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            _fail(f"--seeds: expected comma-separated integers, got {seeds!r}")
    if resume is not None:
        if not (resume / "config.yaml").is_file():
            _fail(f"{resume}: not a study folder (no config.yaml)")
        cfg = load_config(StudyConfig, resume / "config.yaml", {"out": str(resume), "workers": workers, "ray": ray})
    else:
        if (config is None) == (preset is None):
            _fail("give --config FILE or --preset NAME (granularity, reward-separation)")
        if preset is not None and preset not in STUDY_PRESETS:
            _fail(f"unknown study preset {preset!r}; known: {', '.join(sorted(STUDY_PRESETS))}")
        base: dict[str, Any] = {"conditions": STUDY_PRESETS[preset]} if preset else {}
        if quick:
            base.update(QUICK)
            if task is not None and task in task_names() and not get_task(task).templated:
                base["steps"] = 2  # a real task's problems are long: fewer steps keep --quick quick
        flags = dict(out=out, workers=workers, ray=ray, base=model, task=task, steps=steps, seeds=seed_list)
        cfg = load_config(StudyConfig, config, flags, base=base)
    try:
        result = run_study(cfg, resume=resume is not None, overwrite=overwrite, log=_log)
    except ValueError as e:  # StudyError, RunFolderError, DataError, ModelLoadError, RunFileError
        _fail(str(e))
    except Interrupted as e:
        stopped = f"interrupted by {signal.Signals(e.signum).name}; finished runs are stored; resume with:"
        _log(f"[bold yellow]stopped:[/] {stopped} rlvr study --resume {cfg.out}")
        raise typer.Exit(e.code) from None
    seeds_text = ", ".join(map(str, result.seeds))
    cols = ["condition", "kind", "seeds", "pass@1 (95% CI)", "seed range", "greedy", "train s"]
    title = f"{result.split}: {result.n_problems} problems x {result.n_samples}, seeds {seeds_text}"
    _print_table(title, cols, result_rows(result))
    if result.comparisons:
        cols = ["comparison", "metric", "ref", "cond", "diff (95% CI)", "per seed", "p", "p adj"]
        _print_table("paired comparisons (p adjusted by Holm over all tests)", cols, comparison_rows(result))
    if result.failed:
        raise typer.Exit(1)
