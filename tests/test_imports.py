"""Imports inside functions are kept only for the modules docs/speed.md lists as costly: each
of them costs 1 ms or more on top of `envguard.cli` (measured with -X importtime), and some
command path does not need it. Everything else is imported at module top (as pyperf does)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "envguard"


def documented_lazy_modules() -> set[str]:
    """The backquoted module names of the table in docs/speed.md, 'Imported where used'."""
    text = (ROOT / "docs" / "speed.md").read_text()
    section = text.split("## Imported where used", 1)[1].split("\n## ", 1)[0]
    return {
        m
        for line in section.splitlines()
        if line.startswith("|")
        for m in re.findall(r"`([\w.]+)`", line.split("|")[1])
    }


def function_level_imports() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                    if node.module.startswith("envguard"):
                        names = [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                found += [(str(path.relative_to(ROOT)), node.lineno, n) for n in names]
    return found


def is_listed(name: str, lazy: set[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in lazy)


def test_every_lazy_import_is_one_that_pays() -> None:
    lazy = documented_lazy_modules()
    assert "deepdiff" in lazy and "envguard.profile.validation" in lazy
    stray = [
        f"{p}:{line}: {name}"
        for p, line, name in function_level_imports()
        if not is_listed(name, lazy)
    ]
    assert stray == [], "import these at module top, or measure them and list them in docs/speed.md"


def test_every_listed_module_is_still_imported_lazily() -> None:
    used = {name for _, _, name in function_level_imports()}
    lazy = documented_lazy_modules()
    unused = sorted(m for m in lazy if not any(u == m or u.startswith(m + ".") for u in used))
    assert unused == [], "drop these from docs/speed.md"
