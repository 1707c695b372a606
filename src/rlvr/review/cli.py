"""`rlvr review export | serve | import | stats`: the typer sub-app that `rlvr.cli` mounts as `review`
(and `python -m rlvr.review` runs alone); docs/review.md."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from rlvr.review.items import ReviewError, resolve_review_dir

__all__ = ["review_app"]

review_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Human review: export a stratified slice, label it in the browser, import labels, compute stats.",
)
_console = Console(stderr=True)
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _fail(msg: str) -> NoReturn:
    _console.print(f"[bold red]error:[/] {msg}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _review_dir(path: Path) -> Path:
    try:
        return resolve_review_dir(path)
    except ReviewError as e:
        _fail(str(e))


@review_app.command("export")
def export_cmd(
    eval_dir: Annotated[Path, typer.Argument(help="Evaluation folder with samples.jsonl (and eval.json).")],
    items: Annotated[int | None, typer.Option(help="Slice size (default 100).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the tie-breaking permutation.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Review folder to write (default EVAL_DIR/review).")] = None,
    force: Annotated[bool, typer.Option(help="Replace a different slice even if labels exist.")] = False,
    n_old: Annotated[int | None, typer.Option("--n", hidden=True)] = None,
) -> None:
    """Pick a stratified slice of completions to label; writes slice.jsonl and export.json."""
    from rlvr.config import ConfigError, renamed_flag
    from rlvr.review.export import export_slice
    from rlvr.review.items import load_slice

    try:
        n = renamed_flag("--n", n_old, "--items", items)
        review_dir = export_slice(eval_dir, n=100 if n is None else n, seed=seed, out=out, force=force)
        export, _ = load_slice(review_dir)
    except (ReviewError, ConfigError) as e:
        _fail(str(e))
    assert export is not None  # export_slice has just written export.json
    print(f"wrote {export.n} of {export.n_population} completions to {review_dir / 'slice.jsonl'}")
    for dim, counts in export.strata_slice.items():
        print(f"  {dim:<13} " + "  ".join(f"{k}={v}" for k, v in counts.items()))


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            why = "already in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
            _fail(f"cannot listen on {host}:{port}: {why}")


@review_app.command("serve")
def serve_cmd(
    review_dir: Annotated[Path, typer.Argument(help="Review folder (or the evaluation folder above it).")],
    host: Annotated[str, typer.Option(help="Address to bind; keep 127.0.0.1 unless you mean to share.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0: any free one).", min=0, max=65535)] = 8765,
) -> None:
    """Start the labelling web app; labels go to labels.db in the review folder."""
    import uvicorn

    from rlvr.review.app import create_app

    folder = _review_dir(review_dir)
    loopback = host in _LOOPBACK
    if not loopback:
        _console.print(f"[yellow]warning:[/] binding {host}: anyone who can reach this port can write labels")
    try:
        app = create_app(folder, allowed_hosts=None if loopback else ["*"])
    except ReviewError as e:
        _fail(str(e))
    _check_port(host, port)
    print(
        f"reviewing {folder} at http://{host}:{port}/  (Ctrl-C to stop; every label is saved at once)",
        flush=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning")


@review_app.command("import")
def import_cmd(
    review_dir: Annotated[Path, typer.Argument(help="Review folder (or the evaluation folder above it).")],
    file: Annotated[Path, typer.Argument(help="Labels as .jsonl or .csv.")],
    reviewer: Annotated[str | None, typer.Option(help="Reviewer for rows that name none.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace different existing labels (kept in history).")] = False,
) -> None:
    """Import another reviewer's labels, validated; all rows or none are written."""
    from rlvr.review.items import load_slice
    from rlvr.review.labelfile import read_label_file
    from rlvr.review.store import DB_FILE, Conflict, LabelStore

    folder = _review_dir(review_dir)
    try:
        _, items = load_slice(folder)
        labels = read_label_file(file, {it.item_id for it in items}, reviewer)
        counts = LabelStore(folder / DB_FILE).import_labels(labels, source=f"import:{file.name}", overwrite=overwrite)
    except (ReviewError, Conflict) as e:
        _fail(str(e))
    print(f"imported {file}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))


@review_app.command("stats")
def stats_cmd(
    review_dir: Annotated[Path, typer.Argument(help="Review folder (or the evaluation folder above it).")],
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    n_resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 2000,
) -> None:
    """Reviewer agreement, verifier precision/recall and pass@1 on the labelled items: stats.json."""
    from rlvr.review.stats import write_stats

    folder = _review_dir(review_dir)
    if n_resamples < 1:
        _fail(f"--n-resamples must be >= 1, got {n_resamples}")
    try:
        path, s = write_stats(folder, seed=seed, n_resamples=n_resamples)
    except ReviewError as e:
        _fail(str(e))
    p1, v = s.headline.pass_at_1, s.verifiers.verifier
    print(f"{s.n_labelled} of {s.n_items} items labelled by {len(s.reviewers)} reviewer(s)")
    if s.n_labelled:
        fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        print(
            f"pass@1 verifier {fmt(p1.verifier.value)}  human {fmt(p1.human.value)}  "
            f"corrected {fmt(p1.corrected.value)}"
        )
        print(f"verifier precision {fmt(v.precision)}  recall {fmt(v.recall)}  kappa {fmt(v.kappa)}")
    print(f"wrote {path}")
