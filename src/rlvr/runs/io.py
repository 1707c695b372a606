"""Reading and writing the files of a run folder: one NaN policy (written as null), one error style
(`RunFileError`), a `schema_version` in every JSON file, and atomic writes (a temporary file renamed
over the target); docs/outputs.md has the rules.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "SCHEMA_VERSION",
    "RunFileError",
    "append_jsonl",
    "check_schema",
    "clean",
    "iter_jsonl",
    "read_json",
    "read_jsonl",
    "read_yaml",
    "write_json",
    "write_jsonl",
]

SCHEMA_VERSION = 1


class RunFileError(ValueError):
    """A run-folder file that cannot be read; the message is one line naming the file (and line or field)."""


def clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None, paths strings, tuples and sets lists, keys strings,
    numpy scalars Python numbers.

    >>> clean({"a": float("nan"), "b": (1, float("inf")), 2: Path("x")})
    {'a': None, 'b': [1, None], '2': 'x'}
    """
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        value = value.item()  # a numpy scalar (np.bool_ is not JSON; np.float64 NaN must become null)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def check_schema(path: Path, data: dict[str, Any]) -> None:
    """RunFileError when the file's schema version (1 when absent) is not one this rlvr reads."""
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RunFileError(f"{path}: field 'schema_version': expected a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise RunFileError(
            f"{path}: schema version {version} is newer than this rlvr reads ({SCHEMA_VERSION}); "
            "upgrade rlvr to read it"
        )


def _read_text(path: Path) -> str:
    """The file's UTF-8 text; a missing, unreadable or non-UTF-8 file is one RunFileError line."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except OSError as e:
        raise RunFileError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise RunFileError(f"{path}: not UTF-8 text (byte {e.start})") from None


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON object from `path`, its schema version checked."""
    path = Path(path)
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise RunFileError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path}: expected a JSON object")
    check_schema(path, data)
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from `path` (a run's config.yaml)."""
    path = Path(path)
    try:
        data = yaml.safe_load(_read_text(path))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise RunFileError(f"{where}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path}: expected a YAML mapping")
    return data


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` for each non-blank line of a JSONL file; a line that is not a JSON
    object raises RunFileError naming file and line."""
    path = Path(path)
    for i, line in enumerate(_read_text(path).split("\n"), 1):  # not splitlines: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise RunFileError(f"{path}:{i}: invalid JSON: {e.msg}") from None
        if not isinstance(row, dict):
            raise RunFileError(f"{path}:{i}: expected a JSON object, got {type(row).__name__}")
        yield i, row


def read_jsonl(path: str | Path, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    """Every object of a JSONL file (blank lines skipped); a bad line raises RunFileError naming file
    and line. A missing file is an error, or no rows with `missing_ok`."""
    if missing_ok and not Path(path).exists():
        return []
    return [row for _, row in iter_jsonl(path)]


def _replace(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_json(path: str | Path, obj: dict[str, Any]) -> Path:
    """Write a JSON object atomically, cleaned, with `schema_version` first."""
    body = {"schema_version": SCHEMA_VERSION, **obj}
    return _replace(Path(path), json.dumps(clean(body), indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows as JSONL atomically (one cleaned object per line)."""
    return _replace(Path(path), "".join(json.dumps(clean(r), ensure_ascii=False) + "\n" for r in rows))


def append_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    """Append cleaned rows to a JSONL file and flush, so a crash loses nothing already logged."""
    with Path(path).open("a", encoding="utf-8") as fh:  # closing flushes
        fh.writelines(json.dumps(clean(r), ensure_ascii=False) + "\n" for r in rows)
