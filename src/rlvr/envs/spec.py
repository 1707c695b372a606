"""`env:` in a train config: which environment class to build for each conversation (`factory`:
`FILE.py:CLASS` or `MODULE:CLASS`) and its `limits` (docs/environments.md has an example).

The factory is your own code and runs in the trainer's process, as TRL's `environment_factory` does;
code the model writes runs in the jail (`rlvr.envs.python_tool`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from rlvr.config import SamplingConfig
from rlvr.envs.env import Conversation, EnvLimits
from rlvr.envs.rollout import ChatRenderer, Trajectory, run_conversations
from rlvr.tasks import Problem, PromptFormatter

__all__ = ["EnvRunner", "EnvSpec", "load_factory"]


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


def load_factory(spec: str) -> Callable[..., Any]:
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


@dataclass
class EnvRunner:
    """Conversations for problems: `n` per problem, each with a fresh environment (`spec.factory`)
    reset with the problem's row (question, answer, problem_id, steps and its meta), run
    token-in/token-out (`rlvr.envs.rollout`). Training and evaluation both use it."""

    spec: EnvSpec
    renderer: ChatRenderer
    factory: Callable[..., Any]

    @classmethod
    def build(cls, spec: EnvSpec, tok: Any, fmt: PromptFormatter, system_prompt: str | None) -> EnvRunner:
        """Imports the factory now, so a bad one fails before any run folder is touched."""
        return cls(spec, ChatRenderer(tok, sorted(fmt.end_ids), system_prompt), load_factory(spec.factory))

    def start(self, p: Problem) -> Conversation:
        """A conversation on `p` with a fresh environment, reset with the problem's row."""
        row = {"question": p.question, "answer": p.answer, "problem_id": p.id, "steps": p.steps, **p.meta}
        first = [dict(m) for m in p.messages] if p.messages else [{"role": "user", "content": p.question}]
        return Conversation.start(self.factory(), row, first, self.spec.limits)

    def demonstrate(self, tok: Any, p: Problem, turns: list[str], end_id: int) -> Trajectory:
        """A scripted conversation on `p` as a rollout would have held it: each assistant turn's text
        tokenised and ended with `end_id`, the environment's replies rendered as in a rollout (SFT
        demonstrations). A turn the environment cannot run is a ValueError naming the problem."""
        c = self.start(p)
        t = Trajectory(self.renderer.prompt(c.messages, c.schemas()), conversation=c)
        for text in turns:
            ids = tok(text, add_special_tokens=False)["input_ids"] + [end_id]
            t.turns.append((len(t.ids), len(t.ids) + len(ids)))
            t.ids += ids
            t.mask += [1] * len(ids)
            obs = c.step(text)
            if c.errors:
                raise ValueError(f"demonstration of {p.id}: the environment refused a call ({dict(c.errors)})")
            if obs is None:
                break
            o = self.renderer.observation(obs, c.schemas())
            t.ids += o
            t.mask += [0] * len(o)
        if len(t.turns) < len(turns) or c.ended_by != "answer" or len(t.ids) > self.spec.limits.max_total_tokens:
            why = c.ended_by if c.ended_by != "answer" else f"{len(t.ids)} tokens"
            raise ValueError(f"demonstration of {p.id}: its {len(turns)} turns do not fit env limits ({why})")
        return t

    def run(
        self, model: Any, tok: Any, probs: list[Problem], n: int, sampling: SamplingConfig, **kwargs: Any
    ) -> tuple[list[Conversation], list[Trajectory]]:
        """`n` conversations per problem, run to their end by `run_conversations`, which gets `kwargs`
        (the engine, the seed or generator, data parallelism)."""
        convs = [self.start(p) for p in probs for _ in range(n)]
        end_ids = sorted(self.renderer.end_ids)
        return convs, run_conversations(model, tok, convs, sampling, end_ids=end_ids, renderer=self.renderer, **kwargs)
