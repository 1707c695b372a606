"""Tools: typed Python functions the model calls by name, their JSON schemas (`tool_schema`), the
parsing of one assistant turn's calls in the Hermes or the Llama 3.1 JSON form (`parse_tool_calls`), and
running a call so that nothing it does can crash a rollout (`call_tool`: every failure comes back as an
error text for the model, `ToolResult.error` saying which kind, never as an exception).
"""

from __future__ import annotations

import concurrent.futures
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError, validate_call

__all__ = ["ToolCall", "ToolFormat", "ToolResult", "call_tool", "parse_tool_calls", "tool_schema", "tool_text"]

ToolFormat = Literal["hermes", "llama3_json"]
ErrorKind = Literal["malformed", "unknown_tool", "bad_arguments", "exception", "timeout"]

_HERMES = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.S)
_PYTHON_TAG = "<|python_tag|>"


@dataclass(frozen=True)
class ToolCall:
    """One parsed call: the tool's name and its arguments, or why it could not be read (`error`)."""

    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # a malformed call: what was wrong with it
    id: str = ""

    def message(self) -> dict[str, Any]:
        """The call as a chat message's `tool_calls` entry (OpenAI/transformers form)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class ToolResult:
    """What a call returned, as the text the model reads; `error` is the kind of failure, if any."""

    name: str
    content: str
    error: ErrorKind | None = None


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema of a typed function with a Google-style docstring (transformers' `get_json_schema`).

    >>> def add(a: int, b: int) -> int:
    ...     '''Add two integers.
    ...
    ...     Args:
    ...         a: the first
    ...         b: the second
    ...     '''
    ...     return a + b
    >>> s = tool_schema(add)["function"]; s["name"], s["parameters"]["required"]
    ('add', ['a', 'b'])
    """
    from transformers.utils import get_json_schema

    return get_json_schema(fn)


def _call_from(obj: Any, args_key: tuple[str, ...]) -> ToolCall:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ToolCall(error='a tool call is a JSON object with a string "name"')
    args: Any = next((obj[k] for k in args_key if k in obj), {})
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except json.JSONDecodeError as e:
            return ToolCall(name=obj["name"], error=f"arguments are not valid JSON: {e.msg}")
    if not isinstance(args, dict):
        return ToolCall(name=obj["name"], error="arguments must be a JSON object")
    return ToolCall(name=obj["name"], arguments=args)


def parse_tool_calls(text: str, fmt: ToolFormat = "hermes") -> list[ToolCall]:
    """The tool calls of one assistant turn, in order; a call that cannot be read is a `ToolCall` with
    `error` set (the model is told), and a turn without calls gives [].

    >>> [c.name for c in parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')]
    ['add']
    >>> parse_tool_calls('<tool_call>{"name": "add", "arguments": </tool_call>')[0].error
    'not valid JSON: Expecting value at char 28'
    >>> parse_tool_calls('{"name": "add", "parameters": {"a": 1, "b": 2}}', "llama3_json")[0].arguments
    {'a': 1, 'b': 2}
    """
    if fmt == "hermes":
        calls = []
        for m in _HERMES.finditer(text):
            body = m.group(1).strip()
            if not m.group(2):
                calls.append(ToolCall(error="<tool_call> without </tool_call>"))
                continue
            try:
                calls.append(_call_from(json.loads(body), ("arguments", "parameters")))
            except json.JSONDecodeError as e:
                calls.append(ToolCall(error=f"not valid JSON: {e.msg} at char {e.pos}"))
        return [ToolCall(c.name, c.arguments, c.error, f"call_{i}") for i, c in enumerate(calls)]
    body = text.strip().removeprefix(_PYTHON_TAG).strip()
    if not body.startswith("{"):
        return []
    try:
        obj, _ = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as e:
        return [ToolCall(error=f"not valid JSON: {e.msg} at char {e.pos}", id="call_0")]
    c = _call_from(obj, ("parameters", "arguments"))
    return [ToolCall(c.name, c.arguments, c.error, "call_0")]


def tool_text(value: Any, max_chars: int = 2000) -> str:
    """A tool's return value as the text the model reads: strings as they are, the rest as JSON (or
    repr), cut to `max_chars`."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= max_chars else text[:max_chars] + f"... [{len(text) - max_chars} characters cut]"


_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="rlvr-tool")


def call_tool(
    tools: dict[str, Callable[..., Any]], call: ToolCall, *, timeout_s: float = 10.0, max_chars: int = 2000
) -> ToolResult:
    """Run one call; every failure is a `ToolResult` whose text tells the model what went wrong.

    Arguments are validated against the tool's type hints (pydantic's `validate_call`, which also
    converts "3" to 3 for an `int`). A tool that runs past `timeout_s` is abandoned (its thread keeps
    running; tools that run untrusted code go through `rlvr.envs.python_tool`'s jail, which kills it).
    """
    if call.error is not None:
        return ToolResult(call.name, f"Error: malformed tool call: {call.error}", "malformed")
    fn = tools.get(call.name)
    if fn is None:
        known = ", ".join(sorted(tools)) or "none"
        return ToolResult(call.name, f"Error: unknown tool {call.name!r} (tools: {known})", "unknown_tool")
    try:
        inspect.signature(fn).bind(**call.arguments)
    except TypeError as e:
        return ToolResult(call.name, f"Error: bad arguments for {call.name}: {e}", "bad_arguments")
    checked = validate_call(fn)
    future = _POOL.submit(checked, **call.arguments)
    try:
        value = future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        return ToolResult(call.name, f"Error: {call.name} took longer than {timeout_s:g} s", "timeout")
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        return ToolResult(call.name, f"Error: bad arguments for {call.name}: {where}: {err['msg']}", "bad_arguments")
    except Exception as e:  # noqa: BLE001 - a tool's own failure is the model's to read
        return ToolResult(call.name, f"Error: {type(e).__name__}: {e}", "exception")
    return ToolResult(call.name, tool_text(value, max_chars))
