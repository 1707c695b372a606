"""How a model explores on each rung of the arith ladder: the numbers docs/embedded.md tabulates.

    python bench/ladder.py MODEL [--rungs small,easy,...] [--n 300] [--samples 8] [--split dev]

Per rung: sampled pass@1 (T = 1, the model's SFT prompt), greedy accuracy, pass@G, the share of
problems whose G samples disagree (GRPO's "mixed groups": some right, some wrong), the spread of
per-problem pass rates, the mean per-token entropy of the sampling distribution, the mean
completion length, and the share of samples that work the chain (write a `<<...>>` step) with the
accuracy of those and of the bare answers, and how far the process reward departs from the outcome
reward on the model's own samples: `partial`, the share of wrong samples the process reward pays
(process > 0), and `disagree`, the share of within-group pairs the two rewards order differently
(where the granularity study can tell them apart). `MODEL` is a model folder or a run folder holding
`model/`.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from rlvr.config import SamplingConfig
from rlvr.models.engines import Sampler
from rlvr.models.load import load_model, load_tokenizer, resolve_model_path
from rlvr.rewards.process import process_score
from rlvr.tasks import PromptFormatter, load_task
from rlvr.tasks.arith import LADDER
from rlvr.verify import verify_answer


def probe(model, tok, rung: str, *, n: int, samples: int, split: str, seed: int) -> dict[str, object]:
    probs = load_task("arith", split, n=n, seed=seed, preset=rung)  # type: ignore[arg-type]
    fmt = PromptFormatter.create(tok, "auto", None)
    prompts, ends, sampler = [fmt.prompt(p) for p in probs], sorted(fmt.end_ids), Sampler("fast")
    sampled = sampler.sample(model, tok, prompts, samples, SamplingConfig(), end_ids=ends, seed=seed, entropy=True)
    greedy = sampler.sample(model, tok, prompts, 1, SamplingConfig(), end_ids=ends, greedy=True, seed=seed)

    def right(c) -> np.ndarray:
        pairs = zip(c.texts, c.prompt_index, strict=True)
        return np.array([verify_answer(t, probs[i].answer).correct for t, i in pairs])

    ok = right(sampled)
    worked = np.array(["<<" in t for t in sampled.texts])  # the completion works the chain
    rate = ok.reshape(len(probs), samples).mean(1)
    proc = np.array([process_score(t, probs[i].steps) or 0.0 for t, i in zip(sampled.texts, sampled.prompt_index,
                                                                              strict=True)])  # fmt: skip
    o, q = ok.reshape(len(probs), samples).astype(float), proc.reshape(len(probs), samples)
    iu = np.triu_indices(samples, 1)

    def order(r: np.ndarray) -> np.ndarray:  # (P, G) -> (P, pairs): the sign of each within-group pair
        return np.sign(r[:, :, None] - r[:, None, :])[:, iu[0], iu[1]]

    do, dq = order(o), order(q)
    bins = np.histogram(rate, bins=[0, 1e-9, 0.25, 0.5, 0.75, 1 - 1e-9, 1.0 + 1e-9])[0] / len(rate)
    return {
        "rung": rung, "pass@1": float(rate.mean()), "greedy": float(right(greedy).mean()),
        f"pass@{samples}": float((rate > 0).mean()), "mixed": float(((rate > 0) & (rate < 1)).mean()),
        "pass_rate_bins": [round(float(b), 3) for b in bins], "entropy": float(np.mean(sampled.entropy)),
        "tokens": float(np.mean(sampled.lengths)), "worked": float(worked.mean()),
        "acc_worked": float(ok[worked].mean()) if worked.any() else float("nan"),
        "acc_bare": float(ok[~worked].mean()) if (~worked).any() else float("nan"),
        "partial": float((proc[~ok] > 0).mean()) if (~ok).any() else float("nan"), "disagree": float((do != dq).mean()),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--rungs", default=",".join(LADDER))
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    path = resolve_model_path(args.model)
    tok, model = load_tokenizer(path), load_model(path).eval()
    print("rung      pass@1  greedy  pass@G  mixed  entropy  tokens  worked  acc worked/bare  partial  disagree  "
          "pass-rate bins (0, <.25, <.5, <.75, <1, 1)")  # fmt: skip
    for rung in args.rungs.split(","):
        r = probe(model, tok, rung, n=args.n, samples=args.samples, split=args.split, seed=args.seed)
        g = r[f"pass@{args.samples}"]
        print(f"{rung:<9} {r['pass@1']:6.3f}  {r['greedy']:6.3f}  {g:6.3f}  {r['mixed']:5.0%}  {r['entropy']:7.3f}  "
              f"{r['tokens']:6.1f}  {r['worked']:6.0%}  {r['acc_worked']:.3f}/{r['acc_bare']:.3f}      "
              f"{r['partial']:6.0%}  {r['disagree']:8.0%}  {r['pass_rate_bins']}")  # fmt: skip
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
