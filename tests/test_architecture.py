"""docs/architecture.md is the rule: every import in src/rlvr goes to its own room or a lower floor,
`rlvr.verify` never imports torch, and the README links only to files in the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "rlvr"


def _floors() -> dict[str, int]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    floors = {}
    for m in re.finditer(r"^\| (\d+) \| (.+) \|$", text, re.M):
        for room in re.findall(r"`([\w_]+)`", m[2]):
            floors[room] = int(m[1])
    return floors


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "rlvr" and len(parts) > 1 else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, lazy ones inside functions included."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: rlvr uses absolute imports only"
            out.append((node.lineno, node.module or ""))
    return out


def test_every_room_is_on_a_floor():
    floors = _floors()
    rooms = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}  # fmt: skip
    rooms.discard("__init__")
    assert rooms <= set(floors), f"rooms missing from docs/architecture.md: {sorted(rooms - set(floors))}"


def test_no_import_runs_up_a_floor():
    floors = _floors()
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).parts
        me = rel[0].removesuffix(".py")
        if me == "__init__":
            continue
        for line, mod in _imports(path):
            other = _room(mod)
            if other is None or other == me or other not in floors:
                continue
            if floors[other] > floors[me]:
                where = f"{path.relative_to(ROOT)}:{line}"
                bad.append(f"{where} ({me}, floor {floors[me]}) imports {mod} (floor {floors[other]})")
    assert not bad, "\n".join(bad)


def test_verify_never_imports_torch():
    for path in (SRC / "verify").rglob("*.py"):
        assert not [m for _, m in _imports(path) if m.split(".")[0] == "torch"], path


def test_readme_links_only_to_files_in_the_repository():
    readme = (ROOT / "README.md").read_text()
    assert "shared folder" not in readme
    for ref in sorted(set(re.findall(r"`((?:docs|examples|studies|bench)/[\w./-]+)`", readme))):
        assert (ROOT / ref).exists(), f"README names {ref}, which is not in the repository"
    assert "docs/architecture.md" in readme
