"""Sample completions for problems and score them with the verifier: the core of `rlvr eval`, also
used by the trainer's periodic evaluation and by reward-search screening."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rlvr.config import SamplingConfig
from rlvr.models.decoding import fast_decoder_supported
from rlvr.models.engines import Sampler
from rlvr.tasks import Problem, PromptFormatter
from rlvr.verify import Verdict, verify_answer

__all__ = ["Scored", "sample_and_score"]


@dataclass
class Scored:
    """Per problem (P) and sample (n): correctness, parsed answers, token counts, texts."""

    correct: np.ndarray  # (P, n) bool
    tokens: np.ndarray  # (P, n) int, generated tokens including EOS
    truncated: np.ndarray  # (P, n) bool
    parsed: list[list[str | None]]
    reasons: list[list[str]]
    texts: list[list[str]]


def sample_and_score(
    model,
    tok,
    problems: Sequence[Problem],
    *,
    n: int,
    sampling: SamplingConfig,
    formatter: PromptFormatter,
    seed: int,
    greedy: bool = False,
    chunk_size: int = 128,
    bf16: bool = False,
    sampler: Sampler | None = None,
    verify: Callable[[str, str], Verdict] = verify_answer,
) -> Scored:
    """Sample `n` completions per problem with `sampling` (`greedy`: decode greedily instead), prompted
    by `formatter`, through `sampler` (default: rlvr's fast decoder
    where the architecture allows, else the model's forward), and `verify` each (the task's verifier)."""
    sampler = sampler or Sampler("fast" if fast_decoder_supported(model) else "hf")
    comp = sampler.sample(
        model, tok, [formatter.prompt(p) for p in problems], n, sampling, end_ids=sorted(formatter.end_ids),
        greedy=greedy, seed=seed, chunk_size=chunk_size, bf16=bf16,
    )  # fmt: skip
    verdicts = [verify(t, problems[i].answer) for t, i in zip(comp.texts, comp.prompt_index, strict=True)]
    shape = (len(problems), n)
    return Scored(
        correct=np.array([v.correct for v in verdicts], dtype=bool).reshape(shape),
        tokens=np.array(comp.lengths, dtype=np.int64).reshape(shape),
        truncated=np.array(comp.truncated, dtype=bool).reshape(shape),
        parsed=[[v.parsed for v in verdicts[i * n : (i + 1) * n]] for i in range(len(problems))],
        reasons=[[v.reason for v in verdicts[i * n : (i + 1) * n]] for i in range(len(problems))],
        texts=[comp.texts[i * n : (i + 1) * n] for i in range(len(problems))],
    )
