"""Pid files that say which process they mean, not only which number.

A pid is reused once its process is gone, so a stale pid file can name a stranger. The
file records, beside the pid (first line, as `kill $(head -1 F)` and systemd's PIDFile=
read it), the process's start time in clock ticks since boot and the boot id: together
they name one process, once (a pid cannot be reused within one clock tick of one boot).
The executable and a hash of the command line are kept too: a process whose start time
matches but which runs neither is refused as well.

Written atomically; checked and written under a lock beside the file, so two launches at
once end with exactly one server. The lock file is removed again by whoever holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from envguard.errors import EnvguardError
from envguard.knowledge.redaction import redact_argv
from envguard.probes.process import running, stat_fields

MAX_BYTES = 4096  # a pid file is a few lines; a bigger one is not ours

Identity = Literal["ours", "gone", "stranger", "unknown"]


class PidRecord(NamedTuple):
    pid: int
    start_ticks: int | None = None
    boot_id: str | None = None
    exe: str | None = None
    cmdline_sha256: str | None = None


class Verdict(NamedTuple):
    """What the pid file's process is now, and what it runs (for messages)."""

    identity: Identity
    command: str  # the live process's command line, shortened ("" when gone)


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def _exe(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/exe").readlink())
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:

    try:
        return int(stat_fields(pid)[19])
    except (OSError, ValueError, IndexError):
        return None


def record_of(pid: int) -> PidRecord:
    """The identity of live process `pid`, read from /proc now."""
    import hashlib  # only when a pid file is written or checked

    try:
        digest: str | None = hashlib.sha256(_cmdline(pid)).hexdigest()
    except OSError:
        digest = None
    return PidRecord(pid, _start_ticks(pid), boot_id(), _exe(pid), digest)


def read(path: Path) -> PidRecord | None:
    """The pid file's record; None when there is no file. Only a regular file is read (a
    FIFO would block), and only its first few KB."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EnvguardError(
            f"{path}: cannot read the pid file: {exc.strerror}", hint="check its permissions"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise EnvguardError(
                f"{path}: not a regular file, so not a pid file",
                hint="give the --pid-file the server was launched with",
            )
        text = handle.read(MAX_BYTES).decode("ascii", "replace")
    lines = text.splitlines()
    if not lines or not lines[0].strip().isdigit():
        raise EnvguardError(
            f"{path}: not a pid file (the first line is not a process id)",
            hint="give the --pid-file the server was launched with",
        )
    fields = dict(line.partition("=")[::2] for line in lines[1:] if "=" in line)
    ticks = fields.get("start_ticks", "")
    return PidRecord(
        pid=int(lines[0].strip()),
        start_ticks=int(ticks) if ticks.isdigit() else None,
        boot_id=fields.get("boot_id") or None,
        exe=fields.get("exe") or None,
        cmdline_sha256=fields.get("cmdline_sha256") or None,
    )


def write(path: Path, pid: int) -> PidRecord:
    """Record live process `pid` atomically: a reader sees the old file or the new one."""
    record = record_of(pid)
    body = [str(pid)] + [
        f"{name}={value}" for name, value in record._asdict().items() if name != "pid" and value
    ]
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text("\n".join(body) + "\n")
    temporary.replace(path)
    return record


def identify(record: PidRecord) -> Verdict:
    """Whether the process the record names is still the one it was written for."""

    if not running(record.pid):
        return Verdict("gone", "")
    now = record_of(record.pid)
    try:
        argv = [os.fsdecode(a) for a in _cmdline(record.pid).split(b"\0") if a]
    except OSError:
        argv = []
    command = " ".join(redact_argv(argv))[:160] or f"pid {record.pid}"
    if record.start_ticks is None:
        return Verdict("unknown", command)
    if record.start_ticks != now.start_ticks or (
        record.boot_id is not None and now.boot_id is not None and record.boot_id != now.boot_id
    ):
        return Verdict("stranger", command)
    # Same start: the same process, unless it runs something else entirely. A title set
    # with setproctitle changes the command line but not the executable.
    if (
        record.cmdline_sha256 is not None
        and record.cmdline_sha256 != now.cmdline_sha256
        and record.exe is not None
        and record.exe != now.exe
    ):
        return Verdict("stranger", command)
    return Verdict("ours", command)


@contextlib.contextmanager
def launch_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the pid file while checking it and starting (or
    stopping) the server: a second launch waits here, then finds the first one's server.

    The lock file is removed on the way out, under the lock. A waiter that then wakes up
    on the removed file sees that the path no longer names what it locked, and retries.
    """
    lock_path = path.with_name(path.name + ".lock")
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise EnvguardError(
                f"{lock_path}: cannot create the launch lock: {exc.strerror}",
                hint="choose a --pid-file in a writable directory",
            ) from None
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            current = lock_path.stat()
        except FileNotFoundError:
            os.close(fd)
            continue
        mine = os.fstat(fd)
        if (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            lock_path.unlink()
        os.close(fd)
