"""IFEval's detectable content and format, combination, start/end and punctuation instructions, one
declaration each (docs/instructions.md, "Constraint rules"; "rlvr:" marks where a check departs from IFEval's
reference)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field

from rlvr.verify.ifeval.base import Args, Instruction, declare

# detectable content and format ---------------------------------------------------------------------------


class PlaceholdersArgs(Args):
    num_placeholders: int = Field(ge=0)


def _placeholders(r: str, a: PlaceholdersArgs, p: str) -> tuple[bool, str]:
    # IFEval's `\[.*?\]` counts the same (one per "]" closing a "[" on its line) in quadratic time
    n = len(re.findall(r"\[[^\[\]\n]*\]", r))
    return n >= a.num_placeholders, f"{n} [placeholders], needs at least {a.num_placeholders}"


declare(
    Instruction(
        "detectable_content:number_placeholders",
        PlaceholdersArgs,
        _placeholders,
        lambda a: f"Leave {a.num_placeholders} or more fill-in slots written in square brackets, like [city].",
        lambda rng: {"num_placeholders": rng.randint(1, 4)},
        "format",
    )
)


class PostscriptArgs(Args):
    postscript_marker: str = Field(min_length=1)


def _postscript_pattern(marker: str) -> re.Pattern[str]:
    squashed = re.sub(r"[\s.]", "", marker).lower()
    if squashed == "pps":
        return re.compile(r"p\.\s?p\.\s?s.*$", re.MULTILINE)
    if squashed == "ps":
        # rlvr: "P.P.S." is not "P.S.": the p may not follow a letter, a dot or "p. "
        return re.compile(r"(?<![\w.])(?<!p\.\s)p\.\s?s\..*$", re.MULTILINE)
    return re.compile(re.escape(marker.lower()) + r".*$", re.MULTILINE)


def _postscript(r: str, a: PostscriptArgs, p: str) -> tuple[bool, str]:
    found = _postscript_pattern(a.postscript_marker).search(r.lower())
    return found is not None, f"{a.postscript_marker} {'found' if found else 'missing'}"


declare(
    Instruction(
        "detectable_content:postscript",
        PostscriptArgs,
        _postscript,
        lambda a: f"Close with an afterthought that begins with {a.postscript_marker}",
        lambda rng: {"postscript_marker": rng.choice(["P.S.", "P.P.S"])},
        "format",
    )
)


class BulletsArgs(Args):
    num_bullets: int = Field(ge=0)


_RULE_LINE = re.compile(r"[\s*_-]*")


def _bullets(r: str, a: BulletsArgs, p: str) -> tuple[bool, str]:
    n = 0
    for line in r.split("\n"):
        if _RULE_LINE.fullmatch(line):
            continue  # rlvr: "---" and "* * *" are rules, not bullets
        if re.match(r"\s*\*[^*]", line) or re.match(r"\s*-", line):
            n += 1
    return n == a.num_bullets, f"{n} bullets, needs exactly {a.num_bullets}"


declare(
    Instruction(
        "detectable_format:number_bullet_lists",
        BulletsArgs,
        _bullets,
        lambda a: f"Lay it out as exactly {a.num_bullets} markdown bullets, each line opening with '* '.",
        lambda rng: {"num_bullets": rng.randint(2, 6)},
        "format",
    )
)

OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _constrained(r: str, a: Args, p: str) -> tuple[bool, str]:
    found = [o for o in OPTIONS if o in r.strip()]
    if len(found) != 1:  # rlvr: two different options are no choice
        return False, f"{len(found)} of the options present"
    return True, f"chose {found[0]!r}"


declare(
    Instruction(
        "detectable_format:constrained_response",
        Args,
        _constrained,
        lambda a: "Reply with exactly one of three set phrases, either " + " or else ".join(f"'{o}'" for o in OPTIONS),
        lambda rng: {},
        "whole",
        solo=True,
    )
)


class HighlightsArgs(Args):
    num_highlights: int = Field(ge=0)


# rlvr: markdown emphasis: the opening * is not followed by a space, the closing one not preceded by one
_SINGLE = re.compile(r"(?<!\*)\*(?![\s*])[^\n*]*(?<![\s*])\*(?!\*)")
_DOUBLE = re.compile(r"\*\*(?![\s*])[^\n*]*(?<![\s*])\*\*")


def _highlights(r: str, a: HighlightsArgs, p: str) -> tuple[bool, str]:
    n = sum(1 for m in _SINGLE.findall(r) if m.strip("*").strip())
    n += sum(1 for m in _DOUBLE.findall(r) if m[2:-2].strip())
    return n >= a.num_highlights, f"{n} highlights, needs at least {a.num_highlights}"


declare(
    Instruction(
        "detectable_format:number_highlighted_sections",
        HighlightsArgs,
        _highlights,
        lambda a: f"Mark {a.num_highlights} or more parts in markdown italics, as in *a marked part*.",
        lambda rng: {"num_highlights": rng.randint(1, 4)},
        "format",
    )
)


class SectionsArgs(Args):
    section_spliter: str = Field(min_length=1)
    num_sections: int = Field(ge=0)


def _sections(r: str, a: SectionsArgs, p: str) -> tuple[bool, str]:
    n = len(re.split(r"\s?" + re.escape(a.section_spliter.strip()) + r"\s?\d+\s?", r)) - 1
    return n >= a.num_sections, f"{n} sections marked {a.section_spliter!r}, needs at least {a.num_sections}"


declare(
    Instruction(
        "detectable_format:multiple_sections",
        SectionsArgs,
        _sections,
        lambda a: (
            f"Organise it in {a.num_sections} parts, heading each one {a.section_spliter} 1, "
            f"{a.section_spliter} 2 and so on."
        ),
        lambda rng: {
            "section_spliter": rng.choice(["SECTION", "Section", "PART", "Part"]),
            "num_sections": rng.randint(2, 4),
        },
        "format",
    )
)


def _strip_fence(r: str) -> str:
    s = r.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        s = s.removeprefix(prefix)
    return s.removesuffix("```").strip()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json(r: str, a: Args, p: str) -> tuple[bool, str]:
    try:
        json.loads(_strip_fence(r), parse_constant=_no_constant)  # rlvr: NaN and Infinity are not JSON
    except (ValueError, RecursionError) as exc:
        return False, f"not JSON: {str(exc)[:60]}"
    return True, "valid JSON"


declare(
    Instruction(
        "detectable_format:json_format",
        Args,
        _json,
        lambda a: "Return the reply as one JSON document (a markdown code fence around it is fine).",
        lambda rng: {},
        "whole",
        solo=True,
    )
)


def _title(r: str, a: Args, p: str) -> tuple[bool, str]:
    ok = any(t.strip() for t in re.findall(r"<<([^\n<>]+)>>", r))  # IFEval: <<[^\n]+>>, quadratic on "<<<<..."
    return ok, "title found" if ok else "no <<title>>"


declare(
    Instruction(
        "detectable_format:title",
        Args,
        _title,
        lambda a: "Give it a heading wrapped in double angle brackets, for example <<a heading>>.",
        lambda rng: {},
        "format",
    )
)


# combinations, start/end, punctuation ---------------------------------------------------------------------


def _two_responses(r: str, a: Args, p: str) -> tuple[bool, str]:
    parts = r.split("******")
    valid = []
    for i, part in enumerate(parts):
        if not part.strip():
            if i not in (0, len(parts) - 1):
                return False, "an empty response between separators"
        else:
            valid.append(part)
    if len(valid) != 2:
        return False, f"{len(valid)} responses, needs 2"
    return valid[0].strip() != valid[1].strip(), "two different responses"


declare(
    Instruction(
        "combination:two_responses",
        Args,
        _two_responses,
        lambda a: "Write two distinct versions of the reply with a line of six asterisks (******) between them.",
        lambda rng: {},
        "whole",
        solo=True,
    )
)


class RepeatArgs(Args):
    prompt_to_repeat: str | None = None


def _repeat(r: str, a: RepeatArgs, p: str) -> tuple[bool, str]:
    target = a.prompt_to_repeat if a.prompt_to_repeat else p
    if not target.strip():
        return False, "nothing to repeat"
    ok = r.strip().lower().startswith(target.strip().lower())
    return ok, "starts with the request" if ok else "does not start with the request verbatim"


declare(
    Instruction(
        "combination:repeat_prompt",
        RepeatArgs,
        _repeat,
        lambda a: "Before answering, copy the request above word for word, then give the answer.",
        lambda rng: {},
        "whole",
        solo=True,
    )
)


class EndArgs(Args):
    end_phrase: str = Field(min_length=1)


def _end(r: str, a: EndArgs, p: str) -> tuple[bool, str]:
    ok = r.strip().strip('"').lower().endswith(a.end_phrase.strip().lower())
    return ok, f"{'ends' if ok else 'does not end'} with {a.end_phrase!r}"


declare(
    Instruction(
        "startend:end_checker",
        EndArgs,
        _end,
        lambda a: f"The very last words of the reply must be: {a.end_phrase}",
        lambda rng: {
            "end_phrase": rng.choice(["Any other questions?", "That is the whole story.", "Thanks for reading."])
        },
        "end",
    )
)


def _quotation(r: str, a: Args, p: str) -> tuple[bool, str]:
    s = r.strip()
    ok = len(s) > 1 and s[0] == '"' and s[-1] == '"'
    return ok, "wrapped in double quotes" if ok else "not wrapped in double quotes"


declare(
    Instruction(
        "startend:quotation",
        Args,
        _quotation,
        lambda a: "Enclose everything you write between a pair of double quote marks.",
        lambda rng: {},
        "end",
    )
)

# rlvr: full-width, Arabic, ideographic and small-form commas are commas too
COMMAS = ",\uff0c\u060c\u3001\ufe50\ufe51\ufe10\ufe11"


def _no_comma(r: str, a: Args, p: str) -> tuple[bool, str]:
    found = [c for c in COMMAS if c in r]
    return not found, f"has commas {found}" if found else "no comma"


declare(
    Instruction(
        "punctuation:no_comma",
        Args,
        _no_comma,
        lambda a: "Do not put a single comma anywhere in the reply.",
        lambda rng: {},
        "punct",
    )
)
