"""The one extraction rule for LaTeX answers: the last `\\boxed{}`/`\\fbox{}`, else the last answer marker
("The final answer is $...$", "Answer: ..."), only in the text after `</think>` when there is one; a
completion that hides or builds its answer (`\\phantom`, `\\color{white}`, `\\def`, `\\newcommand`, ...) has
none. Returns every box so the caller can refuse several different answers."""

from __future__ import annotations

import re

__all__ = ["MAX_COMPLETION", "final_answers"]

MAX_COMPLETION = 200_000  # characters; beyond this the completion is not read
MAX_BOXES = 32
HEDGE = "\\lor"  # what a hedged final answer reads as (never equal to anything)

# Macros and white ink anywhere after </think> build or hide an answer; the overlap and invisible-box commands
# (legitimate in a worked solution's alignment) count from the first box (or the final marker) on.
_BUILT = re.compile(
    r"\\(?:def|gdef|edef|xdef|let|newcommand|renewcommand|providecommand|DeclareMathOperator|newenvironment"
    r"|renewenvironment|catcode|csname|expandafter|futurelet|require|iffalse|comment)(?![a-zA-Z])|<!--"
    r"|\\(?:color|textcolor|mathcolor|colorbox|pagecolor)\s*(?:\[[^\]]*\])?\s*\{\s*(?:white|#?fff(?:fff)?|transparent"
    r"|bg|background)\b"
)
_HIDE = re.compile(
    r"\\(?:[hv]?phantom|llap|rlap|mathllap|mathrlap|clap|mathclap|smash|scalebox|resizebox|raisebox|tiny|scriptsize"
    r"|includegraphics)(?![a-zA-Z])|\\hspace\s*\*?\s*\{\s*-|\\kern\s*-|\\mkern\s*-|\\mspace\s*\{\s*-|\\!\\!\\!\\!"
)
_BOX = re.compile(r"\\(?:boxed|fbox|framebox)(?![a-zA-Z])\s*")
_MARKER = re.compile(
    r"(?i)(?:final\s+answer|the\s+answer|answer)(?:\s+is|\s+are|\s*[:=])(?:\s*(?:\*\*|:|=))*\s*"
    r"|\banswer\s*(?:\*\*)?:\s*(?:\*\*)?|(?i:final\s+answer)(?:\*\*|#)*[ \t]*\n\s*"
)
_ANSWER_TAG = re.compile(r"(?is)<answer>(.*?)</answer>")
_MATH_OPEN = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))
_INLINE_MATH = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$|\\\((.+?)\\\)")
_SENTENCE_END = re.compile(r"(?:\.(?=\s|$)|\n|(?i:\s+I hope\b))")


def _brace_matches(text: str) -> dict[int, int]:
    """For every `{` (not `\\{`), the index just past its matching `}`: one linear pass."""
    out: dict[int, int] = {}
    stack: list[int] = []
    j, n = 0, len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            stack.append(j)
        elif c == "}" and stack:
            out[stack.pop()] = j + 1
        j += 1
    return out


_OR_AFTER = re.compile(
    r"[\s.,;:!?()\]}$*]{0,8}(?i:or|and/or)\s+(?i:(?:maybe|perhaps|possibly)\s+)?(?:[\\$\d(\-]|[A-E](?![a-z]))"
)


def _boxes(text: str) -> list[str] | None:
    """The contents of the boxes in order (a box holding boxes counts as the boxes it holds); None when
    there are more than `MAX_BOXES` (box spam)."""
    found: list[tuple[int, int, int]] = []  # (start, content start, end)
    matches: dict[int, int] | None = None
    for m in _BOX.finditer(text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            if matches is None:
                matches = _brace_matches(text)
            end = matches.get(i)
            if end is not None:
                found.append((m.start(), i + 1, end - 1))
        else:
            word = re.match(r"[^\s$\\]+", text[i : i + 64])
            if word is not None:
                found.append((m.start(), i, i + len(word[0])))
        if len(found) > MAX_BOXES:
            return None
    out: list[str] = []
    for k, (_, start, end) in enumerate(found):
        if k + 1 < len(found) and start <= found[k + 1][0] < end:
            continue  # it holds another box: the inner one counts
        out.append(text[start:end])
    if found and _OR_AFTER.match(text, found[-1][2] + 1):
        return out + [HEDGE]  # `\\boxed{18} or 19`: a hedge after the last box
    return out


def _closing(text: str, close: str, start: int) -> int | None:
    """Index of the first `close` at or after `start` that is not escaped (`\\$` is a dollar sign)."""
    while True:
        end = text.find(close, start)
        if end < 0:
            return None
        if close != "$" or end == 0 or text[end - 1] != "\\":
            return end
        start = end + 1


def _marked(text: str) -> str | None:
    """The expression after the last answer marker: its math block (at the start of the region or the
    first inside its sentence), else the rest of its sentence; `HEDGE` when `or` follows the math."""
    last = None
    for last in _MARKER.finditer(text):  # noqa: B007
        pass
    if last is None:
        return None
    rest = text[last.end() : last.end() + 2000].lstrip(" *")
    for open_, close in _MATH_OPEN:
        if rest.startswith(open_):
            end = _closing(rest, close, len(open_))
            if end is None:
                return None
            return HEDGE if _OR_AFTER.match(rest, end + len(close)) else rest[len(open_) : end]
    m = _SENTENCE_END.search(rest)
    region = rest[: m.start()] if m else rest
    span = _INLINE_MATH.search(region)
    if span:  # "The answer is therefore $5$": the first math in the sentence
        return HEDGE if _OR_AFTER.match(region, span.end()) else (span[1] or span[2] or None)
    return region.strip().strip("*").strip() or None


def final_answers(completion: str) -> tuple[list[str], str]:
    """The final answer candidates (the boxes in order, or one marked answer), or [] and the reason.

    >>> final_answers(r"so \\boxed{\\frac{14}{3}}.")
    (['\\\\frac{14}{3}'], 'boxed')
    >>> final_answers("<think>\\\\boxed{2}</think>The final answer is $3$. I hope it is correct.")
    (['3'], 'marked')
    >>> final_answers(r"\\boxed{1\\phantom{-2}}")
    ([], 'hidden or macro-built answer')
    """
    if len(completion) > MAX_COMPLETION:
        return [], "completion too long"
    text = completion
    cut = text.rfind("</think>")
    if cut >= 0:
        text = text[cut + len("</think>") :]
    elif "<think>" in text:
        return [], "unfinished thinking"
    if _BUILT.search(text):
        return [], "hidden or macro-built answer"
    first = _BOX.search(text) if "\\" in text else None
    if first is not None and _HIDE.search(text, first.start()):
        return [], "hidden or macro-built answer"
    boxes = _boxes(text) if first is not None else []
    if boxes is None:
        return [], "too many boxes"
    if boxes and boxes[-1] == HEDGE:
        return [], "hedged answer"
    if boxes:
        return boxes, "boxed"
    tag = None
    for tag in _ANSWER_TAG.finditer(text):  # noqa: B007
        pass
    if tag is not None:
        inner = tag[1].strip()
        if _HIDE.search(inner):
            return [], "hidden or macro-built answer"
        return ([_marked(inner) or inner.strip("$ ")] if inner else []), "answer tag"
    marked = _marked(text)
    if marked == HEDGE:
        return [], "hedged answer"
    if marked:
        if _HIDE.search(marked):
            return [], "hidden or macro-built answer"
        return [marked], "marked"
    return [], "no final answer"
