"""Which code a completion answers with, and the program that defines the function under test.

The rule (docs/code.md, "Extraction"):
1. the code is the LAST fenced block labelled python (```python, ```py, ```python3); if there is none,
   the last fenced block with no label; a block still open at the end of the text runs to the end;
   with no fence at all, the whole completion. Blocks labelled with another language are never code;
2. the program is the problem's prompt followed by the code, so the prompt's imports and helpers are
   defined: when the code defines `def ENTRY_POINT` (or assigns `ENTRY_POINT = ...`) at its top level,
   it follows the prompt as a module of its own (its definition replaces the prompt's stub); otherwise
   it continues the prompt as the function's body (HumanEval's completion convention), indented by
   four spaces if that is what makes it parse (never code with definitions of its own, which would
   nest them in the stub);
3. a program that does not parse, or that defines no `ENTRY_POINT` with a body, is an unparseable
   answer (status "unparseable_answer").

>>> extract_code("Sure:\\n```python\\ndef f():\\n    return 1\\n```\\nor\\n```python\\ndef f():\\n    return 2\\n```")
'def f():\\n    return 2\\n'
>>> build_program("def f(x):\\n    return x\\n", "import math\\ndef f(x):\\n    'Doc.'\\n", "f")[0]
"import math\\ndef f(x):\\n    'Doc.'\\n\\n\\ndef f(x):\\n    return x\\n"
>>> build_program("    return x + 1\\n", "def f(x):\\n", "f")[0]
'def f(x):\\n    return x + 1\\n'
"""

from __future__ import annotations

import ast
import re
import textwrap

__all__ = ["build_program", "extract_code"]

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S)
_PYTHON = {"python", "py", "python3", "py3"}


def extract_code(completion: str) -> str:
    """The code a completion answers with (rule 1 above); the whole text when it has no fence."""
    blocks = [(m[1].lower(), m[2]) for m in _FENCE.finditer(completion)]
    if not blocks:
        return completion
    for wanted in (lambda lang: lang in _PYTHON, lambda lang: lang == ""):
        chosen = [code for lang, code in blocks if wanted(lang)]
        if chosen:
            return chosen[-1]
    return ""


def _defines(tree: ast.Module, entry: str) -> bool:
    """Whether the module's last top-level definition of `entry` is a function with a real body, or an
    assignment (`entry = lambda ...`, `entry = Solution().solve`)."""
    defs = [
        n
        for n in tree.body
        if (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry)
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == entry for t in n.targets))
    ]
    if not defs:
        return False
    last = defs[-1]
    if isinstance(last, ast.Assign):
        return True
    body = last.body
    stub = len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return not stub


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def build_program(code: str, prompt: str, entry: str) -> tuple[str | None, str]:
    """(program, reason): the module the jail loads for `code` (rule 2 above), or (None, why not)."""
    own = _parse(code)
    if own is not None and _defines(own, entry):
        program = prompt.rstrip("\n") + "\n\n\n" + code
        if _parse(program) is not None:
            return program, "defines the function"
        return code, "defines the function (without the prompt, which does not parse before it)"
    body = code if code.endswith("\n") else code + "\n"
    forms = [body]
    if own is None or not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in own.body):
        forms.append(textwrap.indent(textwrap.dedent(body), "    "))  # a body written flush left; never a module's defs
    for candidate in forms:
        program = prompt + candidate
        tree = _parse(program)
        if tree is not None and _defines(tree, entry):
            return program, "continues the prompt"
    if own is None:
        return None, "the code does not parse as Python"
    return None, f"the code defines no function {entry!r}"
