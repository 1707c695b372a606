"""Environments: multi-turn conversations with tools, rolled out token-in/token-out.

`env` holds the protocol (TRL's `environment_factory` convention: `reset(**row)`, public methods as
tools, optional `get_reward()`) and `Conversation`, one conversation's state; `tools` turns typed
functions into JSON schemas, parses tool calls (Hermes, Llama 3.1 JSON) and runs them so that no
failure crashes a rollout; `rollout` runs conversations through any engine and keeps the exact
sampled token ids plus the environment's, with a loss mask of 0 over the environment's
(docs/environments.md).
"""

from rlvr.envs.env import Conversation, Environment, EnvLimits, env_tools
from rlvr.envs.rollout import ChatRenderer, RenderError, Trajectory, run_conversations
from rlvr.envs.spec import EnvRunner, EnvSpec, load_factory
from rlvr.envs.tools import ToolCall, ToolResult, call_tool, parse_tool_calls, tool_schema, tool_text

__all__ = [
    "ChatRenderer",
    "Conversation",
    "EnvLimits",
    "EnvRunner",
    "EnvSpec",
    "Environment",
    "RenderError",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "call_tool",
    "env_tools",
    "load_factory",
    "parse_tool_calls",
    "run_conversations",
    "tool_schema",
    "tool_text",
]
