"""Environments: multi-turn conversations with tools, rolled out token-in/token-out (docs/environments.md).

`env` holds the protocol and `Conversation`; `tools` the tools' schemas, call parsing and running;
`rollout` the token-in/token-out conversations with a loss mask of 0 over the environment's tokens.
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
