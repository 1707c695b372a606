"""Read a user's text file as UTF-8, with a one-line error that names the file and line.

Configs, task files, verify files and reward files all come from users; a stray Latin-1 byte must be
`file:line: not UTF-8 text` (exit 2), never a `UnicodeDecodeError` traceback.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TextFileError", "read_text", "utf8_error"]


class TextFileError(ValueError):
    """A file that cannot be read as text; the message is one line naming file (and line)."""


def utf8_error(path: str | Path, data: bytes, e: UnicodeDecodeError, first_line: int = 1) -> str:
    """`path:line: not UTF-8 text (byte 0xe9 at column 7)` for a decode error at `e.start` of `data`
    (whose first line is line `first_line` of the file).

    >>> raw = b"ok\\nsteps: caf\\xe9\\n"
    >>> try:
    ...     raw.decode("utf-8")
    ... except UnicodeDecodeError as e:
    ...     print(utf8_error("run.yaml", raw, e))
    run.yaml:2: not UTF-8 text (byte 0xe9 at column 11); save the file as UTF-8
    """
    line = data.count(b"\n", 0, e.start) + first_line
    col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
    return f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at column {col}); save the file as UTF-8"


def read_text(path: str | Path) -> str:
    """The file's text; `TextFileError` (one line) when it is unreadable or not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TextFileError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TextFileError(utf8_error(path, data, e)) from None
