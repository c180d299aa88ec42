"""Reading files that someone else controls: never block, never exhaust memory.

A path from a server's environment (NCCL_CONF_FILE), its command line (--config), its home
directory or a profile argument may name a FIFO (open() would wait for a writer forever),
a device (/dev/zero never ends) or a file of any size. Everything envguard reads on someone
else's behalf goes through `read_regular`: opened non-blocking, read only if it is a regular
file, and only up to a limit.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

# NCCL caps config lines at 1023 characters (docs/nccl.md); profiles, YAML configs and
# package metadata are a few KB. 1 MiB is far above any real one.
LIMIT = 1 << 20


def read_regular(path: str | Path, limit: int = LIMIT) -> bytes:
    """The bytes of a regular file, at most `limit` of them; OSError (with a strerror that
    says why) for a FIFO, device, directory, or a file over the limit."""
    fd = _open_regular(path)
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit // 1024} KiB", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | Path) -> str:
    """A regular file's text (UTF-8), bounded as read_regular bounds it: a server's --config
    file as the server would read it."""
    return read_regular(path).decode()


def open_regular(path: str | Path) -> BinaryIO:
    """A regular file opened for reading in binary, never blocking on a FIFO; OSError (with
    a strerror that says why) for anything else. For files read line by line (logs),
    whose size the caller bounds."""
    return os.fdopen(_open_regular(path), "rb")


def _open_regular(path: str | Path) -> int:
    """A descriptor of `path` if it is a regular file (opened non-blocking: a FIFO never
    makes it wait); OSError, with a strerror that says why, for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"not a regular file ({_kind(mode)})", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"
