"""rlvr's own IFEval-style prompts for training and dev: a base request (data/base_requests.txt, written for
rlvr) followed by one to three verifiable instructions drawn from the 25 declarations, with their arguments.

Seeded and deterministic (`random.Random(int)`, no hash of a str); train and dev use disjoint topics; prompts
carry `key`, `prompt`, `instruction_id_list` and `kwargs` like IFEval's rows. The instruction wording is rlvr's
own, so no prompt shares an 8-gram with IFEval's test prompts (checked by the tests).

>>> rows = generate_prompts("train", 2, seed=0)
>>> [sorted(r) for r in rows][0]
['instruction_id_list', 'key', 'kwargs', 'prompt']
>>> rows == generate_prompts("train", 2, seed=0)
True
"""

from __future__ import annotations

import random
from functools import lru_cache
from importlib.resources import files
from typing import Any, Literal

from rlvr.verify.ifeval.instructions import REGISTRY, Instruction

Split = Literal["train", "dev"]
SPLITS: tuple[Split, ...] = ("train", "dev")
FORMS_PER_TOPIC = 8
DEV_EVERY = 5
# groups that may hold two instructions of a prompt; every other group holds at most one
PAIRED_GROUPS = frozenset({"keywords", "format"})
# pairs that no response can satisfy together (or only by mixing languages)
_CASE = ("change_case:english_capital", "change_case:english_lowercase", "language:response_language")
EXCLUDES = {
    frozenset({"punctuation:no_comma", "detectable_format:json_format"}),
    frozenset({"punctuation:no_comma", "combination:repeat_prompt"}),
    frozenset({"startend:quotation", "detectable_format:json_format"}),
    frozenset({"detectable_format:title", "combination:repeat_prompt"}),
    frozenset({"startend:end_checker", "language:response_language"}),
    *(frozenset({case, other}) for case in _CASE for other in (
        "detectable_format:constrained_response", "detectable_format:multiple_sections", "combination:repeat_prompt"
    )),
}  # fmt: skip


@lru_cache(maxsize=1)
def base_requests() -> tuple[str, ...]:
    text = files("rlvr.verify.ifeval").joinpath("data/base_requests.txt").read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def split_requests(split: Split) -> tuple[str, ...]:
    """The base requests of one split: a topic's eight forms all go to dev or all to train."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    dev = split == "dev"
    return tuple(r for i, r in enumerate(base_requests()) if ((i // FORMS_PER_TOPIC) % DEV_EVERY == 0) == dev)


def _compatible(chosen: list[Instruction], new: Instruction) -> bool:
    if any(c.id == new.id for c in chosen):
        return False
    if new.solo and any(c.group not in {"keywords", "case"} for c in chosen):
        return False
    if any(c.solo and new.group not in {"keywords", "case"} for c in chosen):
        return False
    same = sum(c.group == new.group for c in chosen)
    if same >= (2 if new.group in PAIRED_GROUPS else 1):
        return False
    return not any(frozenset({c.id, new.id}) in EXCLUDES for c in chosen)


def _draw(rng: random.Random, request: str) -> tuple[list[str], list[dict[str, Any]]]:
    k = rng.choices([1, 2, 3], weights=[3, 4, 3])[0]
    ids = sorted(REGISTRY)
    chosen: list[Instruction] = []
    while len(chosen) < k:
        candidates = [REGISTRY[i] for i in ids if _compatible(chosen, REGISTRY[i])]
        if not candidates:
            break
        chosen.append(rng.choice(candidates))
    kwargs = []
    for ins in chosen:
        args = ins.sample(rng)
        if ins.id == "combination:repeat_prompt":
            args = {"prompt_to_repeat": request}
        kwargs.append(args)
    return [c.id for c in chosen], kwargs


def generate_prompts(split: Split, n: int, seed: int) -> list[dict[str, Any]]:
    """`n` distinct prompts of `split` ("train" or "dev"), the same for the same (split, n, seed)."""
    requests = split_requests(split)
    rng = random.Random(seed * 2 + (split == "dev"))
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    attempts = 0
    while len(rows) < n and attempts < 50 * n + 100:
        attempts += 1
        request = rng.choice(requests)
        ids, kwargs = _draw(rng, request)
        described = [REGISTRY[i].describe(REGISTRY[i].args.model_validate(k)) for i, k in zip(ids, kwargs, strict=True)]
        prompt = " ".join([request, *described])
        if prompt in seen:
            continue
        seen.add(prompt)
        rows.append(
            {"key": f"{split}-{seed}-{len(rows)}", "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs}
        )
    if len(rows) < n:
        raise ValueError(f"only {len(rows)} distinct {split} prompts could be drawn, asked for {n}")
    return rows
