"""Tests for rlvr.grpo.losses: the policy losses (clip, GSPO, GSPO-token, CISPO), two-sided clipping
and high-entropy token selection, by hand, against a slow loop reference, by their gradients, and
under micro-batching. Aggregation itself is tested in tests/test_objective.py.

Run: `.venv/bin/python -m pytest tests/test_losses.py -q`.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from rlvr.grpo.losses import (
    AGGREGATIONS,
    POLICY_LOSSES,
    aggregate,
    cispo_loss,
    entropy_threshold,
    global_counts,
    gspo_loss,
    high_entropy_mask,
    policy_loss,
    resolve_aggregation,
    resolve_policy_loss,
    select_top_entropy,
)
from rlvr.grpo.objective import entropy_from_logits, token_logprobs

torch.set_num_threads(1)
F64 = torch.float64


def t(x: object) -> torch.Tensor:
    return torch.tensor(x, dtype=F64)


def leaf(ratios: list[list[float]]) -> tuple[torch.Tensor, torch.Tensor]:
    """`logp` (a leaf that takes gradients) and `old = 0`, so that `exp(logp - old)` are `ratios`."""
    return t(ratios).log().requires_grad_(), torch.zeros(len(ratios), len(ratios[0]), dtype=F64)


# ----------------------------------------------------------------------------- by hand


def test_two_sided_clip_by_hand() -> None:
    logp, old = leaf([[0.5, 1.1, 1.5, 5.0], [0.5, 0.9, 1.5, 5.0]])
    adv, mask = t([1.0, -1.0]), torch.ones(2, 4)
    loss, st = policy_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28, delta=3.0)
    # A=+1: -min(r, clip(r)) = -.5, -1.1, -1.28, -1.28 (delta only caps the unclipped branch).
    # A=-1: max(min(r, 3), clip(r)) = .8 (low clip), .9, 1.5, 3 (delta; plain GRPO would give 5).
    assert loss.item() == pytest.approx((-0.5 - 1.1 - 1.28 - 1.28 + 0.8 + 0.9 + 1.5 + 3.0) / 8)
    plain, _ = policy_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    assert plain.item() == pytest.approx(loss.item() + 2.0 / 8)
    assert st["clip_frac_delta"].item() == pytest.approx(1 / 8)
    assert (st["clip_frac_low"].item(), st["clip_frac_high"].item()) == pytest.approx((1 / 8, 2 / 8))
    assert st["clip_frac"].item() == pytest.approx(4 / 8)
    loss.backward()
    assert logp.grad is not None  # zero where a clipped branch wins, -A r / 8 elsewhere
    assert torch.allclose(logp.grad, t([[-0.5, -1.1, 0.0, 0.0], [0.0, 0.9, 1.5, 0.0]]) / 8)
    assert "clip_frac_delta" not in policy_loss(logp, old, adv, mask)[1]


def test_gspo_by_hand_and_its_gradient_stops_at_clipped_sequences() -> None:
    logp = t([[0.1, -0.3, 9.0], [0.2, 0.2, 0.2]]).requires_grad_()  # old = 0: log ratios
    old, mask = torch.zeros(2, 3, dtype=F64), torch.tensor([[1, 1, 0], [1, 1, 1]])
    adv = t([-1.0, 2.0])
    loss, st = gspo_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.2)
    s0, s1 = math.exp(-0.1), math.exp(0.2)  # geometric means: e^{(0.1 - 0.3)/2}, e^{0.2}
    # Row 0: A < 0, s0 = .905 inside [.8, 1.2]: l = s0. Row 1: A > 0, s1 = 1.221 > 1.2: l = -1.2 * 2.
    assert loss.item() == pytest.approx((s0 - 2.4) / 2)
    assert st["seq_clip_frac"].item() == pytest.approx(0.5)
    assert (st["clip_frac_high"].item(), st["clip_frac_low"].item()) == pytest.approx((3 / 5, 0.0))
    assert st["ratio_min"].item() == pytest.approx(s0) and st["ratio_max"].item() == pytest.approx(s1)
    loss.backward()
    assert logp.grad is not None
    # The clipped sequence gets no gradient on any token; the other -A s0 / |o_0| per token, / 2 seqs.
    assert torch.equal(logp.grad[1], torch.zeros(3, dtype=F64))
    assert torch.allclose(logp.grad[0], t([s0 / 2 / 2, s0 / 2 / 2, 0.0]))


def test_cispo_by_hand_and_its_gradient_reaches_clipped_tokens() -> None:
    logp = t([[-1.0, -2.0, -0.5]]).requires_grad_()
    old = logp.detach() - t([[0.5, 1.0, 3.0]]).log()  # ratios .5, 1, 3
    adv, mask = t([2.0]), torch.ones(1, 3)
    loss, st = cispo_loss(logp, old, adv, mask, eps_high=0.5)  # weights min(r, 1.5) = .5, 1, 1.5
    assert loss.item() == pytest.approx(-(0.5 * 2 * -1.0 + 1.0 * 2 * -2.0 + 1.5 * 2 * -0.5) / 3)
    loss.backward()
    assert logp.grad is not None  # -w A / N on every token: the capped one (r = 3) included
    assert torch.allclose(logp.grad, t([[-0.5 * 2, -1.0 * 2, -1.5 * 2]]) / 3)
    assert (st["clip_frac_high"].item(), st["clip_frac_low"].item(), st["clip_frac"].item()) == pytest.approx(
        (1 / 3, 0.0, 1 / 3)
    )
    # The clipped surrogate drops that token: zero gradient where CISPO keeps it.
    lp2 = logp.detach().clone().requires_grad_()
    policy_loss(lp2, old, adv, mask, eps_low=0.2, eps_high=0.5)[0].backward()
    assert lp2.grad is not None and lp2.grad[0, 2].item() == 0.0 and logp.grad[0, 2].item() != 0.0
    with pytest.raises(ValueError, match="delta"):
        cispo_loss(logp, old, adv, mask, delta=4.0)


def test_registry() -> None:
    assert set(POLICY_LOSSES) == {"clip", "gspo", "gspo_token", "cispo"}
    assert resolve_policy_loss("clip").fn is policy_loss
    with pytest.raises(ValueError, match="unknown policy loss 'ppo'"):
        resolve_policy_loss("ppo")


# ----------------------------------------------------------------------------- loop reference


def ref_loss(
    name: str, logp: torch.Tensor, old: list[list[float]], adv: list[float], mask: list[list[int]],
    weights: list[list[float]], eps_low: float, eps_high: float, delta: float | None, agg: str, max_len: int,
) -> torch.Tensor:  # fmt: skip
    """One token at a time with Python scalars, the formulas of the docstrings; `logp` is a leaf
    whose gradient the caller compares."""
    b, tt = logp.shape
    per_seq, total, n_tok, n_seq = [], 0.0, 0, 0
    for i in range(b):
        toks = [j for j in range(tt) if mask[i][j]]
        if name in ("gspo", "gspo_token") and toks:
            s = torch.exp(sum(logp[i, j] - old[i][j] for j in toks) / len(toks))
        terms = []
        for j in toks:
            a, lp = adv[i], logp[i, j]
            if name == "cispo":
                w = min(math.exp(lp.item() - old[i][j]), 1 + eps_high)  # a constant: stop-gradient
                v = -w * a * lp
            else:
                if name == "clip":
                    r = torch.exp(lp - old[i][j])
                elif name == "gspo":
                    r = s
                else:  # gspo_token: the value of s, the gradient of this token's logp
                    r = s.detach() * torch.exp(lp - lp.detach())
                rc = torch.clamp(r, 1 - eps_low, 1 + eps_high)
                surr = r if delta is None else torch.clamp(r, max=delta)
                v = -torch.minimum(surr * a, rc * a)
            terms.append(v * weights[i][j])
        n_tok += len(terms)
        total = total + sum(terms)
        if terms:
            n_seq += 1
            per_seq.append(sum(terms) / (len(terms) if agg == "seq_mean_token_mean" else max_len))
    if agg == "token_mean":
        return total / max(n_tok, 1)  # type: ignore[return-value]
    return sum(per_seq) / max(n_seq, 1)  # type: ignore[return-value]


def random_case(seed: int, spread: float = 0.4) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    b, tt = [(1, 1), (3, 5), (8, 4), (5, 9), (16, 2), (6, 6)][seed]
    logp = -torch.rand(b, tt, generator=gen, dtype=F64) * 3
    return {
        "logp": logp,
        "old": logp + spread * torch.randn(b, tt, generator=gen, dtype=F64),
        "adv": torch.randn(b, generator=gen, dtype=F64),
        "mask": (torch.rand(b, tt, generator=gen) < 0.7).long(),
        "weights": torch.rand(b, tt, generator=gen, dtype=F64) + 0.5,
    }


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("agg", list(AGGREGATIONS))
@pytest.mark.parametrize("name", list(POLICY_LOSSES))
def test_losses_match_loop(name: str, agg: str, seed: int) -> None:
    c = random_case(seed, spread=0.4 if name in ("clip", "cispo") else 0.1)
    eps_low, eps_high = (0.1, 0.28) if name in ("clip", "cispo") else (0.02, 0.03)  # GSPO clips a mean
    delta = 1.5 if name != "cispo" and seed % 2 else None
    tt = c["logp"].shape[1]
    lp = c["logp"].clone().requires_grad_()
    kw: dict[str, Any] = {"eps_low": eps_low, "eps_high": eps_high, "aggregation": agg, "max_len": tt + 2}
    loss, _ = POLICY_LOSSES[name](lp, c["old"], c["adv"], c["mask"], is_weights=c["weights"], delta=delta, **kw)
    (g,) = torch.autograd.grad(loss, lp)
    lp_ref = c["logp"].clone().requires_grad_()
    ref = ref_loss(name, lp_ref, c["old"].tolist(), c["adv"].tolist(), c["mask"].tolist(), c["weights"].tolist(),
                   eps_low, eps_high, delta, agg, tt + 2)  # fmt: skip
    if not isinstance(ref, torch.Tensor) or not ref.requires_grad:  # an all-masked batch
        assert loss.item() == 0.0 and g.abs().max() == 0
        return
    (g_ref,) = torch.autograd.grad(ref, lp_ref)
    assert loss.item() == pytest.approx(ref.item(), abs=1e-12)
    assert torch.allclose(g, g_ref, atol=1e-12)


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("agg", list(AGGREGATIONS))
def test_at_ratio_one_every_loss_is_the_vanilla_policy_gradient(agg: str) -> None:
    """On-policy (old = logp) the clip, GSPO, GSPO-token and CISPO gradients all equal
    `grad aggregate(-A * logp)`: the variants differ only off-policy."""
    w, x, tokens, mask, _, adv = linear_policy(seed=1)
    logp = token_logprobs(x @ w, tokens)
    (g_ref,) = torch.autograd.grad(aggregate(-adv.unsqueeze(-1) * logp, mask, agg, max_len=6), w)  # type: ignore[arg-type]
    for name, fn in POLICY_LOSSES.items():
        logp = token_logprobs(x @ w, tokens)
        loss, st = fn(logp, logp.detach(), adv, mask, aggregation=agg, max_len=6)  # type: ignore[arg-type]
        (g,) = torch.autograd.grad(loss, w)
        assert torch.allclose(g, g_ref, rtol=1e-10, atol=1e-12), name
        assert st["clip_frac"].item() == 0.0 and st["ratio_mean"].item() == pytest.approx(1.0)


@pytest.mark.parametrize("agg", list(AGGREGATIONS))
def test_gspo_token_equals_gspo_with_sequence_advantages(agg: str) -> None:
    c = random_case(5, spread=0.05)
    out = []
    for name in ("gspo", "gspo_token"):
        lp = c["logp"].clone().requires_grad_()
        loss, st = POLICY_LOSSES[name](lp, c["old"], c["adv"], c["mask"], eps_low=0.01, eps_high=0.01, aggregation=agg,
                                       max_len=8, delta=1.02)  # fmt: skip
        out.append((loss, torch.autograd.grad(loss, lp)[0], st))
    (l1, g1, s1), (l2, g2, s2) = out
    assert s1["seq_clip_frac"] > 0  # some sequences clip
    assert l1.item() == pytest.approx(l2.item(), abs=1e-12) and torch.allclose(g1, g2, atol=1e-12)
    assert {k: v.item() for k, v in s1.items()} == pytest.approx({k: v.item() for k, v in s2.items()})


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
        old = token_logprobs(x @ w, tokens) + 0.3 * torch.randn(b, tt, generator=gen, dtype=F64)
    adv = torch.randn(b, generator=gen, dtype=F64)
    adv[2] = 0.0  # a zero-advantage row: its tokens do not count for the entropy threshold
    return w, x, tokens, mask, old, adv


def accumulated_grad(name: str, agg_name: str, chunk: int, *, use_global: bool, quantile: float | None) -> torch.Tensor:
    w, x, tokens, mask, old, adv = linear_policy()
    n_tok, n_seq = global_counts(mask)
    counts: dict[str, Any] = {"n_tokens_global": n_tok, "n_seqs_global": n_seq} if use_global else {}
    agg = resolve_aggregation(agg_name)
    gspo = name.startswith("gspo")
    kw: dict[str, Any] = {"eps_low": 0.1 if gspo else 0.2, "eps_high": 0.12 if gspo else 0.28, "max_len": 6}
    kw["delta"] = None if name == "cispo" else 1.5
    with torch.no_grad():  # the trainer's rule: one threshold over every policy-gradient token of the step
        ent = entropy_from_logits(x @ w)  # (B, T)
        pg = mask.bool() & (adv != 0).unsqueeze(-1)
        thr = entropy_threshold(ent[pg], quantile) if quantile is not None else None
    for s in range(0, len(x), chunk):
        sl = slice(s, s + chunk)
        logp = token_logprobs(x[sl] @ w, tokens[sl])
        sel = None if thr is None else high_entropy_mask(ent[sl], mask[sl], thr).to(F64)
        loss, _ = POLICY_LOSSES[name](logp, old[sl], adv[sl], mask[sl], aggregation=agg, is_weights=sel, **kw, **counts)
        loss.backward()
    assert w.grad is not None
    return w.grad


@pytest.mark.parametrize("quantile", [None, 0.3])
@pytest.mark.parametrize("agg", list(AGGREGATIONS))
@pytest.mark.parametrize("name", list(POLICY_LOSSES))
def test_micro_batches_equal_full_batch(name: str, agg: str, quantile: float | None) -> None:
    """One batch of 8 equals 8 batches of 1 and 2 of 4, for every policy loss and aggregation, with
    two-sided clipping and with high-entropy token selection (global threshold)."""
    full = accumulated_grad(name, agg, 8, use_global=False, quantile=quantile)
    assert full.abs().max() > 1e-3
    for chunk in (1, 4):
        got = accumulated_grad(name, agg, chunk, use_global=True, quantile=quantile)
        assert torch.allclose(got, full, rtol=1e-9, atol=1e-12)
    assert not torch.allclose(accumulated_grad(name, agg, 1, use_global=False, quantile=quantile), full, atol=1e-6)


def test_entropy_selection_changes_the_gradient_and_a_per_micro_batch_threshold_would_break_accumulation() -> None:
    full = accumulated_grad("clip", "token_mean", 8, use_global=False, quantile=0.3)
    assert not torch.allclose(full, accumulated_grad("clip", "token_mean", 8, use_global=False, quantile=None))
    # TRL's rule (the quantile of each micro-batch's own tokens) selects other tokens for chunks of 2.
    w, x, tokens, mask, old, adv = linear_policy()
    n_tok, _ = global_counts(mask)
    for s in range(0, 8, 2):
        sl = slice(s, s + 2)
        with torch.no_grad():
            sel = select_top_entropy(entropy_from_logits(x[sl] @ w), mask[sl] * (adv[sl] != 0).unsqueeze(-1), 0.3)
        logp = token_logprobs(x[sl] @ w, tokens[sl])
        policy_loss(logp, old[sl], adv[sl], mask[sl], eps_high=0.28, is_weights=sel.to(F64), delta=1.5,
                    n_tokens_global=n_tok)[0].backward()  # fmt: skip
    assert w.grad is not None and not torch.allclose(w.grad, full, atol=1e-6)


# ----------------------------------------------------------------------------- token selection


def ref_quantile(values: list[float], q: float) -> float:
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


@pytest.mark.parametrize("seed", range(5))
def test_entropy_threshold_and_selection_match_a_loop_and_torch_quantile(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    b, tt = [(1, 1), (2, 3), (4, 7), (8, 5), (3, 16)][seed]
    ent = torch.rand(b, tt, generator=gen, dtype=F64) * 3
    ent[0, 0] = ent[-1, -1]  # a tie
    mask = torch.rand(b, tt, generator=gen) < 0.8
    mask[0, 0] = True
    for q in (0.0, 0.2, 0.5, 1.0):
        vals = ent[mask]
        thr = entropy_threshold(vals, q)
        assert thr.item() == pytest.approx(ref_quantile(vals.tolist(), 1 - q), abs=1e-12)
        assert thr.item() == pytest.approx(torch.quantile(vals, 1 - q).item(), abs=1e-12)
        sel = select_top_entropy(ent, mask, q)
        ref = [[bool(mask[i, j]) and ent[i, j].item() >= thr.item() for j in range(tt)] for i in range(b)]
        assert sel.tolist() == ref
        assert sel.sum() >= max(1, math.floor(q * len(vals)))  # at least the top q share (ties kept)
    assert select_top_entropy(ent, mask, 1.0).equal(mask)
    assert entropy_threshold(torch.zeros(0), 0.2).item() == math.inf
    assert not select_top_entropy(ent, torch.zeros_like(mask), 0.2).any()
    with pytest.raises(ValueError, match="quantile"):
        entropy_threshold(ent.flatten(), 1.5)


@pytest.mark.parametrize("name", list(POLICY_LOSSES))
def test_every_statistic_a_loss_returns_is_declared_with_how_it_merges(name: str) -> None:
    """The micro-batch and data-parallel merges read the declaration, so a statistic a loss returns
    but does not declare would drop out of the log; the bound loss gets only the knobs it declares."""
    from rlvr.grpo.presets import resolve

    decl = POLICY_LOSSES[name]
    c = random_case(0, spread=0.4)
    o = resolve("grpo", {"policy_loss": name, "delta": None if name == "cispo" else 3.0})
    _, st = decl.bind(o, resolve_aggregation("token_mean"))(c["logp"], c["old"], c["adv"], c["mask"])
    assert set(st) <= set(decl.stats), set(st) - set(decl.stats)
    assert set(decl.knobs) <= set(type(o).model_fields)
