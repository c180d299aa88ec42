"""Pid files: written atomically, checked for a live owner, guarded by a lock so two
launches at once end with exactly one server."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envguard.errors import EnvguardError


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EnvguardError(
            f"{path}: cannot read the pid file: {exc.strerror}", hint="check its permissions"
        ) from None
    return int(text) if text.isdigit() else None


def alive(pid: int) -> bool:
    """Whether `pid` is a running (not zombie) process."""
    from envguard.probes.process import running

    return running(pid)


def write_pid(path: Path, pid: int) -> None:
    """Write atomically: a reader sees the old file or the new one, never half of one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(f"{pid}\n")
    temporary.replace(path)


@contextmanager
def launch_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the pid file while checking it and starting the
    server: a second launch waits here, then finds the first one's live pid."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        handle = lock_path.open("a")
    except OSError as exc:
        raise EnvguardError(
            f"{lock_path}: cannot create the launch lock: {exc.strerror}",
            hint="choose a --pid-file in a writable directory",
        ) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
