"""What the command tests share: a marker for the processes a test starts."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def with_marker(marker: str) -> list[str]:
    """Processes whose command line holds `marker` (this test's own, nobody else's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(entry.name)
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique word for this test's processes; anything still carrying it is killed after."""
    word = f"mk{uuid.uuid4().hex[:10]}"
    yield word
    for pid in with_marker(word):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(pid), signal.SIGKILL)
