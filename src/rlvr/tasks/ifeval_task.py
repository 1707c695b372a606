"""The `ifeval` task: follow verifiable instructions ("answer in fewer than 50 words, all lowercase").
IFEval's 541 prompts (Zhou et al. 2023, Apache-2.0) are vendored as the test split; train and dev are
prompts rlvr generates (`rlvr.verify.ifeval.generate_prompts`: seeded, its own base requests times the
25 instruction types, disjoint from the test prompts), or any JSONL of `prompt` + `instruction_id_list`
+ `kwargs` (IFEval's format) as `ifeval_file`. A completion is correct when it follows every instruction
of its prompt (IFEval's strict prompt-level accuracy); the rewards `ifeval_partial` and `ifeval_all`
score the share met. Rules: docs/instructions.md; the task: docs/tasks.md.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rlvr.tasks.gsm8k import DataError, jsonl_rows, unique_problems
from rlvr.tasks.problem import Problem
from rlvr.tasks.task import Split, Task, hashed_split, register
from rlvr.verify import Verdict
from rlvr.verify.ifeval import REGISTRY, check_prompt, generate_prompts
from rlvr.verify.probes import Probe

__all__ = ["IfevalParams", "IfevalTask", "ifeval_path", "load_ifeval_jsonl"]


def ifeval_path() -> Path:
    """The vendored IFEval prompts inside the installed package.

    >>> ifeval_path().name
    'input_data.jsonl'
    """
    return Path(str(resources.files("rlvr.tasks") / "data" / "ifeval" / "input_data.jsonl"))


def _problem(row: Any, where: str, source: str, mode: str = "strict") -> Problem:
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object")
    prompt, ids, kwargs = row.get("prompt"), row.get("instruction_id_list"), row.get("kwargs")
    if not isinstance(prompt, str) or not prompt.strip():
        raise DataError(f"{where}: field 'prompt': missing or not a non-empty string")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i in REGISTRY for i in ids):
        raise DataError(f"{where}: field 'instruction_id_list': a non-empty list of IFEval instruction ids")
    kwargs = kwargs if kwargs is not None else [{} for _ in ids]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids) or not all(isinstance(k, dict | None) for k in kwargs):
        raise DataError(f"{where}: field 'kwargs': one object per instruction id")
    columns = {"instruction_id_list": list(ids), "kwargs": [k or {} for k in kwargs], "prompt": prompt, "mode": mode}
    pid = str(row.get("key", where))
    return Problem(pid, prompt, ", ".join(ids), [], source, columns=columns)


def load_ifeval_jsonl(path: Path, *, limit: int | None = None, mode: str = "strict") -> list[Problem]:
    """Problems of an IFEval-format JSONL (`prompt`, `instruction_id_list`, `kwargs`; `key` kept as id),
    judged in IFEval's `mode` ("strict" or "loose")."""
    rows = [(n, _problem(row, where, str(path), mode)) for where, n, row in jsonl_rows(path, limit=limit)]
    return unique_problems(rows, path, "prompt, instruction_id_list, kwargs", limit)


class IfevalParams(BaseModel):
    """The `ifeval` task's load settings: `ifeval_file` replaces the generated train/dev prompts with a
    file of your own (dev: the 5% whose prompt hashes into bucket < 5); `n_generated` is how many
    prompts a generated split holds when `n` is not given; `mode` is IFEval's scoring that `verify` (and so
    pass@k, `rlvr compare` and the outcome reward) uses: "strict", or "loose" (any of IFEval's 8 variants)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ifeval_file: str | None = None
    n_generated: int = Field(2000, ge=1, le=100_000)
    mode: Literal["strict", "loose"] = "strict"  # IFEval's scoring of a response (loose: its 8 variants)


class IfevalTask(Task):
    """Instruction following: `test` is IFEval's 541 prompts; `train` and `dev` are generated (or
    `ifeval_file`). `verify` is IFEval's strict prompt-level rule."""

    name = "ifeval"
    params = IfevalParams
    columns = ("instruction_id_list", "kwargs", "prompt", "mode")

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        if split == "test":
            return load_ifeval_jsonl(ifeval_path(), limit=n, mode=params.mode)
        if params.ifeval_file is not None:
            return hashed_split(load_ifeval_jsonl(Path(params.ifeval_file), mode=params.mode), split, n)
        rows = generate_prompts(split, n if n is not None else params.n_generated, seed)  # type: ignore[arg-type]
        src = f"rlvr-ifeval-{split}"
        return [_problem(r, f"generated {split} prompt {i}", src, params.mode) for i, r in enumerate(rows)]

    def verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """Correct when the completion follows every instruction (in the problem's `mode`, strict by
        default); `parsed` says how many it met."""
        ids, kwargs = columns["instruction_id_list"], columns["kwargs"]
        loose = columns.get("mode") == "loose"
        v = check_prompt(completion, list(ids), list(kwargs), str(columns.get("prompt", "")))
        ok = [i.loose if loose else i.strict for i in v.instructions]
        if not completion.strip():
            return Verdict(False, None, "empty response", "unparseable_answer")
        failed = [f"{i}: {r.reason}" for i, r, good in zip(ids, v.instructions, ok, strict=True) if not good]
        passed = all(ok)
        reason = "correct" if passed else "; ".join(failed)[:300]
        return Verdict(passed, f"{sum(ok)}/{len(ids)} instructions", reason, "correct" if passed else "wrong")

    def strict_verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """IFEval's strict mode whatever `mode` the prompts were loaded with (the audit's re-verification)."""
        return self.verify(completion, gold, **{**columns, "mode": "strict"})

    def probes(self, problem: Problem) -> list[Probe]:
        """Instruction probes need the prompt's constraints, not a gold string (`rlvr.verify.ifeval.hack_probes`)."""
        return []


register(IfevalTask())
