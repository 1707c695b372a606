"""Typed configs: one pydantic model per command, loaded from YAML (`load_config`), overridden by CLI
flags. A bad key or value raises `ConfigError`, one line naming the file, the line (when the value came
from YAML) and the field, which the CLI prints before exiting 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from rlvr.tasks.prompt import PromptFormat
from rlvr.textfile import TextFileError, read_text
from rlvr.trackers import TrackerName, check_installed

__all__ = [
    "ConfigError",
    "ReportTo",
    "RolloutConfig",
    "SamplingConfig",
    "Overrides",
    "StrictModel",
    "load_config",
    "partial_model",
    "dump_config",
    "load_yaml_mapping",
    "renamed_flag",
    "check_device",
    "PositiveFloat",
    "NonNegativeFloat",
    "Seed",
    "Threads",
    "Device",
]

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A config problem, with a one-line message naming file, line and field."""


class StrictModel(BaseModel):
    """Base for command configs: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Overrides(StrictModel):
    """Some fields of another command's config (`partial_model`): what a search or study sets under
    `train:` for every run it starts."""

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return moved_to_sampling(data)  # as the full command configs refuse them, with the new key

    def values(self) -> dict[str, Any]:
        """The fields given, as plain values (nested settings too: only what was given)."""
        return self.model_dump(mode="json", exclude_unset=True)

    @model_serializer(mode="wrap")
    def _given_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Written (config.yaml, results.json) with the fields given only, so that it reads back the same."""
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


def partial_model(model: type[BaseModel], name: str, module: str | None = None) -> type[Overrides]:
    """`model` with every field optional (default None: not given), typed and constrained as there, so
    that a typo or an out-of-range value is caught where it is written. Validators of `model` that look at
    several fields at once run when the full config is built (`load_config(model, ...)`). `module`: where
    the new class is bound (default `model`'s module), so that it pickles (search workers receive it)."""
    from pydantic import create_model

    def optional(f: Any) -> Any:
        constrained = Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation
        return Optional[constrained]  # noqa: UP045 - a runtime type, built from values

    fields: dict[str, Any] = {n: (optional(f), None) for n, f in model.model_fields.items()}
    doc = f"Any fields of `{model.__name__}`; those not given keep the command's defaults."
    return create_model(name, __base__=Overrides, __module__=module or model.__module__, __doc__=doc, **fields)  # type: ignore[call-overload,no-any-return]


def _device(v: str) -> str:
    """`cpu`, `cuda`, `cuda:N` or `mps` (whether this machine has it is `check_device`'s question:
    a GPU config must still load on a laptop)."""
    import re

    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", v):
        raise ValueError(f"unknown device {v!r}: use cpu, cuda, cuda:N or mps")
    return v


def check_device(device: str) -> None:
    """Refuse, before a command starts work, a CUDA device that this torch cannot see (ConfigError)."""
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"field 'device': {device!r}: this torch sees no CUDA device (torch {torch.__version__})")


# Shared field types: a value that torch or transformers would only reject mid-run (or silently
# accept) is refused when the config loads, naming the field.
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]  # what torch.manual_seed takes
Threads = Annotated[Optional[int], Field(ge=1)]  # noqa: UP045 - pydantic evaluates this at runtime
Device = Annotated[str, AfterValidator(_device)]


class SamplingConfig(StrictModel):
    """How completions are sampled and prompted: one sub-config (`sampling:`) shared by train, eval,
    sft (which uses its prompt settings) and search screening; field by field in docs/train.md."""

    max_new_tokens: int = Field(64, ge=1)
    temperature: float = Field(1.0, gt=0, allow_inf_nan=False)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=0)
    stop: list[str] = []
    prompt_format: PromptFormat = "auto"
    system_prompt: str | None = None
    max_prompt_tokens: int | None = Field(None, ge=1)  # None: the model's context minus max_new_tokens

    @model_validator(mode="after")
    def _stops_nonempty(self) -> SamplingConfig:
        if any(not s for s in self.stop):
            raise ValueError("stop strings must be non-empty")
        return self


class RolloutConfig(StrictModel):
    """Which engine samples rollouts (train) and completions (eval): `auto`, `hf`, `fast` or `vllm`, whose
    other fields go to `vllm.LLM` (docs/train.md, `rollout.*`)."""

    engine: Literal["auto", "hf", "fast", "vllm"] = "auto"
    gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    enforce_eager: bool = True
    max_model_len: int | None = Field(None, ge=1)
    vllm_kwargs: dict[str, Any] = {}  # any other `vllm.LLM` argument, e.g. {kv_cache_memory_bytes: 268435456}


# `report_to: [tensorboard, trackio, wandb, mlflow]` (rlvr.trackers): refused when read if one is not installed
ReportTo = Annotated[list[TrackerName], AfterValidator(check_installed)]

_MOVED_TO_SAMPLING = ("max_new_tokens", "temperature", "top_p")


