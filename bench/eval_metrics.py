"""Time `rlvr.evaluate.metrics.summarize` on a GSM8K-sized evaluation: 1,319 problems x 64 samples.

Synthetic but shaped like a real run: per-problem accuracy drawn from Beta(0.7, 0.7), wrong samples
spread over a few distractor answers plus unparsed (None) ones, and a harder variant where every
wrong sample is a distinct answer. Prints the best of a few repeats for pass@k and for maj@k.

Run: `python bench/eval_metrics.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np

from rlvr.evaluate.metrics import summarize

N_PROBLEMS, N_SAMPLES, KS = 1319, 64, [1, 2, 4, 8, 16, 32, 64]


def make_eval(seed: int, distinct_wrong: bool) -> tuple[np.ndarray, np.ndarray, list[list[str | None]], list[str]]:
    rng = np.random.default_rng(seed)
    accuracy = rng.beta(0.7, 0.7, size=N_PROBLEMS)  # (P,)
    correct = rng.random((N_PROBLEMS, N_SAMPLES)) < accuracy[:, None]  # (P, n)
    tokens = rng.integers(80, 600, size=(N_PROBLEMS, N_SAMPLES))  # (P, n)
    answers: list[list[str | None]] = []
    for p in range(N_PROBLEMS):
        if distinct_wrong:
            wrong: list[str | None] = [f"w{i}" for i in range(N_SAMPLES)]
        else:
            n_distractors = int(rng.integers(1, 8))
            weights = 1.0 / np.arange(1, n_distractors + 2)  # Zipf-like, last slot = unparsed
            picks = rng.choice(n_distractors + 1, size=N_SAMPLES, p=weights / weights.sum())
            wrong = [None if j == n_distractors else f"w{j}" for j in picks]
        answers.append(["gold" if ok else w for ok, w in zip(correct[p], wrong, strict=True)])
    return correct, tokens, answers, ["gold"] * N_PROBLEMS


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(f"{N_PROBLEMS} problems x {N_SAMPLES} samples, ks={KS}")
    for label, distinct in (("few distractors", False), ("all wrong answers distinct", True)):
        correct, tokens, answers, golds = make_eval(0, distinct)
        t_pass = best_of(5, partial(summarize, correct, tokens, KS))
        t_all = best_of(3, partial(summarize, correct, tokens, KS, answers, golds))
        out = summarize(correct, tokens, KS, answers, golds)
        print(f"[{label}]")
        print(f"  pass@k only:       {t_pass * 1e3:8.1f} ms")
        print(f"  pass@k + maj@k:    {t_all * 1e3:8.1f} ms")
        print("  " + "  ".join(f"k={k}: pass {out[f'pass@{k}']:.3f} maj {out[f'maj@{k}']:.3f}" for k in (1, 8, 64)))


if __name__ == "__main__":
    main()
