"""Imports run one way: commands -> engines -> render -> evaluation -> probes -> profile ->
flags | knowledge -> errors | files | cachedir. Every import counts: at module top, inside a
function, and under `if TYPE_CHECKING:` (a type from a higher layer is a dependency all the
same)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "envguard"

# Higher layers may import lower ones; a layer never imports one above it, and two modules
# of one layer may import each other only where both live in the same subpackage.
LAYERS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"commands"},
    {"demo"},  # a scenario that composes the engines (envguard demo)
    {"launching", "benchmarking", "ledger", "watching", "checking", "capturing", "testing"},
    {"render"},
    {"evaluation", "fingerprint"},
    {"probes"},
    {"profile"},
    {"flags", "knowledge"},
    {"errors", "files", "cachedir", "__init__"},
]


def layer_of(unit: str) -> int:
    for index, names in enumerate(LAYERS):
        if unit in names:
            return index
    raise AssertionError(f"envguard.{unit} is in no layer: add it to LAYERS")


def unit_of(module: str) -> str:
    """envguard.probes.process -> probes; envguard -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    found = []
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "envguard":  # `from envguard import errors` or `import __version__`
                found += [
                    (node.lineno, f"envguard.{a.name}" if _is_module(a.name) else "envguard")
                    for a in node.names
                ]
            else:
                found.append((node.lineno, base))
    return [(line, name) for line, name in found if name.split(".")[0] == "envguard"]


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir()


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        mine = layer_of(unit_of(here))
        for line, target in imports(path):
            theirs = layer_of(unit_of(target))
            if theirs < mine:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {here} imports {target}")
            elif theirs == mine and unit_of(here) != unit_of(target):
                sibling = f"{unit_of(here)} -> {unit_of(target)}"
                if sibling not in SIBLINGS:
                    found.append(
                        f"{path.relative_to(PACKAGE.parent)}:{line}: {here} imports {target} "
                        f"(same layer: {sibling})"
                    )
    return found


# Same-layer imports that keep one direction (the reverse would be a cycle).
SIBLINGS = {"flags -> knowledge", "fingerprint -> evaluation", "launching -> checking",
            "benchmarking -> checking", "capturing -> checking", "watching -> checking",
            "benchmarking -> ledger", "launching -> testing", "errors -> __init__"}  # fmt: skip


def test_imports_run_one_way() -> None:
    assert violations() == []


def module_cycles() -> list[tuple[str, str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        graph[module_name(path)] = {t for _, t in imports(path)}
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets if a < b and a in graph.get(b, ())
    )


def test_no_two_modules_import_each_other() -> None:
    assert module_cycles() == []
