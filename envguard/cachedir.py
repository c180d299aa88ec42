"""envguard's per-user cache directory, and entries that nobody else's file can stand in for.

Two caches live here, each in its own subdirectory: validated profiles (profile/cache.py)
and parsed launch lines (flags/parse_cache.py). Both exist so that `envguard check` from
cron skips work whose inputs did not change; both are data (JSON), never code.

The directory is created 0700 and entries 0600, written to a temporary name and renamed into
place. An entry is read only if it is a regular file of this user that only this user can
write, read without following a symlink and without blocking on a FIFO, and up to a size
limit. Writing is best-effort: a read-only home only costs speed.

    ENVGUARD_CACHE_DIR   the directory (default: $XDG_CACHE_HOME/envguard, ~/.cache/envguard)
    ENVGUARD_NO_CACHE    any value: no cache, every run does all the work
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def cache_dir(kind: str) -> Path | None:
    """The directory of one cache ("profiles", "launch-lines"); None: caching is off."""
    if os.environ.get("ENVGUARD_NO_CACHE"):
        return None
    explicit = os.environ.get("ENVGUARD_CACHE_DIR")
    if explicit:
        return Path(explicit) / kind
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envguard" / kind


def file_stamp(path: str | Path) -> list[int] | None:
    """What tells a changed file without reading it: size, inode, mtime and ctime in ns
    (as git's index does). ctime cannot be set back by `touch`, so an edit always shows."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def read_entry(entry: Path, limit: int) -> bytes | None:
    """The entry's bytes, if it is a regular file of this user that only this user can
    write, of at most `limit` bytes; None otherwise."""
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            or st.st_size > limit
        ):
            return None
        return handle.read(limit + 1)


def write_entry(entry: Path, text: str) -> bool:
    """Write an entry (0600, in a 0700 directory), all or nothing; False if it could not."""
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        temporary.replace(entry)
    except OSError:
        return False
    return True


def prune(directory: Path, keep: int) -> None:
    """Remove all but the `keep` most recently written entries (a cache of command lines
    would otherwise grow with every server ever checked)."""
    try:
        with os.scandir(directory) as found:
            entries = [
                (e.stat(follow_symlinks=False).st_mtime_ns, e.path)
                for e in found
                if e.is_file(follow_symlinks=False)
            ]
    except OSError:
        return
    for _, path in sorted(entries, reverse=True)[keep:]:
        try:
            Path(path).unlink()
        except OSError:
            continue
