"""The README fits its job: short, its commands are what CI runs, its links resolve, and a
shipped file it shows is that file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def code_blocks(text: str) -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", text, re.S)


def test_it_is_short() -> None:
    assert len(README.splitlines()) <= 250


def test_the_development_commands_are_what_ci_runs() -> None:
    [block] = [b for b in code_blocks(README) if "python -m pytest" in b]
    ci = (ROOT / ".ci" / "run").read_text()
    install, test = block.strip().splitlines()
    assert install.removeprefix("python -m pip install ") in ci
    assert re.search(rf"^{re.escape(test)}$", ci, re.M)


def test_every_link_resolves() -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / target).exists(), target
    for doc in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name}: {target}"


def test_a_shipped_file_shown_is_that_file() -> None:
    shown = README.split("`profiles/demo.toml`, as shipped:", 1)[1]
    assert code_blocks(shown)[0] == (ROOT / "profiles" / "demo.toml").read_text()


def test_no_internal_words_for_users() -> None:
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")]:
        text = path.read_text().lower()
        assert "seed" not in text and "shared/" not in text, path.name
