"""Weighted sums of rewards (`weighted_sum`, `combine`), and the registry that lets configs name
rewards (`REGISTRY`, `RewardSpec`, `build_reward`; docs/rewards.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rlvr.rewards.columns import RewardFn
from rlvr.rewards.format import format_gsm8k, format_r1, make_format_approx, make_format_exact
from rlvr.rewards.ifeval import make_ifeval
from rlvr.rewards.outcome import env_reward, outcome
from rlvr.rewards.process import make_hybrid, make_process

__all__ = ["RewardSpec", "REGISTRY", "build_reward", "combine", "weighted_sum", "RewardFn"]


class RewardSpec(BaseModel):
    """One reward in a config: a registry `name` with its `params`, or a function of the user's own
    `file` (docs/rewards.md), and its `weight` in the sum. A typo in `params` fails at load, not mid-run:

    >>> RewardSpec(name="process", params={"overlong": 1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for RewardSpec
    params
      Value error, reward 'process': ...unexpected keyword argument 'overlong'...
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = ""
    weight: float = Field(1.0, allow_inf_nan=False)
    params: dict[str, Any] = Field(default_factory=dict)
    file: str | None = None
    function: str = "reward"
    sandbox: bool = False

    @field_validator("file")
    @classmethod
    def _file_exists(cls, v: str | None) -> str | None:
        if v is None:
            return None
        p = Path(v).expanduser()
        if not p.is_file():
            raise ValueError(f"no such reward file: {v}")
        return str(p.resolve())

    @field_validator("params")
    @classmethod
    def _params_fit(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name", "")
        if name in REGISTRY:
            try:
                REGISTRY[name](dict(v))  # the factory checks its parameters; a typo fails here, not mid-run
            except (TypeError, ValueError) as e:
                raise ValueError(f"reward {name!r}: {e}") from None
        return v

    @model_validator(mode="after")
    def _one_source(self) -> RewardSpec:
        if self.file is None:
            if self.name not in REGISTRY:
                raise ValueError(f"unknown reward {self.name!r}; known: {', '.join(sorted(REGISTRY))} (or give file:)")
            if self.sandbox or self.function != "reward":
                raise ValueError("'function' and 'sandbox' go with 'file'")
        elif self.params:
            raise ValueError("'params' are for built-in rewards; a file's function gets the dataset columns")
        return self

    @property
    def label(self) -> str:
        """The reward's name in metrics (`reward/<label>/mean`)."""
        return self.name or self.function


def _tags(params: dict[str, Any]) -> tuple[str, str]:
    return tuple(params.get("tags", ("thinking", "solution")))  # type: ignore[return-value]


# name -> factory(params) -> reward function. Factories, so each config gets its own parameters.
REGISTRY: dict[str, Callable[[dict[str, Any]], RewardFn]] = {
    "outcome": lambda p: outcome,
    "env_reward": lambda p: env_reward,
    "format_exact": lambda p: make_format_exact(_tags(p)),
    "format_approx": lambda p: make_format_approx(_tags(p)),
    "format_gsm8k": lambda p: format_gsm8k,
    "format_r1": lambda p: format_r1,
    "process": lambda p: make_process(**p),
    "hybrid": lambda p: make_hybrid(**p),
    "ifeval_partial": lambda p: make_ifeval("partial", **p),
    "ifeval_all": lambda p: make_ifeval("all", **p),
    "tests_passed": lambda p: _tests_passed(**p),
}


def _tests_passed() -> RewardFn:
    from rlvr.rewards.code import tests_passed  # the code harness and its jail load only when asked for

    return tests_passed


def build_reward(spec: RewardSpec) -> RewardFn:
    """The reward function a spec names; an unknown name raises KeyError listing the known ones.

    >>> build_reward(RewardSpec(name="format_gsm8k"))(["<<2+3=5>>5\\n#### 5"])
    [1.0]
    """
    if spec.file is not None:
        raise ValueError(f"{spec.file}: a file reward is built by the trainer's reward runner (rlvr.grpo.rewarding)")
    if spec.name not in REGISTRY:
        raise KeyError(f"unknown reward {spec.name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[spec.name](dict(spec.params))


def weighted_sum(columns: Sequence[Sequence[float | None]], weights: Sequence[float]) -> list[float | None]:
    """Per item i, `sum_j w_j * v_ji` of J parts' value columns (J lists of N items), `None` where any
    part's value is None or not finite. The one combiner: `combine`, the trainer's `RewardRunner` and
    reward search's `EnsembleReward` all sum through it.

    >>> weighted_sum([[1.0, 0.0, None, 1.0], [0.5, 1.0, 1.0, float("nan")]], [1.0, 0.25])
    [1.125, 0.25, None, None]
    """
    if len(columns) != len(weights):
        raise ValueError(f"{len(columns)} value columns but {len(weights)} weights")
    out: list[float | None] = []
    for values in zip(*columns, strict=True):
        if any(v is None or not math.isfinite(v) for v in values):
            out.append(None)
        else:
            out.append(sum(w * v for v, w in zip(values, weights, strict=True)))  # type: ignore[operator]
    return out


def combine(parts: Sequence[tuple[RewardFn, float]]) -> RewardFn:
    """Weighted sum `sum_j w_j * f_j` of reward functions (`weighted_sum`).

    >>> from rlvr.rewards import outcome, format_gsm8k
    >>> f = combine([(outcome, 1.0), (format_gsm8k, 0.1)])
    >>> f(["#### 5", "five"], answer=["5", "5"])
    [1.1, 1.0]
    """

    def combined(completions: list[Any], **kwargs: Any) -> list[float | None]:
        return weighted_sum([f(completions, **kwargs) for f, _ in parts], [w for _, w in parts])

    return combined
