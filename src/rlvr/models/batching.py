"""Pack prompts and completions into padded batches for a teacher-forced forward.

`pack` (`Packed`): prompts left-padded to the longest prompt, completions right-padded to the longest
completion, so every completion starts in the same column and its logits are the last `Lc + 1` positions
(`logits_to_keep`, which spares the vocabulary projection over the prompt). Position ids come from the
attention mask, as in sampling. `pack_groups` (`GroupPacked`) runs a group's shared prompt once and repeats
its KV cache for the G completions (docs/train.md, "Where a step's time goes").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rlvr.models.decoding import cache_kw, cache_of
from rlvr.models.sampling import _left_pad

__all__ = ["Packed", "GroupPacked", "pack", "pack_groups", "completion_logits"]


@dataclass
class Packed:
    input_ids: torch.Tensor  # (B, Lp + Lc)
    attention_mask: torch.Tensor  # (B, Lp + Lc)
    position_ids: torch.Tensor  # (B, Lp + Lc)
    targets: torch.Tensor  # (B, Lc) completion tokens (pad where mask is 0)
    mask: torch.Tensor  # (B, Lc) float, 1 on completion tokens

    def to(self, device: torch.device | str) -> Packed:
        return Packed(**{f.name: getattr(self, f.name).to(device) for f in dataclasses.fields(self)})


def pack(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int) -> Packed:
    """Batch `prompts[i] + completions[i]` (token ids).

    >>> p = pack([[5, 6], [7]], [[8], [9, 10]], pad_id=0)
    >>> p.input_ids.tolist(), p.position_ids.tolist(), p.mask.tolist()
    ([[5, 6, 8, 0], [0, 7, 9, 10]], [[0, 1, 2, 2], [0, 0, 1, 2]], [[1.0, 0.0], [1.0, 1.0]])
    """
    p_ids, p_mask = _left_pad(prompts, pad_id)
    c_ids, c_mask = _right_pad(completions, pad_id)
    ids, attn = torch.cat([p_ids, c_ids], dim=1), torch.cat([p_mask, c_mask], dim=1)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    return Packed(ids, attn, pos, c_ids, c_mask.float())


def _right_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids and mask (N, Lc) of completions right-padded to the longest (at least one column)."""
    width = max(max((len(s) for s in seqs), default=0), 1)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = 1
    return ids, mask


@dataclass
class GroupPacked:
    """k prompts, prompt j with `group_sizes[j]` completions (prompt-major)."""

    prompt_ids: torch.Tensor  # (k, Lp) left-padded
    prompt_mask: torch.Tensor  # (k, Lp)
    prompt_pos: torch.Tensor  # (k, Lp)
    prompt_of: torch.Tensor  # (N,) the prompt of each completion
    input_ids: torch.Tensor  # (N, Lc - 1) completion tokens fed after the prompt (all but the last)
    attention_mask: torch.Tensor  # (N, Lp + Lc - 1)
    position_ids: torch.Tensor  # (N, Lc - 1)
    targets: torch.Tensor  # (N, Lc)
    mask: torch.Tensor  # (N, Lc) float, 1 on completion tokens

    def to(self, device: torch.device | str) -> GroupPacked:
        return GroupPacked(**{f.name: getattr(self, f.name).to(device) for f in dataclasses.fields(self)})


def pack_groups(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    pad_id: int,
    group_sizes: int | Sequence[int],
) -> GroupPacked:
    """Batch k prompts with their completions, prompt-major: the first `group_sizes[0]` completions
    belong to `prompts[0]`, and so on (an int means the same size for every prompt).

    >>> g = pack_groups([[5, 6], [7]], [[8], [9, 10], [11, 12], [13]], pad_id=0, group_sizes=2)
    >>> g.input_ids.tolist(), g.position_ids.tolist(), g.attention_mask.tolist()
    ([[8], [9], [11], [13]], [[2], [2], [1], [1]], [[1, 1, 1], [1, 1, 1], [0, 1, 1], [0, 1, 1]])
    >>> g.targets.tolist(), g.mask.tolist(), g.prompt_of.tolist()
    ([[8, 0], [9, 10], [11, 12], [13, 0]], [[1.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 0.0]], [0, 0, 1, 1])
    """
    k = len(prompts)
    sizes = [group_sizes] * k if isinstance(group_sizes, int) else list(group_sizes)
    if len(sizes) != k or sum(sizes) != len(completions):
        raise ValueError(f"{len(completions)} completions do not split into groups of {sizes} for {k} prompts")
    prompt_of = torch.repeat_interleave(torch.arange(k), torch.tensor(sizes, dtype=torch.long))
    p_ids, p_mask = _left_pad(prompts, pad_id)
    c_ids, c_mask = _right_pad(completions, pad_id)
    lc = c_ids.shape[1]
    p_len = p_mask.sum(1)[prompt_of]  # (N,)
    return GroupPacked(
        prompt_ids=p_ids,
        prompt_mask=p_mask,
        prompt_pos=(p_mask.cumsum(-1) - 1).clamp(min=0),
        prompt_of=prompt_of,
        input_ids=c_ids[:, :-1],
        attention_mask=torch.cat([p_mask[prompt_of], c_mask[:, :-1]], dim=1),
        position_ids=p_len[:, None] + torch.arange(lc - 1)[None, :],
        targets=c_ids,
        mask=c_mask.float(),
    )


def completion_logits(model, packed: Packed | GroupPacked) -> torch.Tensor:
    """Logits that predict each completion token: (B, Lc, V)."""
    if isinstance(packed, GroupPacked):
        return _group_logits(model, packed)
    lc = packed.targets.shape[1]
    out = model(
        input_ids=packed.input_ids,
        attention_mask=packed.attention_mask,
        position_ids=packed.position_ids,
        logits_to_keep=lc + 1,
        use_cache=False,
    )
    return out.logits[:, :-1]  # (B, Lc, V): position t predicts token t+1


def _group_logits(model, gp: GroupPacked) -> torch.Tensor:
    """The prompt once per group, its cache repeated G times, then the completions on top."""
    out = model(
        input_ids=gp.prompt_ids,
        attention_mask=gp.prompt_mask,
        position_ids=gp.prompt_pos,
        use_cache=True,
        logits_to_keep=1,
    )
    first = out.logits[:, -1:][gp.prompt_of]  # (N, 1, V) predicts completion token 0
    if gp.input_ids.shape[1] == 0:
        return first
    cache = cache_of(out)
    cache.batch_select_indices(gp.prompt_of)  # each completion gets its prompt's keys and values
    rest = model(
        input_ids=gp.input_ids,
        attention_mask=gp.attention_mask,
        position_ids=gp.position_ids,
        use_cache=True,
        **{cache_kw(model): cache},
    ).logits  # (N, Lc - 1, V): position t predicts completion token t+1
    return torch.cat([first, rest], dim=1)
