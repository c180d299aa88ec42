"""The state one watch run leaves for the next: per (profile, target), JSON, written
atomically (a temporary file renamed over it) under an exclusive lock, so that a slow run
and the next cron tick never corrupt it or send the same alert twice."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from envguard.errors import EnvguardError
from envguard.files import read_regular


def default_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "envguard" / "watch"


def state_path(directory: Path, profile: str, target: str) -> Path:
    key = hashlib.sha256(f"{profile}\0{target}".encode()).hexdigest()[:16]
    return directory / f"{key}.json"


def load(path: Path) -> dict[str, Any] | None:
    """The last run's state; None on a first run (or a state that cannot be read, which
    is treated as a first run rather than as a reason to stay silent)."""
    try:
        data = json.loads(read_regular(path))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == 1 else None


def save(path: Path, state: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps({**state, "version": 1}, indent=2) + "\n")
    temporary.replace(path)


@contextlib.contextmanager
def locked(path: Path, deadline: float) -> Iterator[None]:
    """Hold the state's lock, waiting for an overlapping run until `deadline`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise EnvguardError(
            f"{path.parent}: cannot keep watch state: {exc.strerror}",
            hint="give --state a writable directory",
        ) from None
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise EnvguardError(
                        f"{path}: another watch run still holds it",
                        hint="the previous run is slow; raise the cron interval or --timeout",
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
