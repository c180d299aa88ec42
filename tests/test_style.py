"""ruff and mypy are part of the test command, so CI and a newcomer run the same checks."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True)


def test_ruff_lint() -> None:
    result = run("ruff", "check", "envguard", "tests", "benchmarks", "tools")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run("ruff", "format", "--check", "envguard", "tests", "benchmarks", "tools")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
