"""The speed paths against their references: the fast decoder against Hugging Face's forward on each
supported architecture, shared-prompt packing against flat packing, and the update that skips
zero-advantage rows against one that runs every row."""

import copy
from pathlib import Path

import pytest
import torch

from rlvr.config import SamplingConfig, load_config
from rlvr.grpo import objective as obj
from rlvr.grpo.config import TrainConfig
from rlvr.grpo.rollout import collect
from rlvr.grpo.trainer import GRPOTrainer
from rlvr.models.batching import completion_logits, pack, pack_groups
from rlvr.models.decoding import FastDecoder, HFDecoder, fast_decoder_supported, make_decoder
from rlvr.models.sampling import _sample_chunk, autocast


def _tiny(model_type: str, **extra):
    """A random tiny model of the given architecture with peaky logits (weights scaled up)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = dict(
        vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )  # fmt: skip
    kw.update(extra)
    cfg = AutoConfig.for_model(model_type, **kw)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(4.0)
    return model


ARCHS = {
    "llama-gqa": ("llama", {}),
    "qwen2-bias": ("qwen2", {}),
    "qwen3-qknorm": ("qwen3", {"head_dim": 16}),
    "mistral": ("mistral", {"sliding_window": None}),
}
PROMPTS = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14]]


def _batch(prompts, n):
    rows = [p for p in prompts for _ in range(n)]
    width = max(len(p) for p in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(rows):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize(("bf16", "n"), [(False, 4), (True, 4), (False, 1)])
def test_fast_decoder_logits_match_hugging_face(arch: str, bf16: bool, n: int) -> None:
    """Prefill (left-padded prompts, each repeated n times; the distinct prompts are not in sorted
    order) and eight decoding steps, with rows dropped (riding along, then compacted) and reordered
    on the way: the same logits as HF's forward."""
    model = _tiny(ARCHS[arch][0], **ARCHS[arch][1])
    assert fast_decoder_supported(model)
    ids, mask, pos = _batch(PROMPTS, n)
    decoders = [HFDecoder(model), FastDecoder(model, torch.bfloat16 if bf16 else None)]
    with torch.no_grad(), autocast(model, bf16):
        logits = [d.start(ids, mask, pos, 8) for d in decoders]
        next_pos = pos[:, -1] + 1
        for step in range(8):
            if bf16:  # bf16 rounds at different points (HF: bf16 q.k in sdpa; here fp32): compare distributions
                probs = [torch.softmax(x.float(), -1) for x in logits]
                torch.testing.assert_close(probs[1], probs[0], atol=0.1, rtol=0)
            else:
                torch.testing.assert_close(logits[1], logits[0], atol=1e-4, rtol=1e-4)
            tok = logits[0].argmax(-1)
            keep = None
            if step == 1 and tok.numel() > 3:  # one row done: it rides along (n=4: 12 -> 11, no compaction)
                keep = torch.tensor([i for i in range(tok.numel()) if i != 1])
            elif step == 3:  # the live rows reordered
                keep = torch.arange(tok.numel()).flip(0)
            elif step == 5 and tok.numel() > 1:  # every third row done (n=4: 11 -> 7, compacting)
                keep = torch.arange(tok.numel())[torch.arange(tok.numel()) % 3 != 1]
            if keep is not None:
                tok, next_pos = tok[keep], next_pos[keep]
                for d in decoders:
                    d.keep(keep)
            logits = [d.step(tok, next_pos) for d in decoders]
            next_pos = next_pos + 1


@pytest.mark.parametrize("arch", list(ARCHS))
def test_fast_decoder_samples_the_same_tokens(arch: str) -> None:
    """The whole sampling loop, greedy and at temperature 1, with an end token that rows reach at
    different steps: the same completions from both decoders."""
    model = _tiny(ARCHS[arch][0], **ARCHS[arch][1])
    ids = [p for p in PROMPTS for _ in range(4)]
    s = SamplingConfig(max_new_tokens=12)
    common = dict(
        stop_hit=None,
        pad_id=0,
        base=7,
        total=len(ids),
        device=torch.device("cpu"),
    )
    greedy, _, _ = _sample_chunk(
        HFDecoder(model), ids, torch.arange(len(ids)), s, greedy=True, stop_ids={-1}, entropy=False, **common
    )

    def balance(t: int) -> int:  # an end token that about half the rows reach
        hit = sum(t in row for row in greedy)
        return min(hit, len(greedy) - hit)

    eos = max(range(3, 48), key=balance)
    assert balance(eos) >= 2
    for greedy_ in (True, False):
        out = [
            _sample_chunk(
                d, ids, torch.arange(len(ids)), s, greedy=greedy_, stop_ids={eos}, entropy=True, **common
            )  # fmt: skip
            for d in (HFDecoder(model), FastDecoder(model))
        ]
        assert out[0][0] == out[1][0]
        assert out[0][1] == out[1][1]
        assert not all(out[0][1])  # rows ended at the end token...
        if greedy_:
            assert any(out[0][1])  # ...and others ran to the limit
        assert out[0][2] == pytest.approx(out[1][2], abs=1e-4)  # entropies


