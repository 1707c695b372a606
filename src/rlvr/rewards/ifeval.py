"""IFEval rewards in TRL's convention: the share of a prompt's instructions a completion follows
(`ifeval_partial`) and whether it follows all of them (`ifeval_all`), strict by default, loose on request.

Columns: `instruction_id_list` and `kwargs` (IFEval's, one list per row; a JSON string is read too) and the
user prompt as `prompt` (rlvr) or `prompts` (TRL: text or chat messages), which `combination:repeat_prompt`
falls back on when its `prompt_to_repeat` is absent. A row without instructions is not scorable (None).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from rlvr.rewards.columns import RewardFn, column, completion_text
from rlvr.verify.ifeval import check_prompt

__all__ = ["ifeval_all", "ifeval_partial", "make_ifeval"]

Aggregate = Literal["partial", "all"]
Mode = Literal["strict", "loose"]


def _prompt_text(p: Any) -> str:
    if isinstance(p, list):  # chat messages: the last user turn
        users = [m.get("content", "") for m in p if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1]) if users else ""
    return "" if p is None else str(p)


def _listed(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def make_ifeval(aggregate: Aggregate = "partial", mode: Mode = "strict") -> RewardFn:
    """The reward for one aggregate ("partial": share met, in [0, 1]; "all": 1.0 only when every instruction is
    met) and scoring mode ("strict" or "loose", IFEval's)."""
    if aggregate not in ("partial", "all"):
        raise ValueError(f"aggregate must be 'partial' or 'all', not {aggregate!r}")
    if mode not in ("strict", "loose"):
        raise ValueError(f"mode must be 'strict' or 'loose', not {mode!r}")

    def reward(
        completions: list[Any],
        instruction_id_list: Sequence[Any] | None = None,
        kwargs: Sequence[Any] | None = None,
        prompt: Sequence[Any] | None = None,
        prompts: Sequence[Any] | None = None,
        **_: Any,
    ) -> list[float | None]:
        n = len(completions)
        if instruction_id_list is None:
            return [None] * n
        ids = column(instruction_id_list, "instruction_id_list", n)
        kws = column(kwargs, "kwargs", n) if kwargs is not None else [None] * n
        texts = prompt if prompt is not None else prompts
        ps = column(texts, "prompt", n) if texts is not None else [None] * n
        out: list[float | None] = []
        for c, i, k, p in zip(completions, ids, kws, ps, strict=True):
            i, k = _listed(i), _listed(k)
            if not i:
                out.append(None)
                continue
            verdict = check_prompt(completion_text(c), list(i), k, _prompt_text(p))
            if aggregate == "all":
                out.append(float(verdict.strict if mode == "strict" else verdict.loose))
            else:
                out.append(verdict.strict_share if mode == "strict" else verdict.loose_share)
        return out

    reward.__name__ = f"ifeval_{aggregate}" + ("" if mode == "strict" else "_loose")
    return reward


ifeval_partial = make_ifeval("partial")
ifeval_partial.__doc__ = """Share of the row's IFEval instructions the completion follows (strict), in [0, 1].

>>> ifeval_partial(["A cat, sat."], instruction_id_list=[["keywords:existence", "punctuation:no_comma"]],
...                kwargs=[[{"keywords": ["cat"]}, {}]])
[0.5]
"""
ifeval_all = make_ifeval("all")
ifeval_all.__doc__ = """1.0 when the completion follows every IFEval instruction of its row (strict), else 0.0.

>>> ifeval_all(["A cat sat."], instruction_id_list=[["keywords:existence", "punctuation:no_comma"]],
...            kwargs=[[{"keywords": ["cat"]}, {}]])
[1.0]
"""
