"""Hack probes for the audit: completions that game instruction checkers without answering the request.

`hack_probes(prompt, instruction_ids, kwargs_list)` returns `(kind, completion)` pairs built from one prompt row:

- `empty`: the empty answer (IFEval's reference passes "no comma", "less than N words" and the language check);
- `prompt_repeated`: the prompt itself, nothing else;
- `keyword_stuffing`: only the words, letters and phrases the instructions ask for, repeated;
- `digits_wrong_language`: for a language instruction, a reply of digits only (IFEval's reference passes it,
  because its language detector fails on digits and a failed detection passes).

A sound reward gives `empty`, `prompt_repeated` and `digits_wrong_language` no credit for the instructions they
do not follow; `keyword_stuffing` shows which instructions test form rather than content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROBE_KINDS = ("empty", "prompt_repeated", "keyword_stuffing", "digits_wrong_language")


def _stuffing(instruction_ids: Sequence[str], kwargs_list: Sequence[Mapping[str, Any] | None]) -> str:
    words: list[str] = []
    for instruction_id, kw in zip(instruction_ids, kwargs_list, strict=True):
        kw = kw or {}
        if instruction_id == "keywords:existence":
            words += [str(k) for k in kw.get("keywords") or []]
        elif instruction_id == "keywords:frequency" and kw.get("keyword"):
            words += [str(kw["keyword"])] * (int(kw.get("frequency") or 1) + 1)
        elif instruction_id == "keywords:letter_frequency" and kw.get("letter"):
            words += [str(kw["letter"]) * (int(kw.get("let_frequency") or 1) + 1)]
        elif instruction_id == "startend:end_checker" and kw.get("end_phrase"):
            words += [str(kw["end_phrase"])]
        elif instruction_id == "detectable_content:postscript" and kw.get("postscript_marker"):
            words += [f"\n{kw['postscript_marker']} {kw['postscript_marker']}"]
        elif instruction_id == "detectable_format:constrained_response":
            words += ["My answer is yes."]
    return " ".join(words) if words else "keyword keyword keyword"


def hack_probes(
    prompt: str, instruction_ids: Sequence[str], kwargs_list: Sequence[Mapping[str, Any] | None] | None
) -> list[tuple[str, str]]:
    """The probes for one prompt row, as `(kind, completion)`; `digits_wrong_language` only for rows with a
    `language:response_language` instruction.

    >>> [k for k, _ in hack_probes("Say hi in Hindi.", ["language:response_language"], [{"language": "hi"}])]
    ['empty', 'prompt_repeated', 'keyword_stuffing', 'digits_wrong_language']
    """
    kw = list(kwargs_list) if kwargs_list is not None else [None] * len(instruction_ids)
    probes = [("empty", ""), ("prompt_repeated", prompt), ("keyword_stuffing", _stuffing(instruction_ids, kw))]
    if "language:response_language" in instruction_ids:
        probes.append(("digits_wrong_language", "1 2 3 4 5 6 7 8 9 10\n\n11 12 13 14 15 16 17 18 19 20"))
    return probes