def test_fast_decoder_refuses_what_it_does_not_reproduce() -> None:
    from peft import LoraConfig, get_peft_model

    assert not fast_decoder_supported(_tiny("mistral", sliding_window=4))
    assert not fast_decoder_supported(_tiny("llama", hidden_act="gelu"))
    assert not fast_decoder_supported(_tiny("gpt2", n_embd=32, n_layer=1, n_head=2))
    for extra in ({"use_dora": True}, {"modules_to_save": ["lm_head"]}, {"target_modules": ["q_proj", "lm_head"]}):
        kw = {"r": 2, "target_modules": ["q_proj"], "task_type": "CAUSAL_LM", **extra}
        lora = get_peft_model(_tiny("llama"), LoraConfig(**kw))
        assert not fast_decoder_supported(lora), extra
        assert isinstance(make_decoder(lora), HFDecoder)
        with pytest.raises(ValueError, match="does not support"):
            make_decoder(lora, fast=True)


@pytest.mark.parametrize("arch", ["llama-gqa", "qwen2-bias"])
def test_fast_decoder_samples_a_lora_policy_from_its_merged_weights(arch: str) -> None:
    """Plain LoRA on every projection, adapters trained away from zero: the fast decoder's logits
    (merged weights) equal the peft model's own forward through prefill and decoding steps; with the
    adapters disabled it gives the base model's."""
    from peft import LoraConfig, get_peft_model

    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    model = get_peft_model(
        _tiny(ARCHS[arch][0], **ARCHS[arch][1]), LoraConfig(r=4, lora_alpha=8, target_modules=targets)
    ).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    assert fast_decoder_supported(model) and isinstance(make_decoder(model), FastDecoder)
    ids, mask, pos = _batch(PROMPTS, 2)
    with torch.no_grad():
        decoders = [HFDecoder(model), FastDecoder(model)]
        logits = [d.start(ids, mask, pos, 4) for d in decoders]
        next_pos = pos[:, -1] + 1
        for _ in range(4):
            torch.testing.assert_close(logits[1], logits[0], atol=1e-4, rtol=1e-4)
            tok = logits[0].argmax(-1)
            logits = [d.step(tok, next_pos) for d in decoders]
            next_pos = next_pos + 1
        with model.disable_adapter():  # peft's switch for the KL reference: the base model's logits
            off = FastDecoder(model).start(ids, mask, pos, 1)
            base = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
        torch.testing.assert_close(off, base, atol=1e-4, rtol=1e-4)
        assert not torch.allclose(off, FastDecoder(model).start(ids, mask, pos, 1), atol=1e-2)


LONG = [[20, 21, 22], [23], [24, 25, 26, 27, 1], [28, 1], [29, 30], [31]]


