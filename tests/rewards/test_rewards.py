"""Every reward against values worked out by hand, in TRL's calling convention."""

import math

import pytest

from rlvr.rewards import (
    RewardSpec,
    build_reward,
    combine,
    format_approx,
    format_exact,
    format_gsm8k,
    make_format_exact,
    make_hybrid,
    make_process,
    outcome,
    process,
)
from rlvr.rewards.combine import weighted_sum
from rlvr.tasks import Step

GOLD_STEPS = [Step("14*2", "28"), Step("28+10", "38")]
RIGHT = "14*2=<<14*2=28>>28\n28+10=<<28+10=38>>38\n#### 38"
WRONG_STEP = "14*2=<<14*2=29>>29\n29+10=<<29+10=39>>39\n#### 39"  # step 1 invalid, step 2 valid but no gold value
ONE_STEP = "14*2=<<14*2=28>>28\n#### 38"  # one matching step of two


def test_outcome_values_and_gsm8k_gold() -> None:
    assert outcome([RIGHT, WRONG_STEP, ""], answer=["38", "38", "38"]) == [1.0, 0.0, 0.0]
    # a full GSM8K solution as the gold column, as in the raw HF dataset
    assert outcome([RIGHT], answer=["...\n#### 38"]) == [1.0]
    # chat-format completions (TRL conversational data)
    assert outcome([[{"role": "assistant", "content": RIGHT}]], answer=["38"]) == [1.0]


def test_outcome_length_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="2 values for 1 completions"):
        outcome([RIGHT], answer=["38", "38"])


def test_format_exact_and_approx() -> None:
    good = "<thinking>14*2=28</thinking>\n<solution>28</solution>"
    assert format_exact([good, "<thinking></thinking><solution>28</solution>", good + "<solution>"]) == [1.0, 0.0, 0.0]
    assert format_approx([good, "<thinking>x", "<solution>1</solution><solution>", ""]) == [1.0, 0.25, 0.25, 0.0]
    custom = make_format_exact(("think", "answer"))
    assert custom(["<think>a</think><answer>b</answer>", good]) == [1.0, 0.0]


def test_format_gsm8k() -> None:
    assert format_gsm8k([RIGHT, "#### 38\n#### 39", "38", "#### x"]) == [1.0, 0.0, 0.0, 0.0]


def test_process_hand_computed() -> None:
    cols = {"steps": [GOLD_STEPS] * 4}
    # RIGHT: +1 +1 -> 2/2 = 1; WRONG_STEP: -1 -1 -> -1; ONE_STEP: +1, one gold step never attempted -1
    # -> 0; no steps: both gold steps missing -> -1 (a bare answer never beats an honest attempt)
    assert process([RIGHT, WRONG_STEP, ONE_STEP, "#### 38"], **cols) == [1.0, -1.0, 0.0, -1.0]
    # missing_penalty 0: steps left out cost nothing (the scoring that paid the easy rung's process arms for
    # answering bare, docs/studies.md)
    assert make_process(missing_penalty=0.0)([RIGHT, WRONG_STEP, ONE_STEP, "#### 38"], **cols) == [1.0, -1.0, 0.5, 0.0]


def test_process_never_pays_leaving_steps_out_more_than_attempting_them() -> None:
    """For every prefix of a right chain, and every chain with a wrong step, the process score is at
    least a bare answer's: showing part of the work never scores below showing none."""
    gold = [Step("2+3", "5"), Step("5*4", "20"), Step("20-6", "14")]
    chain = ["2+3=<<2+3=5>>5", "5*4=<<5*4=20>>20", "20-6=<<20-6=14>>14"]
    bare = process(["#### 14"], steps=[gold])[0]
    prefixes = [process(["\n".join(chain[:k]) + "\n#### 14"], steps=[gold])[0] for k in range(4)]
    assert prefixes == sorted(prefixes) and prefixes[0] == bare == -1.0 and prefixes[-1] == 1.0
    slip = "\n".join([*chain[:2], "20-6=<<20-6=13>>13", "#### 13"])
    assert (process([slip], steps=[gold])[0] or 0) > bare


def test_process_overlong_chain_penalty() -> None:
    # the chain repeated: each gold step matches once -> +1 +1 -1 -1 = 0; 4 > 1.5*2 -> 0 - 0.5
    long = "\n".join(["14*2=<<14*2=28>>28", "28+10=<<28+10=38>>38"] * 2) + "\n#### 38"
    assert process([long], steps=[GOLD_STEPS]) == [-0.5]
    assert make_process(overlong_penalty=2.0)([long], steps=[GOLD_STEPS]) == [-1.0]
    assert make_process(overlong_penalty=0.0)([long], steps=[GOLD_STEPS]) == [0.0]


