"""Pack prompts and completions into one padded batch for a teacher-forced forward.

Layout: prompts left-padded to the longest prompt, completions right-padded to the longest
completion, so every completion starts in the same column and its logits are the last `Lc + 1`
positions (`logits_to_keep`, which spares the vocabulary projection over the prompt). Position ids
come from the attention mask, as in sampling, so the update sees the positions the sampler used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["Packed", "pack", "completion_logits"]


@dataclass
class Packed:
    input_ids: torch.Tensor  # (B, Lp + Lc)
    attention_mask: torch.Tensor  # (B, Lp + Lc)
    position_ids: torch.Tensor  # (B, Lp + Lc)
    targets: torch.Tensor  # (B, Lc) completion tokens (pad where mask is 0)
    mask: torch.Tensor  # (B, Lc) float, 1 on completion tokens

    def to(self, device: torch.device | str) -> Packed:
        return Packed(
            *(t.to(device) for t in (self.input_ids, self.attention_mask, self.position_ids, self.targets, self.mask))
        )


def pack(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int) -> Packed:
    """Batch `prompts[i] + completions[i]` (token ids).

    >>> p = pack([[5, 6], [7]], [[8], [9, 10]], pad_id=0)
    >>> p.input_ids.tolist(), p.position_ids.tolist(), p.mask.tolist()
    ([[5, 6, 8, 0], [0, 7, 9, 10]], [[0, 1, 2, 2], [0, 0, 1, 2]], [[1.0, 0.0], [1.0, 1.0]])
    """
    b = len(prompts)
    lp = max(len(p) for p in prompts)
    lc = max(max((len(c) for c in completions), default=0), 1)
    ids = torch.full((b, lp + lc), pad_id, dtype=torch.long)
    attn = torch.zeros((b, lp + lc), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        ids[i, lp - len(p) : lp] = torch.tensor(p, dtype=torch.long)
        ids[i, lp : lp + len(c)] = torch.tensor(list(c), dtype=torch.long)
        attn[i, lp - len(p) : lp + len(c)] = 1
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    return Packed(ids, attn, pos, ids[:, lp:].clone(), attn[:, lp:].float())


def completion_logits(model, packed: Packed) -> torch.Tensor:
    """Logits that predict each completion token: (B, Lc, V)."""
    lc = packed.targets.shape[1]
    out = model(
        input_ids=packed.input_ids,
        attention_mask=packed.attention_mask,
        position_ids=packed.position_ids,
        logits_to_keep=lc + 1,
        use_cache=False,
    )
    return out.logits[:, :-1]  # (B, Lc, V): position t predicts token t+1
