"""`rlvr search` settings (`SearchConfig`, field by field in docs/search.md), loadable from YAML or a
named preset (`SEARCH_PRESETS`). `train` holds the `TrainConfig` fields screening runs share, typed
and checked as `rlvr train` checks them (`TrainOverrides`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from rlvr.config import StrictModel
from rlvr.grpo.config import TrainConfig, TrainOverrides
from rlvr.rewards import RewardSpec

__all__ = ["ProposerSettings", "HalvingSettings", "SearchConfig", "SEARCH_PRESETS"]

# Fields of TrainConfig that the search itself sets for each screening run.
_SEARCH_OWNED = {"model", "steps", "seed", "out", "rewards", "task", "preset", "eval_every", "save_every"}


class ProposerSettings(StrictModel):
    """Who writes candidates: `offline` (primitive composer, no network) or `chat` (any
    OpenAI-compatible server; unset fields fall back to RLVR_PROPOSER_BASE_URL / _MODEL / _API_KEY)."""

    kind: Literal["offline", "chat"] = "offline"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "RLVR_PROPOSER_API_KEY"
    temperature: float = Field(0.8, ge=0, allow_inf_nan=False)
    timeout_s: float = Field(120.0, gt=0, allow_inf_nan=False)


class HalvingSettings(StrictModel):
    """Successive halving within a round: every candidate runs `rungs[0] * screen_steps` steps, the
    best `keep` share goes on to the next rung, and so on; the last rung is the full budget."""

    enabled: bool = False
    rungs: list[float] = [1 / 9, 1 / 3, 1.0]
    keep: float = Field(1 / 3, gt=0, le=1)

    @field_validator("rungs")
    @classmethod
    def _rungs(cls, v: list[float]) -> list[float]:
        if not v or any(not 0 < r <= 1 for r in v) or v != sorted(v) or v[-1] != 1.0:
            raise ValueError("rungs must be increasing fractions in (0, 1] ending with 1.0")
        return v


class SearchConfig(StrictModel):
    """Reward search: rounds of proposals, sandbox validation, GRPO screening on the dev split,
    ensembles with a random-ensemble control, a seed study, and a final test-split comparison."""

    base_model: str | None = None  # HF folder or run folder; None: SFT one (`sft_steps`) into OUT/base
    sft_steps: int = Field(600, ge=1)
    task: str = "arith"
    preset: str = "easy"
    sft_preset: str | None = None  # the rung the base is SFT'd on when it is built here; None: `preset`
    seed: int = 0
    rounds: int = Field(2, ge=1)
    candidates: int = Field(4, ge=1)  # per round
    proposer: ProposerSettings = ProposerSettings()
    base_rewards: list[RewardSpec] = [RewardSpec(name="outcome"), RewardSpec(name="format_gsm8k", weight=0.2)]
    candidate_weight: float = Field(1.0, ge=0, allow_inf_nan=False)
    candidate_timeout_s: float = Field(10.0, gt=0, allow_inf_nan=False)
    screen_steps: int = Field(40, ge=1)
    final_steps: int | None = Field(None, ge=1)  # ensembles and seeds; None: screen_steps
    train: TrainOverrides = TrainOverrides()  # TrainConfig fields for every screening run
    dev_n: int = Field(200, ge=1)
    dev_samples: int = Field(4, ge=1)
    test_n: int = Field(500, ge=1)
    test_samples: int = Field(4, ge=1)
    ensemble_size: int = Field(3, ge=2)
    seeds: int = Field(3, ge=1)  # the best ensemble is retrained with this many seeds
    correction: Literal["bonferroni", "holm"] = "bonferroni"
    halving: HalvingSettings = HalvingSettings()
    workers: int = Field(1, ge=0)  # screening processes; 0 runs screens in this process
    ray: str | None = None  # Ray address ("auto", "ray://host:port", or "local" to start one)
    unsafe_no_sandbox: bool = False
    threads: int | None = 2
    out: str = "runs/search"

    @field_validator("train")
    @classmethod
    def _train_fields(cls, v: TrainOverrides) -> TrainOverrides:
        from rlvr.config import ConfigError, load_config

        owned = sorted(v.model_fields_set & _SEARCH_OWNED)
        if owned:
            raise ValueError(f"{', '.join(owned)} are set by the search itself, not under train")
        try:  # what spans fields (e.g. the overlong buffer within max_new_tokens)
            load_config(TrainConfig, None, base=v.values())
        except ConfigError as e:
            raise ValueError(str(e).split(": ", 1)[-1]) from None
        return v

    @property
    def steps_final(self) -> int:
        return self.final_steps or self.screen_steps


SEARCH_PRESETS: dict[str, dict[str, Any]] = {
    # The embedded default: 2 rounds x 4 offline candidates on the tiny model (docs/search.md).
    "demo": {"rounds": 2, "candidates": 4, "screen_steps": 40, "dev_n": 200, "dev_samples": 4, "test_n": 500},
    # A rung where the outcome reward alone is sparse (docs/search.md, docs/studies.md section 2): the base
    # is built on `easy` by the demo's SFT recipe (pass@1 0.09, 58% of its groups of 8 all wrong), and
    # screens train with the demo's GRPO recipe. Two 1-thread screens at a time on 2 cores.
    "sparse": {
        "preset": "easy",
        "sft_steps": 600,
        "rounds": 2,
        "candidates": 6,
        "screen_steps": 40,
        "train": {"objective": "grpo", "objective_overrides": {"beta": 0.0, "aggregation": "token_mean"}, "lr": 1e-4},
        "dev_n": 300,
        "dev_samples": 8,
        "test_n": 500,
        "test_samples": 8,
        "workers": 2,
        "threads": 1,
    },
}
# The same search one rung up: the base is SFT'd on `easy` as in `sparse`, and screens train and score on
# `medium` (numbers up to 50, 1-3 steps), where the outcome reward alone leaves most groups all wrong
# (docs/studies.md section 2b).
SEARCH_PRESETS["sparse-medium"] = {**SEARCH_PRESETS["sparse"], "preset": "medium", "sft_preset": "easy"}