def test_process_gold_from_columns() -> None:
    # steps as dicts (HF datasets), and from a GSM8K solution when no steps column exists
    assert process(["14*2=<<14*2=28>>28\n#### 28"], steps=[[{"expr": "14*2", "result": "28"}]]) == [1.0]
    assert process([RIGHT], answer=["14*2=<<14*2=28>>28\n28+10=<<28+10=38>>38\n#### 38"]) == [1.0]
    # no gold steps at all: unscorable, never a silent 0
    assert process([RIGHT], steps=[[]]) == [None]


def test_hybrid_is_lambda_mix() -> None:
    h = make_hybrid(0.25)
    cols = {"answer": ["38", "38"], "steps": [GOLD_STEPS, GOLD_STEPS]}
    # RIGHT: 0.25*1 + 0.75*1; ONE_STEP: 0.25*0 + 0.75*1
    assert h([RIGHT, ONE_STEP], **cols) == [1.0, 0.75]
    assert h([WRONG_STEP], answer=["38"], steps=[[]]) == [0.0]  # no gold steps: outcome alone


def test_combine_weights_and_none() -> None:
    f = combine([(outcome, 1.0), (format_gsm8k, 0.5)])
    assert f([RIGHT, "38"], answer=["38", "38"]) == [1.5, 1.0]
    g = combine([(outcome, 1.0), (process, 1.0)])
    assert g([RIGHT], answer=["38"], steps=[[]]) == [None]


def test_weighted_sum_by_hand() -> None:
    """The one combiner (combine, the trainer's RewardRunner, search's EnsembleReward)."""
    columns = [[1.0, 0.0, None, 1.0, 2.0], [0.5, 1.0, 1.0, math.nan, -4.0]]
    # 1 + 0.25 * 0.5, 0 + 0.25 * 1, None (a part is None), None (a part is NaN), 2 - 0.25 * 4
    assert weighted_sum(columns, [1.0, 0.25]) == [1.125, 0.25, None, None, 1.0]
    assert weighted_sum([[1.0, math.inf]], [2.0]) == [2.0, None]
    with pytest.raises(ValueError, match="2 value columns but 1 weights"):
        weighted_sum(columns, [1.0])
    with pytest.raises(ValueError):  # columns of different lengths
        weighted_sum([[1.0], [1.0, 2.0]], [1.0, 1.0])


def test_reward_runner_total_is_the_weighted_sum() -> None:
    from rlvr.grpo.rewarding import RewardRunner

    specs = [RewardSpec(name="outcome"), RewardSpec(name="format_gsm8k", weight=0.5)]
    runner = RewardRunner(specs, extra={"half": lambda completions, **kw: [0.5, None]})
    try:
        scored = runner.score(["#### 38", "38"], {"answer": ["38", "38"]})
    finally:
        runner.close()
    assert scored.values == {"outcome": [1.0, 1.0], "format_gsm8k": [1.0, 0.0], "half": [0.5, None]}
    assert scored.total[0] == 2.0 and math.isnan(scored.total[1])  # 1 + 0.5 * 1 + 0.5; None -> NaN


def test_registry_builds_with_params() -> None:
    fn = build_reward(RewardSpec(name="process", params={"max_ratio": 3.0}))
    long = "\n".join(["14*2=<<14*2=28>>28", "28+10=<<28+10=38>>38"] * 2)
    assert fn([long], steps=[GOLD_STEPS]) == [0.0]  # 4 steps <= 3 * 2: no penalty
    with pytest.raises(ValueError, match="unknown reward 'nope'"):  # refused when the config is read
        RewardSpec(name="nope")
    with pytest.raises(ValueError, match="unexpected keyword argument 'max_ration'"):
        RewardSpec(name="process", params={"max_ration": 3.0})
    with pytest.raises(KeyError, match="unknown reward 'nope'"):
        build_reward(RewardSpec.model_construct(name="nope", params={}, file=None))


def test_rewards_work_in_trl_style_call() -> None:
    """TRL calls reward_func(prompts=..., completions=..., completion_ids=..., **columns)."""
    kwargs = {"prompts": ["Q: x\nA:"], "completion_ids": [[1, 2]], "answer": ["38"], "steps": [GOLD_STEPS]}
    for fn in (outcome, process, format_gsm8k, make_hybrid(0.5)):
        out = fn(completions=[RIGHT], **kwargs)
        assert len(out) == 1 and out[0] is not None and math.isfinite(out[0])
