"""Tests for rlvr.grpo.objective: hand-worked values, a slow loop reference, and invariances.

Run: `.venv/bin/python -m pytest tests/test_objective.py -q`.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest
import torch

from rlvr.grpo.objective import (
    ADVANTAGES,
    AGGREGATIONS,
    KL_ESTIMATORS,
    REWARD_NORMALIZATIONS,
    aggregate,
    entropy_from_logits,
    global_counts,
    group_advantages,
    kl_penalty,
    normalize_then_sum,
    overlong_penalty,
    policy_loss,
    resolve_advantage,
    resolve_aggregation,
    resolve_kl,
    resolve_policy_loss,
    resolve_reward_normalization,
    sum_then_normalize,
    token_logprobs,
)
from rlvr.grpo.presets import PRESETS, ObjectiveConfig

torch.set_num_threads(1)
EPS = 1e-4
NAN = float("nan")
F64 = torch.float64


def t(x: object) -> torch.Tensor:
    return torch.tensor(x, dtype=F64)


# ----------------------------------------------------------------------------- advantages by hand

# Two groups of 4: [1,0,0,0] has mean .25 and unbiased std sqrt((.75^2 + 3*.25^2)/3) = .5;
# [1,1,0,0] has mean .5 and std sqrt(4*.25/3) = sqrt(1/3).
R = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
S2 = math.sqrt(1 / 3)


def test_group_scale_by_hand() -> None:
    adv = group_advantages(t(R), 4, "group")
    a1, b1 = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    a2 = 0.5 / (S2 + EPS)
    assert torch.allclose(adv.values, t([a1, b1, b1, b1, a2, a2, -a2, -a2]))
    assert (adv.zero_std_groups, adv.n_groups) == (0, 2)


def test_batch_scale_by_hand() -> None:
    # All 8 rewards: mean 3/8, unbiased variance (3 * (5/8)^2 + 5 * (3/8)^2) / 7 = 1.875 / 7.
    sb = math.sqrt(1.875 / 7)
    adv = group_advantages(t(R), 4, "batch")
    c = [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]
    assert torch.allclose(adv.values, t([x / (sb + EPS) for x in c]))


def test_none_scale_by_hand() -> None:
    adv = group_advantages(t(R), 4, "none")
    assert torch.allclose(adv.values, t([0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]))


def test_rloo_by_hand() -> None:
    # Leave-one-out: [1,0,0,0] -> 1 - 0, 0 - 1/3; [1,1,0,0] -> 1 - 1/3, 0 - 2/3.
    adv = group_advantages(t(R), 4, "rloo")
    assert torch.allclose(adv.values, t([1.0, -1 / 3, -1 / 3, -1 / 3, 2 / 3, 2 / 3, -2 / 3, -2 / 3]))
    # NaN rewards are left out of the baseline: [1, NaN, 0] -> 1 - 0, 0, 0 - 1; [0, 3, 3] -> 0 - 3,
    # 3 - 1.5, 3 - 1.5 (n/(n-1) times Dr. GRPO's advantage).
    r = t([1.0, NAN, 0.0, 0.0, 3.0, 3.0])
    assert torch.allclose(group_advantages(r, 3, "rloo").values, t([1.0, 0.0, -1.0, -3.0, 1.5, 1.5]))
    assert torch.allclose(
        group_advantages(r, 3, "rloo").values, group_advantages(r, 3, "none").values * t([2, 0, 2, 1.5, 1.5, 1.5])
    )


def test_reinforce_pp_by_hand() -> None:
    # Batch mean 3/8, unbiased batch std sqrt(1.875 / 7); no group baseline.
    sb = math.sqrt(1.875 / 7)
    adv = group_advantages(t(R), 4, "reinforce_pp")
    assert torch.allclose(adv.values, t([(x - 3 / 8) / (sb + EPS) for x in R]))
    # Zero-std groups still get the batch-relative value; an all-equal batch gets 0.
    adv = group_advantages(t([1.0, 1.0, 0.0, 0.0]), 2, "reinforce_pp")
    assert adv.zero_std.tolist() == [True, True] and (adv.values.abs() > 0.8).all()
    assert group_advantages(torch.tensor([0.1, 0.1, 0.1, 0.1]), 2, "reinforce_pp").values.tolist() == [0.0] * 4


def test_reinforce_pp_baseline_by_hand() -> None:
    # Group-centred values [.75,-.25,-.25,-.25,.5,.5,-.5,-.5] have batch mean 0 and unbiased
    # std sqrt((.75^2 + 3 * .25^2 + 4 * .25) / 7) = sqrt(1.75 / 7) = .5.
    c = [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]
    adv = group_advantages(t(R), 4, "reinforce_pp_baseline")
    assert torch.allclose(adv.values, t([x / (0.5 + EPS) for x in c]))
    # A degenerate group stays exactly 0 and counts as zeros in the batch std.
    adv = group_advantages(t([1.0, 0.0, 1.0, 1.0]), 2, "reinforce_pp_baseline")
    assert adv.values[2:].tolist() == [0.0, 0.0]
    assert adv.values[0].item() == pytest.approx(0.5 / (math.sqrt(0.5 / 3) + EPS))


def test_normalize_then_sum_by_hand() -> None:
    # Reward 1 [1,0,0,0] -> group advantages [1.5,-.5,-.5,-.5] (std .5); reward 2 [1,1,0,0] ->
    # [1,1,-1,-1] * .5 / sqrt(1/3). Weights 1 and .5; then whitened by the sum's unbiased batch std.
    c = t([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    a1 = [x / (0.5 + EPS) for x in (0.75, -0.25, -0.25, -0.25)]
    a2 = [x / (S2 + EPS) for x in (0.5, 0.5, -0.5, -0.5)]
    s = [x + 0.5 * y for x, y in zip(a1, a2, strict=True)]
    std = statistics.stdev(s)
    adv = normalize_then_sum(c[0] + 0.5 * c[1], 4, c, t([1.0, 0.5]))
    assert torch.allclose(adv.values, t([x / (std + EPS) for x in s]))
    assert adv.zero_std.tolist() == [False]
    # GRPO's sum_then_normalize ignores the components: the estimator on the total.
    same = sum_then_normalize(c[0] + 0.5 * c[1], 4, c, t([1.0, 0.5]), advantage=resolve_advantage("group"))
    assert torch.allclose(same.values, group_advantages(c[0] + 0.5 * c[1], 4, "group").values)


def test_normalize_then_sum_missing_rewards_and_errors() -> None:
    # Row 1 lacks reward 2: it is invalid everywhere (advantage 0, out of every statistic), as in
    # the total. Group 2 has no spread in any reward: zero_std and exactly 0.
    c = t([[1.0, 0.0, 0.0, 2.0, 2.0, 2.0], [0.0, NAN, 1.0, 1.0, 1.0, 1.0]])
    total = c[0] + c[1]
    adv = normalize_then_sum(total, 3, c, t([1.0, 1.0]))
    kept = normalize_then_sum(t([1.0, 1.0, 2.0, 3.0]), 2, t([[1.0, 0.0, 2.0, 2.0], [0.0, 1.0, 1.0, 1.0]]), t([1, 1]))
    assert adv.values[1].item() == 0.0 and adv.values[3:].tolist() == [0.0, 0.0, 0.0]
    assert torch.allclose(adv.values[[0, 2]], kept.values[:2])
    assert adv.zero_std.tolist() == [False, True]
    with pytest.raises(ValueError, match="components"):
        normalize_then_sum(total, 3)
    with pytest.raises(ValueError, match="components must be"):
        normalize_then_sum(total, 3, c, t([1.0]))
    with pytest.raises(ValueError, match="unknown reward normalization"):
        resolve_reward_normalization("sum")
    assert set(REWARD_NORMALIZATIONS) == {"sum_then_normalize", "normalize_then_sum"}


def test_nan_and_degenerate_groups() -> None:
    # Group 0: valid [1, 0, 0], mean 1/3, unbiased std sqrt(((2/3)^2 + 2 (1/3)^2) / 2) = sqrt(1/3).
    # Group 1: one valid reward -> degenerate. Group 2: all valid equal -> degenerate.
    # Group 3: all NaN -> degenerate.
    r = t([1.0, NAN, 0.0, 0.0, NAN, NAN, NAN, 1.0, 2.0, 2.0, NAN, 2.0, NAN, NAN, NAN, NAN])
    hi, lo = (2 / 3), (-1 / 3)
    expected = {
        "group": [hi / (S2 + EPS), 0.0, lo / (S2 + EPS), lo / (S2 + EPS)],
        "none": [hi, 0.0, lo, lo],
    }
    sb = statistics.stdev([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0])
    expected["batch"] = [hi / (sb + EPS), 0.0, lo / (sb + EPS), lo / (sb + EPS)]
    for scale, first in expected.items():
        adv = group_advantages(r, 4, scale)  # type: ignore[arg-type]
        assert torch.allclose(adv.values, t(first + [0.0] * 12)), scale
        assert not torch.isnan(adv.values).any()
        assert (adv.zero_std_groups, adv.n_groups) == (3, 4)
        assert adv.zero_std.tolist() == [False, True, True, True]


def test_equal_rewards_with_float_residue_are_zero_std() -> None:
    # mean(0.1, 0.1, 0.1) is not exactly 0.1 in floating point; still a zero-std group.
    adv = group_advantages(torch.tensor([0.1, 0.1, 0.1]), 3, "group")
    assert adv.values.tolist() == [0.0, 0.0, 0.0] and adv.zero_std_groups == 1


def test_advantage_errors() -> None:
    with pytest.raises(ValueError, match="divisible"):
        group_advantages(t([1.0, 2.0, 3.0]), 2, "group")
    with pytest.raises(ValueError, match="unknown advantage scale 'std'"):
        resolve_advantage("std")
    assert set(ADVANTAGES) == {"group", "batch", "none", "rloo", "reinforce_pp", "reinforce_pp_baseline"}


# ----------------------------------------------------------------------------- advantages vs a loop


def ref_advantages(rewards: list[float], g: int, scale: str, eps: float) -> tuple[list[float], int]:
    valid_all = [x for x in rewards if not math.isnan(x)]
    batch_std = statistics.stdev(valid_all) if len(valid_all) >= 2 else 0.0
    batch_mean = sum(valid_all) / len(valid_all) if valid_all else 0.0
    flat = len(valid_all) < 2 or max(valid_all) == min(valid_all)
    centred_all: list[float] = []  # group-centred valid rewards (0 in degenerate groups), for REINFORCE++
    for start in range(0, len(rewards), g):
        valid = [x for x in rewards[start : start + g] if not math.isnan(x)]
        degenerate = len(valid) < 2 or max(valid) == min(valid)
        centred_all += [0.0 if degenerate else x - sum(valid) / len(valid) for x in valid]
    centred_std = statistics.stdev(centred_all) if len(centred_all) >= 2 else 0.0
    out, n_zero = [], 0
    for start in range(0, len(rewards), g):
        group = rewards[start : start + g]
        valid = [x for x in group if not math.isnan(x)]
        if len(valid) < 2 or max(valid) == min(valid):
            n_zero += 1
            if scale == "reinforce_pp":  # no group baseline: the batch-relative value
                out += [0.0 if math.isnan(x) or flat else (x - batch_mean) / (batch_std + eps) for x in group]
            else:
                out += [0.0] * g
            continue
        mean = sum(valid) / len(valid)
        for x in group:
            if math.isnan(x):
                out.append(0.0)
            elif scale == "rloo":
                out.append(x - (sum(valid) - x) / (len(valid) - 1))
            elif scale == "reinforce_pp":
                out.append(0.0 if flat else (x - batch_mean) / (batch_std + eps))
            elif scale == "reinforce_pp_baseline":
                out.append((x - mean) / (centred_std + eps))
            else:
                denom = {"group": statistics.stdev(valid) + eps, "batch": batch_std + eps, "none": 1.0}[scale]
                out.append((x - mean) / denom)
    return out, n_zero


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", sorted(ADVANTAGES))
def test_advantages_match_loop(seed: int, scale: str) -> None:
    gen = torch.Generator().manual_seed(seed)
    g = [2, 3, 4, 8, 5, 16][seed]
    n_groups = int(torch.randint(1, 7, (1,), generator=gen))
    # Rewards from a small set so ties and zero-std groups occur; ~20% NaN.
    r = torch.randint(0, 3, (n_groups * g,), generator=gen).to(F64) / 2
    r[torch.rand(r.shape, generator=gen) < 0.2] = NAN
    adv = group_advantages(r, g, scale)  # type: ignore[arg-type]
    ref, n_zero = ref_advantages(r.tolist(), g, scale, EPS)
    assert torch.allclose(adv.values, t(ref), atol=1e-12)
    assert adv.zero_std_groups == n_zero and adv.n_groups == n_groups


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale", sorted(ADVANTAGES))
def test_normalize_then_sum_matches_loop(seed: int, scale: str) -> None:
    gen = torch.Generator().manual_seed(seed)
    g, k = [2, 4, 3, 8][seed], [1, 2, 3, 2][seed]
    n = g * int(torch.randint(1, 6, (1,), generator=gen))
    c = torch.randint(0, 3, (k, n), generator=gen).to(F64) / 2
    c[torch.rand(c.shape, generator=gen) < 0.1] = NAN
    w = torch.rand(k, generator=gen, dtype=F64) + 0.5
    valid = [not any(math.isnan(c[j, i].item()) for j in range(k)) for i in range(n)]
    summed = [0.0] * n
    for j in range(k):
        masked = [c[j, i].item() if valid[i] else NAN for i in range(n)]
        part, _ = ref_advantages(masked, g, scale, EPS)
        summed = [s + w[j].item() * p for s, p in zip(summed, part, strict=True)]
    kept = [s for s, ok in zip(summed, valid, strict=True) if ok]
    std = statistics.stdev(kept) if len(kept) >= 2 else 0.0
    ref = [s / (std + EPS) if ok else 0.0 for s, ok in zip(summed, valid, strict=True)]
    adv = normalize_then_sum((w.unsqueeze(-1) * c).sum(0), g, c, w, advantage=resolve_advantage(scale))
    assert torch.allclose(adv.values, t(ref), atol=1e-9)


# ----------------------------------------------------------------------------- aggregation by hand

V = [[1.0, 2.0, NAN], [4.0, 5.0, 6.0]]  # the NaN sits under the mask and must not leak
M = [[1, 1, 0], [1, 1, 1]]


@pytest.mark.parametrize(
    ("name", "kwargs", "expected"),
    [
        ("token_mean", {}, (1 + 2 + 4 + 5 + 6) / 5),  # 3.6
        ("token_mean", {"n_tokens_global": 10}, 18 / 10),
        ("seq_mean_token_mean", {}, ((1 + 2) / 2 + (4 + 5 + 6) / 3) / 2),  # 3.25
        ("seq_mean_token_mean", {"n_seqs_global": 4}, 6.5 / 4),
        ("seq_mean_token_sum_norm", {"max_len": 3}, (3 / 3 + 15 / 3) / 2),  # 3.0
        ("seq_mean_token_sum_norm", {"max_len": 4}, (3 / 4 + 15 / 4) / 2),  # 2.25
        ("seq_mean_token_sum_norm", {"max_len": 4, "n_seqs_global": torch.tensor(3)}, 4.5 / 3),
    ],
)
def test_aggregation_by_hand(name: str, kwargs: dict, expected: float) -> None:
    got = aggregate(t(V), torch.tensor(M), name, **kwargs)  # type: ignore[arg-type]
    assert got.item() == pytest.approx(expected, abs=1e-12)


def test_aggregation_empty_rows_and_float_mask() -> None:
    v, m = t([[1.0, 2.0], [3.0, 4.0], [7.0, 7.0]]), t([[1, 0], [1, 1], [0, 0]])
    assert aggregate(v, m, "seq_mean_token_mean").item() == pytest.approx((1 + 3.5) / 2)
    assert aggregate(v, m, "seq_mean_token_sum_norm", max_len=2).item() == pytest.approx((0.5 + 3.5) / 2)
    assert aggregate(v, m, "token_mean").item() == pytest.approx(8 / 3)
    assert aggregate(v, torch.zeros(3, 2), "token_mean").item() == 0.0
    assert [int(x) for x in global_counts(m)] == [3, 2]


def test_aggregation_errors() -> None:
    with pytest.raises(ValueError, match="max_len"):
        aggregate(t(V), torch.tensor(M), "seq_mean_token_sum_norm")
    with pytest.raises(ValueError, match="unknown aggregation 'seq_mean'"):
        resolve_aggregation("seq_mean")


# ----------------------------------------------------------------------------- policy loss by hand


def clip_case() -> tuple[torch.Tensor, ...]:
    ratios = t([[0.5, 1.1, 1.5], [0.5, 0.9, 1.5]])
    old = torch.zeros(2, 3, dtype=F64)
    return ratios.log().requires_grad_(), old, t([1.0, -1.0]), torch.ones(2, 3)


def test_policy_loss_and_clip_fractions_by_hand() -> None:
    logp, old, adv, mask = clip_case()
    loss, st = policy_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    # A=+1: -min(r, clip(r)) = -0.5, -1.1, -1.28 (high clip at 1.5).
    # A=-1: -min(-r, -clip(r)) = 0.8 (low clip at 0.5), 0.9, 1.5.
    assert loss.item() == pytest.approx((-0.5 - 1.1 - 1.28 + 0.8 + 0.9 + 1.5) / 6)
    assert st["clip_frac_low"].item() == pytest.approx(1 / 6)
    assert st["clip_frac_high"].item() == pytest.approx(1 / 6)
    assert st["clip_frac"].item() == pytest.approx(2 / 6)
    assert st["ratio_mean"].item() == pytest.approx(1.0)
    assert (st["ratio_min"].item(), st["ratio_max"].item()) == pytest.approx((0.5, 1.5))
    assert not any(v.requires_grad for v in st.values())
    loss.backward()
    assert logp.grad is not None
    # Clipped tokens get no gradient; d loss / d logp = -A * r / 6 elsewhere.
    expected = t([[-0.5, -1.1, 0.0], [0.0, 0.9, 1.5]]) / 6
    assert torch.allclose(logp.grad, expected)


def test_clip_fractions_respect_mask_and_symmetric_eps() -> None:
    logp, old, adv, mask = clip_case()
    mask[1, 0] = 0
    _, st = policy_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    assert (st["clip_frac_low"].item(), st["clip_frac_high"].item()) == pytest.approx((0.0, 0.2))
    assert st["ratio_min"].item() == pytest.approx(0.5)  # row 0 still has 0.5
    _, st = policy_loss(logp, old, adv, torch.ones(2, 3), eps_low=0.2, eps_high=0.2)
    # 1.1 is inside [0.8, 1.2]; 1.5 clips high only for A > 0.
    assert (st["clip_frac_low"].item(), st["clip_frac_high"].item()) == pytest.approx((1 / 6, 1 / 6))


# ----------------------------------------------------------------------------- policy loss vs a loop


def ref_policy_loss(logp, old, adv, mask, eps_low, eps_high, name, max_len) -> float:  # type: ignore[no-untyped-def]
    b, tt = len(logp), len(logp[0])
    per_seq, n_tok, n_seq, total = [], 0, 0, 0.0
    for i in range(b):
        toks = []
        for j in range(tt):
            if mask[i][j]:
                r = math.exp(logp[i][j] - old[i][j])
                rc = min(max(r, 1 - eps_low), 1 + eps_high)
                toks.append(-min(r * adv[i], rc * adv[i]))
        n_tok += len(toks)
        total += sum(toks)
        if toks:
            n_seq += 1
            per_seq.append(sum(toks) / (len(toks) if name == "seq_mean_token_mean" else max_len))
    if name == "token_mean":
        return total / max(n_tok, 1)
    return sum(per_seq) / max(n_seq, 1)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", list(AGGREGATIONS))
def test_policy_loss_matches_loop(seed: int, name: str) -> None:
    gen = torch.Generator().manual_seed(seed)
    b, tt = [(1, 1), (3, 5), (8, 4), (5, 9), (16, 2)][seed]
    logp = -torch.rand(b, tt, generator=gen, dtype=F64) * 3
    old = logp + 0.4 * torch.randn(b, tt, generator=gen, dtype=F64)
    adv = torch.randn(b, generator=gen, dtype=F64)
    mask = (torch.rand(b, tt, generator=gen) < 0.7).long()
    eps_low, eps_high = 0.1 + 0.2 * seed / 5, 0.28
    kw: dict[str, Any] = {"eps_low": eps_low, "eps_high": eps_high, "aggregation": name, "max_len": tt + 2}
    loss, _ = policy_loss(logp, old, adv, mask, **kw)
    ref = ref_policy_loss(logp.tolist(), old.tolist(), adv.tolist(), mask.tolist(), eps_low, eps_high, name, tt + 2)
    assert loss.item() == pytest.approx(ref, abs=1e-12)


# ----------------------------------------------------------------------------- gradient accumulation


def linear_policy(seed: int = 0):  # type: ignore[no-untyped-def]
    """A tiny 'policy': logits = x @ W over a 7-token vocabulary, in float64."""
    gen = torch.Generator().manual_seed(seed)
    b, tt, d, v = 8, 6, 5, 7
    w = torch.randn(d, v, generator=gen, dtype=F64, requires_grad=True)
    x = torch.randn(b, tt, d, generator=gen, dtype=F64)
    tokens = torch.randint(0, v, (b, tt), generator=gen)
    lengths = torch.tensor([6, 1, 3, 0, 5, 2, 6, 4])  # one empty row (e.g. a masked truncation)
    mask = (torch.arange(tt) < lengths.unsqueeze(-1)).long()
    with torch.no_grad():
        lp = token_logprobs(x @ w, tokens)
        old = lp + 0.3 * torch.randn(b, tt, generator=gen, dtype=F64)  # clipping on both sides
        ref = lp + 0.3 * torch.randn(b, tt, generator=gen, dtype=F64)
    adv = torch.randn(b, generator=gen, dtype=F64)
    return w, x, tokens, mask, old, ref, adv


def accumulated_grad(name: str, chunk: int, use_global: bool) -> torch.Tensor:
    w, x, tokens, mask, old, ref, adv = linear_policy()
    n_tok, n_seq = global_counts(mask)
    counts: dict[str, Any] = {"n_tokens_global": n_tok, "n_seqs_global": n_seq} if use_global else {}
    agg = resolve_aggregation(name)
    for s in range(0, len(x), chunk):
        sl = slice(s, s + chunk)
        logp = token_logprobs(x[sl] @ w, tokens[sl])
        pg, _ = policy_loss(logp, old[sl], adv[sl], mask[sl], eps_high=0.28, aggregation=agg, max_len=6, **counts)
        kl = agg(kl_penalty(logp, ref[sl], "k3"), mask[sl], max_len=6, **counts)
        (pg + 0.04 * kl).backward()
    assert w.grad is not None
    return w.grad


@pytest.mark.parametrize("name", list(AGGREGATIONS))
def test_micro_batches_equal_full_batch(name: str) -> None:
    full = accumulated_grad(name, 8, use_global=False)
    assert full.abs().max() > 1e-3
    for chunk in (1, 4):
        assert torch.allclose(accumulated_grad(name, chunk, use_global=True), full, rtol=1e-9, atol=1e-12)
    # Without the global counts, accumulation is wrong: the test can tell.
    assert not torch.allclose(accumulated_grad(name, 1, use_global=False), full, atol=1e-6)


@pytest.mark.parametrize("name", list(AGGREGATIONS))
def test_gradient_at_ratio_one_is_advantage_weighted_logp(name: str) -> None:
    w, x, tokens, mask, _, _, adv = linear_policy(seed=1)
    logp = token_logprobs(x @ w, tokens)
    loss, st = policy_loss(logp, logp.detach(), adv, mask, aggregation=resolve_aggregation(name), max_len=6)
    (g_loss,) = torch.autograd.grad(loss, w)
    logp = token_logprobs(x @ w, tokens)
    target = aggregate(-adv.unsqueeze(-1) * logp, mask, name, max_len=6)  # type: ignore[arg-type]
    (g_ref,) = torch.autograd.grad(target, w)
    assert torch.allclose(g_loss, g_ref, rtol=1e-10, atol=1e-12)
    assert st["clip_frac"].item() == 0.0 and st["ratio_mean"].item() == pytest.approx(1.0)


def test_token_mean_grad_wrt_logp_is_minus_a_over_n() -> None:
    logp = torch.zeros(2, 3, dtype=F64, requires_grad=True)
    adv, mask = t([2.0, -1.0]), torch.tensor([[1, 1, 0], [1, 0, 0]])
    loss, _ = policy_loss(logp, logp.detach(), adv, mask)
    loss.backward()
    assert logp.grad is not None
    assert torch.allclose(logp.grad, t([[-2 / 3, -2 / 3, 0.0], [1 / 3, 0.0, 0.0]]))


# ----------------------------------------------------------------------------- KL


def test_kl_estimators_by_hand() -> None:
    lp, ref = t([[math.log(0.5), -1.0]]), t([[math.log(0.25), -1.0]])
    l2 = math.log(2)
    assert torch.allclose(kl_penalty(lp, ref, "k1"), t([[l2, 0.0]]))
    assert torch.allclose(kl_penalty(lp, ref, "k2"), t([[0.5 * l2**2, 0.0]]))
    assert torch.allclose(kl_penalty(lp, ref, "k3"), t([[0.5 + l2 - 1, 0.0]]))
    with pytest.raises(ValueError, match="unknown KL estimator"):
        resolve_kl("k4")
    assert set(KL_ESTIMATORS) == {"k1", "k2", "k3"}


def test_kl_estimators_on_samples() -> None:
    gen = torch.Generator().manual_seed(0)
    p, q = t([0.5, 0.3, 0.15, 0.05]), t([0.25, 0.25, 0.25, 0.25])
    kl = (p * (p / q).log()).sum().item()
    y = torch.multinomial(p, 200_000, replacement=True, generator=gen)
    lp, lq = p.log()[y].unsqueeze(0), q.log()[y].unsqueeze(0)  # (1, N)
    for k in ("k1", "k3"):  # unbiased
        assert kl_penalty(lp, lq, k).mean().item() == pytest.approx(kl, abs=0.01)
    assert (kl_penalty(lp, lq, "k3") >= 0).all() and (kl_penalty(lp, lq, "k2") >= 0).all()


# ----------------------------------------------------------------------------- logits helpers


def test_entropy_matches_direct_formula_and_is_stable() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 11, generator=gen, dtype=F64) * 3
    direct = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)
    assert torch.allclose(entropy_from_logits(logits), direct)
    assert torch.allclose(entropy_from_logits(logits + 1e4), direct, atol=1e-8)
    big = torch.zeros(1, 1, 5)
    big[..., 0] = 200.0  # float32: exp underflows for the others; entropy is ~0, not NaN
    assert entropy_from_logits(big).item() == pytest.approx(0.0, abs=1e-6)
    assert entropy_from_logits(torch.zeros(2, 2, 8)).allclose(torch.full((2, 2), math.log(8)))


def test_token_logprobs_match_log_softmax_gather() -> None:
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 5, 13, generator=gen) * 4
    tokens = torch.randint(0, 13, (3, 5), generator=gen)
    direct = logits.log_softmax(-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(token_logprobs(logits, tokens), direct, atol=1e-6)
    assert torch.allclose(token_logprobs(logits + 1e3, tokens), direct, atol=1e-3)


# ----------------------------------------------------------------------------- DAPO shaping, presets


def test_overlong_penalty() -> None:
    lengths = torch.tensor([0, 48, 52, 60, 64, 99])
    got = overlong_penalty(lengths, max_len=64, buffer=16, penalty=0.5)
    assert got.tolist() == pytest.approx([0.0, 0.0, -0.125, -0.375, -0.5, -0.5])
    with pytest.raises(ValueError, match="buffer"):
        overlong_penalty(lengths, max_len=64, buffer=0, penalty=1.0)


def test_presets() -> None:
    g, d, a = PRESETS["grpo"], PRESETS["dr_grpo"], PRESETS["dapo"]
    assert (g.advantage_scale, g.aggregation, g.eps_low, g.eps_high, g.beta, g.kl_estimator) == (
        "group",
        "seq_mean_token_mean",
        0.2,
        0.2,
        0.04,
        "k3",
    )
    assert (d.advantage_scale, d.aggregation, d.beta) == ("none", "seq_mean_token_sum_norm", 0.0)
    assert (a.advantage_scale, a.aggregation, a.eps_low, a.eps_high, a.beta) == (
        "group",
        "token_mean",
        0.2,
        0.28,
        0.0,
    )
    assert a.dynamic_sampling and a.overlong_buffer == 16 and a.overlong_penalty == 1.0
    assert not g.dynamic_sampling and g.overlong_buffer is None and not a.mask_truncated
    for cfg in PRESETS.values():  # every preset resolves to functions
        (
            resolve_advantage(cfg.advantage_scale),
            resolve_aggregation(cfg.aggregation),
            resolve_kl(cfg.kl_estimator),
            resolve_policy_loss(cfg.policy_loss),
            resolve_reward_normalization(cfg.reward_normalization),
        )
    # the new fields keep today's behaviour by default
    assert all(
        (c.policy_loss, c.delta, c.top_entropy_quantile, c.reward_normalization)
        == ("clip", None, 1.0, "sum_then_normalize")
        for c in (g, d, a)
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"aggregation": "sum"}, "aggregation"),
        ({"advantage_scale": "std"}, "advantage_scale"),
        ({"kl_estimator": "k9"}, "kl_estimator"),
        ({"eps_low": 1.0}, "eps_low"),
        ({"beta": -0.1}, "beta"),
        ({"overlong_buffer": 0}, "overlong_buffer"),
        ({"policy_loss": "ppo"}, "policy_loss"),
        ({"reward_normalization": "sum"}, "reward_normalization"),
        ({"top_entropy_quantile": 1.5}, "top_entropy_quantile"),
        ({"delta": 1.1}, "delta"),  # must exceed 1 + eps_high
        ({"delta": 4.0, "policy_loss": "cispo"}, "delta"),
        ({"rollout_correction": "tis"}, "rollout_correction"),
    ],
)
def test_config_errors_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError) as e:  # pydantic's ValidationError names the field
        ObjectiveConfig(**kwargs)
    assert field in str(e.value)


def test_entropy_watch_flags_the_blow_up_of_the_smollm2_run_once() -> None:
    """The lr 2e-4 SmolLM2 run (docs/real-models.md): entropy about 0.6 for 75 steps, then up to 6 nats."""
    from rlvr.grpo.health import EntropyWatch

    steady = [0.70, 0.74, 0.80, 0.83, 0.61, 0.70, 0.59, 0.69, 0.60, 0.58] + [0.6, 0.8, 0.7, 1.19, 0.93] * 13
    rise = [1.30, 1.31, 1.02, 1.32, 1.37, 1.36, 1.16, 1.51, 1.26, 2.08, 2.10, 2.36, 2.43, 2.94, 4.24, 5.3, 6.2]
    w = EntropyWatch()
    said = [(s, m) for s, e in enumerate(steady + rise, 1) if (m := w(s, e))]
    # the first 10 steps average 0.68, so the limit is 1.37: 1.51 alone, then 2.08, 2.10, 2.36 in a row
    assert len(said) == 1 and said[0][0] == len(steady) + 12
    assert "resume from a checkpoint before step" in said[0][1]
    assert EntropyWatch()(1, float("nan")) is None
