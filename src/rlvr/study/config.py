"""`rlvr study` settings: `StudyConfig` (conditions x seeds from one base, evaluated on the same
problems), its `Condition`s (grpo, base or sft-oracle) and the named studies (`STUDY_PRESETS`,
`QUICK`); what each kind and field means: docs/study.md."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from rlvr.config import StrictModel
from rlvr.evaluate.judge import JudgeConfig
from rlvr.grpo.config import TRAIN_PRESETS, TrainOverrides
from rlvr.rewards import RewardSpec

__all__ = ["Condition", "StudyConfig", "StudyJudge", "STUDY_PRESETS", "QUICK", "trains_rft"]


class Condition(StrictModel):
    """One arm of the study."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a folder name
    # grpo: trained by `rlvr train` (any objective, RFT's included); sft-oracle: SFT on the task's gold
    # solutions for the grpo arms' median time (`sft-matched`, its name before 2026-12-08, still reads)
    kind: Literal["grpo", "base", "sft-oracle"] = "grpo"
    preset: str | None = None  # a train preset (grpo only)
    train: TrainOverrides = TrainOverrides()  # TrainConfig fields for this condition (grpo only), e.g. rewards

    @field_validator("kind", mode="before")
    @classmethod
    def _old_name(cls, v: Any) -> Any:
        return "sft-oracle" if v == "sft-matched" else v

    @model_validator(mode="after")
    def _grpo_only(self) -> Condition:
        if self.kind != "grpo" and (self.preset or self.train.model_fields_set):
            raise ValueError(f"condition {self.name!r}: preset and train apply to grpo conditions only")
        return self


def trains_rft(cond: Condition) -> bool:
    """Whether a trained condition runs rejection-sampling fine-tuning (`objective: rft`, given or from
    its train preset): a baseline like sft-oracle, so not part of the time the oracle is matched to."""
    if cond.kind != "grpo":
        return False
    given = cond.train.model_dump(exclude_unset=True).get("objective")
    return (given or TRAIN_PRESETS.get(cond.preset or "", {}).get("objective")) == "rft"


class StudyJudge(JudgeConfig):
    """`judge:` of a study: the LLM judge's settings (`JudgeConfig`; those not given come from the
    environment, as for `rlvr judge`) and `n`, the completions judged per evaluation (None: all)."""

    n: int | None = Field(50, ge=1)

    @model_serializer(mode="wrap")
    def _given_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Written (config.yaml, study.json) with the settings given only: no defaults, no environment."""
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


class StudyConfig(StrictModel):
    """A grid of conditions x seeds. `base`: a model or run folder every arm starts from; without one
    the study builds the embedded base (SFT from scratch, `sft_steps`) in `OUT/base`."""

    conditions: list[Condition] = Field(min_length=1)
    seeds: list[int] = Field([0, 1], min_length=1)
    base: str | None = None
    task: str = "arith"
    preset: str = "small"  # the task rung; the embedded base (SFT preset arith-base) is built on it
    sft_steps: int = Field(600, ge=1)
    steps: int = Field(100, ge=1)  # GRPO steps per run
    train: TrainOverrides = TrainOverrides()  # TrainConfig fields shared by every grpo condition
    eval_split: Literal["test", "dev"] = "test"
    eval_n: int = Field(500, ge=1)
    eval_samples: int = Field(8, ge=1)
    judge: StudyJudge | None = None  # judge every evaluation's wrong completions
    workers: int = Field(1, ge=0)  # parallel runs in local worker processes (0: in this process)
    ray: str | None = None  # a Ray address: run each job as a Ray task instead
    out: str = "runs/study"

    @model_validator(mode="after")
    def _names(self) -> StudyConfig:
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError(f"condition names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
        if sum(c.kind == "base" for c in self.conditions) > 1:
            raise ValueError("at most one base condition")
        if any(c.kind == "sft-oracle" for c in self.conditions) and not any(c.kind == "grpo" for c in self.conditions):
            raise ValueError("an sft-oracle condition needs at least one grpo condition to match")
        return self


def _grpo(name: str, *rewards: RewardSpec, preset: str | None = None) -> Condition:
    return Condition(name=name, preset=preset, train=TrainOverrides.model_validate({"rewards": list(rewards)}))


_BASE = Condition(name="base", kind="base")

# A named study is its conditions (`--preset NAME`); the other settings are the command's.
STUDY_PRESETS: dict[str, list[Condition]] = {
    # The 2026 process-vs-outcome replication: one base, outcome / process / hybrid rewards, each with
    # the demo's recipe (train preset `demo`); rejection-sampling fine-tuning on the same samples (the
    # information-matched baseline) and SFT on the gold solutions for the same time (an oracle);
    # docs/studies.md ran it.
    "granularity": [
        _BASE,
        _grpo("outcome", RewardSpec(name="outcome"), preset="demo"),
        _grpo("process", RewardSpec(name="process"), preset="demo"),
        _grpo("hybrid-0.9", RewardSpec(name="hybrid", params={"lam": 0.9}), preset="demo"),
        _grpo("hybrid-0.5", RewardSpec(name="hybrid", params={"lam": 0.5}), preset="demo"),
        _grpo("hybrid-0.1", RewardSpec(name="hybrid", params={"lam": 0.1}), preset="demo"),
        Condition(name="rft", preset="demo-rft"),
        Condition(name="sft-oracle", kind="sft-oracle"),
    ],
    # The audit's reward-separation check (check 3): does correctness or format drive the gain?
    "reward-separation": [
        _BASE,
        _grpo("both", RewardSpec(name="outcome"), RewardSpec(name="format_gsm8k", weight=0.1)),
        Condition(name="correctness-only", preset="correctness-only"),
        Condition(name="format-only", preset="format-only"),
    ],
}

# `--quick`: the same grid, small enough to see the whole pipeline run in a few minutes on 2 cores
# (StudyConfig values).
QUICK: dict[str, int | list[int]] = {"sft_steps": 150, "steps": 4, "eval_n": 40, "eval_samples": 2, "seeds": [0, 1]}
