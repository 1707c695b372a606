"""`env:` in a train config: which environment class to build for each conversation, and its limits.

    env:
      factory: examples/calculator_env.py:Calculator   # or package.module:Class
      limits: {max_turns: 3, max_tool_calls: 4, max_total_tokens: 256}

The factory is your own code and runs in the trainer's process, as TRL's `environment_factory` does;
code the model writes runs in the jail (`rlvr.envs.python_tool`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from rlvr.envs.env import EnvLimits

__all__ = ["EnvSpec", "load_factory"]


class EnvSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    factory: str  # "file.py:Class" or "package.module:Class"
    limits: EnvLimits = EnvLimits()

    @field_validator("factory")
    @classmethod
    def _where(cls, v: str) -> str:
        where, sep, name = v.rpartition(":")
        if not sep or not where or not name.isidentifier():
            raise ValueError(f"{v!r}: give FILE.py:CLASS or MODULE:CLASS")
        if where.endswith(".py") and not Path(where).is_file():
            raise ValueError(f"{where}: no such file")
        return v


def load_factory(spec: str) -> Callable[[], Any]:
    """The class (or function) `spec` names; a ValueError that names it when it cannot be imported."""
    where, _, name = spec.rpartition(":")
    try:
        if where.endswith(".py"):
            path = Path(where).resolve()
            mod_name = f"rlvr_env_{path.stem}_{abs(hash(str(path)))}"
            module = sys.modules.get(mod_name)
            if module is None:
                loader = importlib.util.spec_from_file_location(mod_name, path)
                assert loader is not None and loader.loader is not None
                module = importlib.util.module_from_spec(loader)
                sys.modules[mod_name] = module  # pickling and dataclasses look the module up by name
                loader.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except Exception as e:  # noqa: BLE001 - the user's module: name it and what went wrong
        raise ValueError(f"env factory {spec}: cannot import {where}: {type(e).__name__}: {e}") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(f"env factory {spec}: {where} has no class or function {name!r}")
    return factory