def moved_to_sampling(data: Any) -> Any:
    """A `model_validator(mode="before")` body: the sampling keys that used to sit at the top of a
    command's config are refused with the key that replaced them (`sampling.max_new_tokens`)."""
    if isinstance(data, dict):
        for key in _MOVED_TO_SAMPLING:
            if key in data:
                raise ValueError(f"'{key}' is now 'sampling.{key}' (one sampling sub-config for every command)")
    return data


def _key_lines(node: yaml.Node, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """Map each dotted key path of a YAML mapping to its 1-based line."""
    out: dict[tuple[str, ...], int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = (*prefix, str(key_node.value))
            out[path] = key_node.start_mark.line + 1
            out.update(_key_lines(value_node, path))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = (*prefix, str(i))
            out[path] = item.start_mark.line + 1
            out.update(_key_lines(item, path))
    return out


MAX_YAML_VALUES = 100_000  # a config is a few hundred values; nested aliases can expand to billions


def _check_nodes(node: yaml.Node, path: Path) -> None:
    """Refuse duplicate keys (YAML keeps the last one silently) and documents whose aliases expand
    past MAX_YAML_VALUES values (a "billion laughs" file would hang validation), in linear time."""
    sizes: dict[int, int] = {}

    def size(n: yaml.Node) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        sizes[id(n)] = 1  # a recursive alias counts once
        total = 1
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int] = {}
            for k, v in n.value:
                line = k.start_mark.line + 1
                if isinstance(k, yaml.ScalarNode) and k.value in seen:
                    raise ConfigError(f"{path}:{line}: duplicate key {k.value!r} (first on line {seen[k.value]})")
                if isinstance(k, yaml.ScalarNode):
                    seen[k.value] = line
                total += size(k) + size(v)
        elif isinstance(n, yaml.SequenceNode):
            total += sum(size(item) for item in n.value)
        if total > MAX_YAML_VALUES:
            raise ConfigError(
                f"{path}:{n.start_mark.line + 1}: expands to over {MAX_YAML_VALUES} values (nested aliases)"
            )
        sizes[id(n)] = total
        return total

    size(node)


def load_yaml_mapping(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """Read a YAML mapping and the line of every key; raise ConfigError naming the file otherwise."""
    try:
        text = read_text(path)
    except TextFileError as e:
        raise ConfigError(str(e)) from None
    try:
        node = yaml.compose(text)
        if node is not None:
            _check_nodes(node, path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the config must be a mapping of field: value")
    return data, _key_lines(node) if node is not None else {}


def load_config(
    model: type[M],
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    base: dict[str, Any] | None = None,
) -> M:
    """Build `model` from `base` values, then the YAML file at `path`, then `overrides` (CLI flags).

    `None` values in `overrides` mean "flag not given" and are ignored. Dotted override keys
    (`"sampling.temperature"`) set nested fields.

    >>> class C(StrictModel):
    ...     lr: float = 1e-3
    ...     steps: int = 10
    >>> load_config(C, None, {"lr": 0.5, "steps": None})
    C(lr=0.5, steps=10)
    >>> load_config(C, None, {"steps": "many"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rlvr.config.ConfigError: <flags>: field 'steps': Input should be a valid integer...
    """
    data: dict[str, Any] = dict(base or {})
    lines: dict[tuple[str, ...], int] = {}
    source = "<flags>"
    if path is not None:
        path = Path(path)
        file_data, lines = load_yaml_mapping(path)
        _deep_update(data, file_data)
        source = str(path)
    flag_keys: set[tuple[str, ...]] = set()
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        parts = tuple(key.split("."))
        flag_keys.add(parts)
        _deep_update(data, _nest(parts, value))
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        field = ".".join(loc) or "<root>"
        if loc in flag_keys or path is None:
            where = "<flags>"
        else:
            line = next((lines[loc[:i]] for i in range(len(loc), 0, -1) if loc[:i] in lines), None)
            where = f"{source}:{line}" if line else source
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        raise ConfigError(f"{where}: field '{field}': {msg}" if loc else f"{where}: {msg}") from None


def _nest(parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(parts):
        out = {part: out}
    return out


def _deep_update(dst: dict[str, Any], src: dict[str, Any]) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _deep_update(dst[k], v)
        else:
            dst[k] = v


def dump_config(cfg: BaseModel, path: Path) -> None:
    """Write the resolved config as YAML (what `--config` reads back)."""
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))


T = TypeVar("T")


def renamed_flag(old: str, old_value: T | None, new: str, new_value: T | None) -> T | None:
    """A flag's value when it was given under its old spelling (kept as a hidden alias): the old value
    with a note naming the new flag on stderr; both spellings at once is a ConfigError.

    One name per meaning across commands: `--samples` (per problem), `--problems` (how many
    problems), `--items` (how many completions or candidates a command takes)."""
    import sys

    if old_value is None:
        return new_value
    if new_value is not None:
        raise ConfigError(f"{old} and {new} are the same flag; give {new} only")
    print(f"note: {old} is now {new}", file=sys.stderr)
    return old_value