@pytest.mark.parametrize(
    ("arch", "lora", "comps"),
    [
        ("llama", False, LONG),
        ("llama", False, [[20], [21], [1], [22], [23], [1]]),  # one token each: the prompt's last logits alone
        ("qwen3", False, LONG),
        ("qwen2", True, LONG),  # a peft-wrapped policy: its forward takes the cache through **kwargs
    ],
)
def test_group_packing_matches_flat_packing(arch: str, lora: bool, comps) -> None:
    """The prompt once per group with its cache repeated: the same log-probs and gradients as
    packing every (prompt, completion) pair, for uneven group sizes."""
    model = _tiny(arch, **ARCHS["qwen3-qknorm"][1] if arch == "qwen3" else {}).train()
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
        with torch.no_grad():  # non-zero adapters, so the gradient reaches both LoRA matrices
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.normal_(0, 0.5)
    prompts = [[5, 6, 7, 8], [9], [10, 11, 12]]
    sizes = [3, 1, 2]
    flat = pack([p for p, n in zip(prompts, sizes, strict=True) for _ in range(n)], comps, pad_id=0)
    grouped = pack_groups(prompts, comps, pad_id=0, group_sizes=sizes)
    assert torch.equal(flat.targets, grouped.targets) and torch.equal(flat.mask, grouped.mask)
    logps, grads = [], []
    for batch in (flat, grouped):
        model.zero_grad()
        lp = obj.token_logprobs(completion_logits(model, batch), batch.targets)
        (lp * batch.mask).sum().backward()
        logps.append(lp * batch.mask)
        grads.append([p.grad.clone() for p in model.parameters() if p.requires_grad])
    torch.testing.assert_close(logps[1], logps[0], atol=1e-5, rtol=1e-5)
    for a, b in zip(*grads, strict=True):  # float32 sums in another order: 1.2e-4 seen on one host's GEMM kernels
        torch.testing.assert_close(b, a, atol=3e-4, rtol=1e-4)


def _reference_update(model, opt, ro, pad_id: int, cfg, ocfg) -> None:
    """One GRPO step the plain way: every row, one flat batch, token-mean over all tokens."""
    batch = pack(ro.prompt_tokens, ro.tokens, pad_id)
    logp = obj.token_logprobs(completion_logits(model, batch), batch.targets)
    loss, _ = obj.policy_loss(
        logp, logp.detach(), ro.advantages, batch.mask, eps_low=ocfg.eps_low, eps_high=ocfg.eps_high,
        aggregation=obj.resolve_aggregation(ocfg.aggregation), max_len=cfg.sampling.max_new_tokens,
        n_tokens_global=batch.mask.sum(), n_seqs_global=(batch.mask.sum(1) > 0).sum(),
    )  # fmt: skip
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), cfg.grad_clip)
    opt.step()


@pytest.mark.parametrize(
    ("aggregation", "micro_batch_size"),
    [("token_mean", 4), ("seq_mean_token_mean", 4), ("seq_mean_token_sum_norm", 4), ("token_mean", 3)],
)
def test_skipping_zero_advantage_rows_changes_nothing(
    tiny_model_dir: Path, tmp_path: Path, aggregation: str, micro_batch_size: int
) -> None:
    """Two steps: one with some zero-advantage rows, then one where every advantage is 0 (nothing
    runs, yet AdamW's momentum still moves the weights): the same weights as running every row.
    A micro-batch smaller than a group splits the group."""
    cfg = load_config(
        TrainConfig, None,
        {"model": str(tiny_model_dir), "out": str(tmp_path / "run"), "n_train": 16, "prompts_per_step": 2,
         "group_size": 4, "sampling": {"max_new_tokens": 10}, "micro_batch_size": micro_batch_size, "lr": 1e-3,
         "eval_every": 0, "threads": 1, "objective_overrides": {"aggregation": aggregation, "beta": 0.0}},
    )  # fmt: skip
    tr = GRPOTrainer(cfg)
    ref_model = copy.deepcopy(tr.model)
    ref_opt = torch.optim.AdamW(ref_model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ro = collect(tr.model, tr.tok, tr.fmt, tr._next_problems, tr.runner, tr.cfg, tr.ocfg, tr.advantage_fn, tr.gen)
    ro.advantages = torch.tensor([1.0, -1.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0])  # group 2 zero-std, one zero row
    assert all(len(idx) <= micro_batch_size for idx, _ in tr._micro_batches(ro, list(range(8))))
    stats = tr.update(ro)
    assert stats["update_rows_frac"] == pytest.approx(3 / 8)
    _reference_update(ref_model, ref_opt, ro, tr.tok.pad_token_id, cfg, tr.ocfg)
    for a, b in zip(tr.model.parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-5)  # Adam steps are ~lr = 1e-3
    ro.advantages = torch.zeros(8)
    before = [p.detach().clone() for p in tr.model.parameters()]
    stats = tr.update(ro)
    assert stats["update_rows_frac"] == 0.0
    _reference_update(ref_model, ref_opt, ro, tr.tok.pad_token_id, cfg, tr.ocfg)
    for a, b in zip(tr.model.parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-5)  # Adam steps are ~lr = 1e-3
    assert any(not torch.equal(a, c) for a, c in zip(tr.model.parameters(), before, strict=True))
