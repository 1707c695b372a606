"""Sample completions for problems and score them with the verifier: the core of `rlvr eval`, also
used by the trainer's periodic evaluation and by reward-search screening."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlvr.config import SamplingConfig
from rlvr.envs import EnvRunner
from rlvr.models.decoding import fast_decoder_supported
from rlvr.models.engines import Sampler
from rlvr.tasks import Problem, PromptFormatter
from rlvr.verify import Verdict, verify_answer

__all__ = ["Scored", "sample_and_score", "score_conversations"]


@dataclass
class Scored:
    """Per problem (P) and sample (n): correctness, parsed answers, token counts, texts."""

    correct: np.ndarray  # (P, n) bool
    tokens: np.ndarray  # (P, n) int, generated tokens including EOS
    truncated: np.ndarray  # (P, n) bool
    parsed: list[list[str | None]]
    reasons: list[list[str]]
    texts: list[list[str]]
    statuses: list[list[str]] | None = None  # (P, n) each verdict's status (rlvr.verify.STATUSES)
    env_tokens: np.ndarray | None = None  # (P, n) an environment's (tool) tokens; `tokens` are the model's
    tool_calls: np.ndarray | None = None  # (P, n) tool calls of each conversation
    messages: list[list[list[dict[str, Any]]]] | None = None  # (P, n) each conversation after the prompt
    prompts: list[str] | None = None  # (P,) each problem's first prompt as the conversations began (tools included)


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
    verify: Callable[..., Verdict] = verify_answer,
) -> Scored:
    """Sample `n` completions per problem with `sampling` (`greedy`: decode greedily instead), prompted
    by `formatter`, through `sampler` (default: rlvr's fast decoder
    where the architecture allows, else the model's forward), and `verify` each (the task's verifier)."""
    sampler = sampler or Sampler("fast" if fast_decoder_supported(model) else "hf")
    comp = sampler.sample(
        model,
        tok,
        [formatter.prompt(p) for p in problems],
        n,
        sampling,
        end_ids=sorted(formatter.end_ids),
        greedy=greedy,
        seed=seed,
        chunk_size=chunk_size,
        bf16=bf16,
    )
    pairs = zip(comp.texts, comp.prompt_index, strict=True)
    verdicts = [verify(t, problems[i].answer, **problems[i].columns) for t, i in pairs]
    shape = (len(problems), n)
    return Scored(
        correct=np.array([v.correct for v in verdicts], dtype=bool).reshape(shape),
        tokens=np.array(comp.lengths, dtype=np.int64).reshape(shape),
        truncated=np.array(comp.truncated, dtype=bool).reshape(shape),
        parsed=[[v.parsed for v in verdicts[i * n : (i + 1) * n]] for i in range(len(problems))],
        reasons=[[v.reason for v in verdicts[i * n : (i + 1) * n]] for i in range(len(problems))],
        statuses=[[v.status for v in verdicts[i * n : (i + 1) * n]] for i in range(len(problems))],
        texts=[comp.texts[i * n : (i + 1) * n] for i in range(len(problems))],
    )


def score_conversations(
    model,
    tok,
    problems: Sequence[Problem],
    env: EnvRunner,
    *,
    n: int,
    sampling: SamplingConfig,
    seed: int,
    greedy: bool = False,
    bf16: bool = False,
    sampler: Sampler | None = None,
    verify: Callable[..., Verdict] = verify_answer,
) -> Scored:
    """`n` conversations per problem with an environment (`rlvr.envs`), each judged by `verify` on its
    last assistant turn; `tokens` count the model's tokens (its budget), `env_tokens` the tools'."""
    sampler = sampler or Sampler("fast" if fast_decoder_supported(model) else "hf")
    convs, trajs = env.run(
        model, tok, list(problems), n, sampling, seed=seed, sampler=sampler, bf16=bf16, greedy=greedy
    )
    finals = [c.answer for c in convs]
    verdicts = [verify(t, problems[i // n].answer, **problems[i // n].columns) for i, t in enumerate(finals)]
    shape = (len(problems), n)
    rows = range(len(problems))
    return Scored(
        correct=np.array([v.correct for v in verdicts], dtype=bool).reshape(shape),
        tokens=np.array([t.model_tokens for t in trajs], dtype=np.int64).reshape(shape),
        truncated=np.array([t.truncated for t in trajs], dtype=bool).reshape(shape),
        parsed=[[v.parsed for v in verdicts[i * n : (i + 1) * n]] for i in rows],
        reasons=[[v.reason for v in verdicts[i * n : (i + 1) * n]] for i in rows],
        statuses=[[v.status for v in verdicts[i * n : (i + 1) * n]] for i in rows],
        texts=[finals[i * n : (i + 1) * n] for i in rows],
        env_tokens=np.array([t.env_tokens for t in trajs], dtype=np.int64).reshape(shape),
        tool_calls=np.array([c.tool_calls for c in convs], dtype=np.int64).reshape(shape),
        messages=[[c.reply for c in convs[i * n : (i + 1) * n]] for i in rows],
        prompts=[tok.decode(trajs[i * n].prompt_ids) for i in rows],
    )
