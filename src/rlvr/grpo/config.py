"""`rlvr train` settings: one typed config, loadable from YAML and overridable from flags.

`objective` names a paper preset (`grpo`, `dr_grpo`, `dapo`, `gspo`, `cispo`, `rloo`, ...; see
docs/papers.md) and any field of `objective_overrides` replaces that preset's value. Documented
field by field in docs/train.md and docs/objectives.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from rlvr.config import (
    Device,
    NonNegativeFloat,
    Overrides,
    PositiveFloat,
    ReportTo,
    RolloutConfig,
    SamplingConfig,
    Seed,
    StrictModel,
    Threads,
    moved_to_sampling,
    partial_model,
)
from rlvr.envs import EnvSpec
from rlvr.grpo.presets import ObjectiveConfig, PresetName, resolve
from rlvr.rewards import RewardSpec

__all__ = [
    "TrainConfig",
    "TrainOverrides",
    "ObjectiveOverrides",
    "LoraSettings",
    "DistributedSettings",
    "TrainRolloutConfig",
    "TRAIN_PRESETS",
]


if TYPE_CHECKING:

    class ObjectiveOverrides(Overrides):
        """Built from `ObjectiveConfig` at import (`partial_model`); mypy sees a plain model."""

else:  # every ObjectiveConfig field, typed and constrained as there, optional: a new field is one edit
    ObjectiveOverrides = partial_model(ObjectiveConfig, "ObjectiveOverrides", __name__)


class LoraSettings(StrictModel):
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: list[str] = ["q_proj", "k_proj", "v_proj", "o_proj"]


class DistributedSettings(StrictModel):
    """How several ranks (torchrun) share the model: `ddp` replicates it on every rank and sums the
    gradients; `fsdp` shards parameters, gradients and optimizer state (FSDP2) and writes sharded
    checkpoints (docs/scaling.md)."""

    strategy: Literal["ddp", "fsdp"] = "ddp"


class TrainRolloutConfig(RolloutConfig):
    """`rollout:` of `rlvr train`: the engine (`RolloutConfig`) and asynchronous rollouts, `async` (the batch
    for step t+1 drawn while step t's update runs, by a worker with its own copy of the weights) with
    `max_staleness` (batch t drawn from the weights of update max(0, t - k); 0: the synchronous trainer
    exactly). `rlvr.grpo.async_rollout`, docs/scaling.md."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True, serialize_by_alias=True)

    async_: bool = Field(False, alias="async")
    max_staleness: int = Field(1, ge=0)


class TrainConfig(StrictModel):
    """GRPO training. `model` is a local HF model folder or a run folder holding `model/`."""

    model: str = "runs/base/model"
    task: str = "arith"
    preset: str = "easy"  # the arith rung (a task setting, kept at the top for the embedded default)
    task_settings: dict[str, str | int | float | bool] = {}  # the task's own load settings (docs/tasks.md)
    n_train: int = Field(20000, ge=1, le=1_000_000)
    seed: Seed = 0
    objective: PresetName = "grpo"
    objective_overrides: ObjectiveOverrides = ObjectiveOverrides()
    rewards: list[RewardSpec] = [RewardSpec(name="outcome")]
    reward_timeout_s: float = Field(30.0, gt=0, allow_inf_nan=False)
    steps: int = Field(200, ge=1)
    prompts_per_step: int = Field(8, ge=1)
    group_size: int = Field(8, ge=2)
    sampling: SamplingConfig = SamplingConfig()
    num_iterations: int = Field(1, ge=1)
    max_refill_rounds: int = Field(3, ge=0)
    gen_batch_prompts: int | None = Field(None, ge=1)  # dynamic sampling: prompts sampled per round (DAPO's gen batch)
    micro_batch_size: int = Field(64, ge=1)
    lr: PositiveFloat = 3e-5
    lr_schedule: Literal["constant", "cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: NonNegativeFloat = 0.0
    grad_clip: PositiveFloat = 1.0
    lora: LoraSettings | None = None
    eval_every: int = Field(50, ge=0)
    eval_n: int = Field(200, ge=1)
    eval_samples: int = Field(4, ge=1)
    save_every: int = Field(100, ge=0)
    log_every: int = Field(1, ge=1)
    report_to: ReportTo = []  # experiment trackers: tensorboard, trackio, wandb, mlflow (rlvr.trackers)
    threads: Threads = 2
    device: Device = "cpu"
    dtype: Literal["float32", "bfloat16"] = "float32"
    bf16: bool = False  # bfloat16 autocast for sampling and update; weights, Adam and log-probs stay float32
    rollout: TrainRolloutConfig = TrainRolloutConfig()
    distributed: DistributedSettings = DistributedSettings()
    env: EnvSpec | None = None  # a multi-turn environment with tools (docs/environments.md)
    out: str = "runs/grpo"
    _objective: ObjectiveConfig = PrivateAttr()

    _moved = model_validator(mode="before")(moved_to_sampling)

    @field_validator("rewards")
    @classmethod
    def _known_rewards(cls, v: list[RewardSpec]) -> list[RewardSpec]:
        if not v:  # each RewardSpec checks its own name, params and file
            raise ValueError("at least one reward is needed")
        return v

    @model_validator(mode="after")
    def _objective_resolves(self) -> TrainConfig:
        try:  # resolved once, here: the trainer reads `objective_config`
            self._objective = resolve(self.objective, self.objective_overrides.values())
        except ValueError as e:  # a check between fields, e.g. delta against eps_high
            raise ValueError(f"objective {self.objective!r} with objective_overrides: {e}") from None
        buf = self._objective.overlong_buffer
        if buf is not None and not 0 < buf <= self.sampling.max_new_tokens:
            raise ValueError(
                f"objective_overrides.overlong_buffer={buf} must be in (0, "
                f"sampling.max_new_tokens={self.sampling.max_new_tokens}]"
            )
        if self.rollout.async_ and self.rollout.engine == "vllm":
            raise ValueError(
                "rollout.async: the vllm engine is not supported with async rollouts; use fast, hf or auto"
            )
        if self.rollout.async_ and self.env is not None:
            raise ValueError("rollout.async: multi-turn environments (env) are not supported with async rollouts")
        return self

    @property
    def objective_config(self) -> ObjectiveConfig:
        """The preset with the overrides applied (validated when the config was built)."""
        return self._objective


if TYPE_CHECKING:

    class TrainOverrides(Overrides):
        """Built from `TrainConfig` at import (`partial_model`); mypy sees a plain model."""

else:
    TrainOverrides = partial_model(TrainConfig, "TrainOverrides")


TRAIN_PRESETS: dict[str, dict[str, object]] = {
    # The demo's recipe on the `small` rung: 8 prompts x 8 samples, no KL, token-mean loss,
    # group-std advantages, T=1, top-k off, lr 1e-4. From a base that mixes worked chains with bare
    # answers, plain GRPO (0.49 s a step) reached the dev pass@1 of DAPO's dynamic sampling
    # (0.87 s a step: 1.35 rounds of 12 prompts) in 60% of its time (docs/embedded.md).
    "demo": {
        "preset": "small",
        "objective": "grpo",
        "objective_overrides": {"beta": 0.0, "aggregation": "token_mean"},
        "lr": 1e-4,
    },
    # The demo's recipe with rejection-sampling fine-tuning in place of the policy gradient: the same
    # prompts, samples, sampler and learning rate, so a run of the same steps draws the same samples.
    "demo-rft": {"preset": "small", "objective": "rft", "lr": 1e-4},
    # Ablations for the audit's reward-separation check.
    "correctness-only": {"rewards": [{"name": "outcome"}]},
    "format-only": {"rewards": [{"name": "format_gsm8k"}]},
}
