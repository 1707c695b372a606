"""GSM8K (Cobbe et al. 2021, MIT licence), vendored so that it loads offline: `load_gsm8k("test")`.

`load_jsonl(path)` reads any local JSONL in GSM8K's format (`question`, `answer` with `#### N`) or TRL's
conversational one (a `prompt` list of messages and an `answer`). A malformed line is a `DataError`
naming the file and line: nothing is silently skipped.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from rlvr.tasks.problem import GoldFormatError, Problem, Step, parse_gsm8k_solution
from rlvr.textfile import utf8_error

__all__ = ["DataError", "gsm8k_path", "jsonl_rows", "load_gsm8k", "load_jsonl", "unique_problems"]


class DataError(ValueError):
    """Bad input data; the message names file, line and field."""


def gsm8k_path(split: Literal["train", "test"]) -> Path:
    """Path of the vendored GSM8K split inside the installed package.

    >>> gsm8k_path("test").name
    'test.jsonl'
    """
    if split not in ("train", "test"):
        raise DataError(f"gsm8k has splits 'train' and 'test', not {split!r}")
    return Path(str(resources.files("rlvr.tasks") / "data" / "gsm8k" / f"{split}.jsonl"))


def _problem(row: Any, where: str, pid: str, source: str) -> Problem:
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object")
    conversational = "prompt" in row and "question" not in row
    messages = None
    if conversational:
        question, messages = _prompt(row["prompt"], where)
        answer = row.get("answer")
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = str(answer)
        if not isinstance(answer, str) or not answer.strip():
            raise DataError(f"{where}: field 'answer': missing or not a non-empty string or number")
    else:
        for key in ("question", "answer"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise DataError(f"{where}: field '{key}': missing or not a non-empty string")
        question, answer = row["question"].strip(), row["answer"]
    final = answer.strip()
    steps: list[Step] = []
    if "####" in answer or not conversational:  # TRL's format may give the bare final answer
        try:
            final, steps = parse_gsm8k_solution(answer)
        except GoldFormatError as e:
            raise DataError(f"{where}: field 'answer': {e}") from None
    return Problem(
        id=str(row.get("id", pid)),
        question=question,
        answer=final,
        steps=steps,
        source=source,
        solution=answer.strip(),
        messages=messages,
    )


def _prompt(prompt: Any, where: str) -> tuple[str, tuple[dict[str, str], ...] | None]:
    """The question and messages of TRL's `prompt`: a string or a list of {role, content} messages."""
    if isinstance(prompt, str) and prompt.strip():
        return prompt.strip(), None
    if isinstance(prompt, list) and prompt and all(_is_message(m) for m in prompt):
        messages = tuple({"role": m["role"], "content": m["content"]} for m in prompt)
        users = [m["content"] for m in messages if m["role"] == "user"]
        if not users:
            raise DataError(f"{where}: field 'prompt': no message with role 'user'")
        return users[-1].strip(), messages
    raise DataError(f"{where}: field 'prompt': expected a string or a list of {{role, content}} messages")


def _is_message(m: Any) -> bool:
    return isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)


def load_jsonl(path: str | Path, *, source: str | None = None, limit: int | None = None) -> list[Problem]:
    """Read GSM8K-format problems from a JSONL file (`question`, `answer` with a `#### N` line).

    >>> probs = load_jsonl(gsm8k_path("test"), limit=2)
    >>> probs[0].answer, probs[0].steps[0]
    ('18', Step(expr='16-3-4', result='9'))
    """
    path = Path(path)
    src = source or path.stem
    rows = [(n, _problem(row, where, f"{src}-{n - 1}", src)) for where, n, row in jsonl_rows(path, limit=limit)]
    return unique_problems(rows, path, "question, answer", limit)


def jsonl_rows(path: Path, *, limit: int | None = None) -> Iterator[tuple[str, int, Any]]:
    """(`file:line`, line number, parsed JSON) of each non-blank line, `limit` rows at most. A file that
    cannot be read, a line that is not UTF-8 or not JSON, is a DataError naming the file and line; a
    `.gz` file is read decompressed."""
    try:
        fh = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    n = 0
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if limit is not None and n >= limit:
                break
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(utf8_error(path, raw, e, first_line=lineno)) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{where}: invalid JSON: {e.msg}") from None
            n += 1
            yield where, lineno, row


def unique_problems(
    rows: list[tuple[int, Problem]], path: Path, fields: str, limit: int | None = None
) -> list[Problem]:
    """The problems of (line number, problem) rows read from `path`, refused when there are none or when
    an id repeats (a repeated id would pair the wrong problems downstream); `fields` names what a line
    holds, for the message."""
    first: dict[str, int] = {}
    for lineno, p in rows:
        if p.id in first:
            raise DataError(f"{path}:{lineno}: field 'id': {p.id!r} repeats line {first[p.id]}; ids must be unique")
        first[p.id] = lineno
    if not rows and limit != 0:
        raise DataError(f"{path}: no problems in it (one JSON object a line: {fields})")
    return [p for _, p in rows]


def load_gsm8k(split: Literal["train", "test"] = "test", *, limit: int | None = None) -> list[Problem]:
    """The vendored GSM8K split; ids are `gsm8k-<split>-<row>`.

    >>> [p.id for p in load_gsm8k("train", limit=2)]
    ['gsm8k-train-0', 'gsm8k-train-1']
    """
    return load_jsonl(gsm8k_path(split), source=f"gsm8k-{split}", limit=limit)
