"""The environment protocol: what a multi-turn task is, and one conversation's state as it runs.

An environment is any object with `reset(**row)` (TRL's `environment_factory` convention, so a class
written for TRL runs here unchanged; an example in docs/environments.md). Its public methods other than
`reset` and `get_reward` are its tools; an optional `get_reward()` is one more reward.

`Conversation.step(assistant_text)` parses the turn's tool calls and returns the tool messages to send
back, or None when the conversation is over (a turn without calls is the answer; the turn and
tool-call limits end it too). A failed call is a message to the model and a count in `errors`, never
an exception.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from rlvr.envs.tools import ToolFormat, call_tool, parse_tool_calls, tool_schema

__all__ = ["Conversation", "EnvLimits", "Environment", "env_tools"]

_NOT_TOOLS = {"reset", "get_reward"}


@runtime_checkable
class Environment(Protocol):
    """TRL's `environment_factory` convention: `reset(**row)`; public methods are tools."""

    def reset(self, **row: Any) -> str | None: ...


class EnvLimits(BaseModel):
    """How far one conversation may go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(4, ge=1)  # assistant turns
    max_tool_calls: int = Field(8, ge=0)  # calls over the whole conversation; more are refused
    max_turn_tokens: int | None = Field(None, ge=1)  # per assistant turn (None: sampling.max_new_tokens)
    max_total_tokens: int = Field(512, ge=1)  # after the prompt: model and environment tokens together
    tool_timeout_s: float = Field(10.0, gt=0, allow_inf_nan=False)
    max_tool_chars: int = Field(2000, ge=1)  # a tool result longer than this is cut
    tool_format: ToolFormat = "hermes"


def env_tools(env: Any) -> dict[str, Callable[..., Any]]:
    """The environment's tools: its public methods other than `reset` and `get_reward`, by name."""
    out = {}
    for name, member in inspect.getmembers(type(env), callable):
        if name.startswith("_") or name in _NOT_TOOLS or isinstance(member, type):
            continue
        out[name] = getattr(env, name)
    return out


@dataclass
class Conversation:
    """One conversation with one environment: its messages and counts so far."""

    env: Any
    messages: list[dict[str, Any]]
    limits: EnvLimits
    tools: dict[str, Callable[..., Any]] = field(default_factory=dict)
    turns: int = 0
    tool_calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    done: bool = False
    ended_by: str = ""  # answer, max_turns, budget, truncated
    n_prompt: int = 0  # messages before the first assistant turn

    @classmethod
    def start(cls, env: Any, row: dict[str, Any], messages: list[dict[str, Any]], limits: EnvLimits) -> Conversation:
        """`env.reset(**row)`; a text it returns is appended to the last user message."""
        extra = env.reset(**row)
        msgs = [dict(m) for m in messages]
        if isinstance(extra, str) and extra:
            last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
            msgs[last]["content"] = f"{msgs[last]['content']}\n\n{extra}"
        return cls(env, msgs, limits, env_tools(env), n_prompt=len(msgs))

    def schemas(self) -> list[dict[str, Any]]:
        return [tool_schema(fn) for fn in self.tools.values()]

    def step(self, text: str) -> list[dict[str, Any]] | None:
        """Take the assistant's turn; the tool messages to send back, or None when it is over."""
        self.turns += 1
        calls = parse_tool_calls(text, self.limits.tool_format)
        turn: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            turn["tool_calls"] = [c.message() for c in calls if c.error is None]
        self.messages.append(turn)
        if not calls:
            self._end("answer")
            return None
        if self.turns >= self.limits.max_turns:  # no turn left to read the results in
            self._end("max_turns")
            return None
        out = []
        for c in calls:
            if self.tool_calls >= self.limits.max_tool_calls:
                self.errors["over_limit"] += 1
                out.append({"role": "tool", "name": c.name, "content": "Error: tool call limit reached; answer now"})
                continue
            self.tool_calls += 1
            res = call_tool(self.tools, c, timeout_s=self.limits.tool_timeout_s, max_chars=self.limits.max_tool_chars)
            if res.error is not None:
                self.errors[res.error] += 1
            out.append({"role": "tool", "name": res.name, "content": res.content})
        self.messages += out
        return out

    def _end(self, why: str) -> None:
        self.done, self.ended_by = True, why

    def end(self, why: str) -> None:
        """End it from outside (the token budget ran out, a turn was cut at its token limit)."""
        if not self.done:
            self._end(why)

    @property
    def reply(self) -> list[dict[str, Any]]:
        """The conversation after the prompt (TRL's conversational completion)."""
        return self.messages[self.n_prompt :]

    @property
    def answer(self) -> str:
        """The last assistant turn's text: what the task's verifier judges."""
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "assistant"), "")

    @property
    def valid_calls(self) -> int:
        """Calls that ran and returned (no malformed, unknown, bad-argument, failed or timed-out one)."""
        failed = sum(v for k, v in self.errors.items() if k != "over_limit")
        return self.tool_calls - failed
