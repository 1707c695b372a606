"""Rejection-sampling fine-tuning (RFT) as pure functions: which samples become targets, and their loss.

RFT (Yuan et al. 2023, arXiv:2308.01825), STaR (Zelikman et al. 2022, arXiv:2203.14465), ReST-EM
(Singh et al. 2023, arXiv:2312.06585) and RAFT (Dong et al. 2023, arXiv:2304.06767) share one step:
sample from the current model, keep the samples the verifier accepts, fine-tune on them. arXiv:2504.11343
finds it competitive with GRPO on math. It sees what GRPO sees (one verdict per sample), so it is
GRPO's information-matched baseline. `objective: rft` of `rlvr train` runs it in the GRPO trainer
(same prompts, group size, sampler, verifier, run folder, resume); docs/train.md.

Imports only torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["nll_sum", "rft_targets"]


def rft_targets(
    correct: Sequence[bool],
    truncated: Sequence[bool],
    tokens: Sequence[Sequence[int]],
    group_size: int,
    *,
    max_per_prompt: int | None = None,
    dedup: bool = True,
) -> list[int]:
    """The rows (prompt-major, `group_size` per prompt) that become SFT targets: accepted by the task's
    verifier (`correct`) and finished (not `truncated`: a cut-off sample would teach the model not to
    stop), with identical token sequences of a prompt kept once when `dedup`, and at most
    `max_per_prompt` per prompt, the first ones drawn (the samples are exchangeable).

    >>> rft_targets([True, True, False, True], [False, False, False, True], [[1], [1], [2], [3]], 4)
    [0]
    >>> rft_targets([True, True, True, True], [False] * 4, [[1], [1], [2], [3]], 2, max_per_prompt=1, dedup=False)
    [0, 2]
    """
    n = len(correct)
    if not (len(truncated) == len(tokens) == n) or group_size < 1 or n % group_size:
        raise ValueError(
            f"rft_targets: {n} verdicts, {len(truncated)} truncation flags, {len(tokens)} samples, G={group_size}"
        )
    out: list[int] = []
    for start in range(0, n, group_size):
        seen: set[tuple[int, ...]] = set()
        kept = 0
        for i in range(start, start + group_size):
            if not correct[i] or truncated[i]:
                continue
            key = tuple(tokens[i])
            if dedup and key in seen:
                continue
            if max_per_prompt is not None and kept >= max_per_prompt:
                break
            seen.add(key)
            out.append(i)
            kept += 1
    return out


def nll_sum(logp: Tensor, mask: Tensor) -> Tensor:
    """The negative log-likelihood summed over the `mask`ed target tokens: `logp`, `mask` `(B, T)`; divided
    by the step's target-token count it is the token-mean SFT loss (`rlvr sft`'s).

    >>> nll_sum(torch.log(torch.tensor([[0.5, 0.25], [1.0, 0.1]])), torch.tensor([[1, 1], [1, 0]])).item() == -float(
    ...     torch.log(torch.tensor(0.125)))
    True
    """
    return -torch.where(mask.bool(), logp, 0.0).sum()
