"""Snapshots of live processes read straight from /proc.

The environment is read as raw bytes from /proc/PID/environ because its shape matters:
after `setproctitle` it reads back as NUL padding (or empty) rather than KEY=VALUE entries
(docs/servers.md), and that must be reported as "cannot verify", not as
"every variable is missing". psutil would hand back an empty dict for both cases.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, NamedTuple

from envguard.errors import AccessDenied, TargetError
from envguard.knowledge import servers

EnvironState = Literal["ok", "clobbered", "empty", "denied", "gone"]

PROC = Path("/proc")


class ProcessSnapshot(NamedTuple):
    """One process as read at one moment."""

    pid: int
    ppid: int
    uid: int
    start_ticks: int  # /proc/PID/stat field 22: tells a restarted process from the same pid
    role: str
    cmdline: tuple[str, ...]
    environ: dict[str, str] | None  # None unless environ_state == "ok"
    environ_state: EnvironState
    cwd: str | None


class ProcessGone(TargetError):
    """The process exited while it was being read (or is a zombie: exited, not yet reaped)."""

    zombie = False


class Zombie(ProcessGone):
    """Exited and not yet reaped by its parent: it has no environment left to check."""

    zombie = True


def parse_environ(data: bytes) -> tuple[dict[str, str] | None, EnvironState]:
    """Split raw /proc/PID/environ bytes, telling a real environment from a clobbered one.

    A real environ is NUL-terminated KEY=VALUE strings. setproctitle overwrites the area
    with the title's tail and NUL padding: runs of NULs (empty entries), and few or no
    entries with '='. One odd entry without '=' in a real environment (execve allows it) is
    not that: getenv() never matches it, so it is skipped and the rest is checked.
    """
    if not data:
        return None, "empty"
    entries = data.split(b"\0")
    if entries[-1] == b"":
        entries.pop()  # the one NUL that ends the last entry
    assignments = [entry for entry in entries if b"=" in entry]
    if not assignments or b"" in entries or len(assignments) * 2 < len(entries):
        return None, "clobbered"
    environ: dict[str, str] = {}
    for entry in assignments:
        name, _, value = entry.partition(b"=")
        # First occurrence wins, as getenv() does.
        environ.setdefault(os.fsdecode(name), os.fsdecode(value))
    return environ, "ok"


def read_proc(path: str) -> bytes:
    """A /proc file's bytes, read straight into large chunks. Each read() of a /proc file
    is generated anew (seq_file hands out at most a page of records per call), so this
    reads until the kernel says end of file, without a buffered layer's extra calls."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read(pid: int, name: str) -> bytes:
    return read_proc(f"/proc/{pid}/{name}")


def stat_fields(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (which may hold spaces and ')'):
    [0] state, [1] ppid, [2] pgrp, [19] start time in clock ticks. Raises OSError."""
    raw = _read(pid, "stat").decode("ascii", "replace")
    return raw[raw.rindex(")") + 2 :].split()


def running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        return stat_fields(pid)[0] not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return False


def _uid(pid: int) -> int:
    for line in _read(pid, "status").decode("ascii", "replace").splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise TargetError(f"process {pid}: no Uid line in /proc/{pid}/status", hint="is /proc Linux's?")


def snapshot(pid: int, *, is_target: bool = False) -> ProcessSnapshot:
    """Read one process. Raises ProcessGone if it is not there (or a zombie)."""
    try:
        fields = stat_fields(pid)
        if fields[0] in ("Z", "X"):
            raise Zombie(
                f"process {pid} has exited (zombie)", hint="check that the server is running"
            )
        uid = _uid(pid)
        cmdline = tuple(
            os.fsdecode(part) for part in _read(pid, "cmdline").rstrip(b"\0").split(b"\0") if part
        )
        try:
            environ, state = parse_environ(_read(pid, "environ"))
        except PermissionError:
            environ, state = None, "denied"
        try:
            cwd: str | None = str((PROC / str(pid) / "cwd").readlink())
        except PermissionError:
            cwd = None
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessGone(
            f"process {pid} exited while it was being read",
            hint="check that the server is running, then run the check again",
        ) from None
    comm = ""
    if not cmdline:
        try:
            comm = _read(pid, "comm").decode(errors="replace").strip()
        except OSError:
            comm = ""
    return ProcessSnapshot(
        pid=pid,
        ppid=int(fields[1]),
        uid=uid,
        start_ticks=int(fields[19]),
        role=role_of(cmdline or (comm,), is_target=is_target),
        cmdline=cmdline,
        environ=environ,
        environ_state=state,
        cwd=cwd,
    )


def namespace_pid(pid: int) -> int:
    """The pid a process sees for itself (getpid() in its own PID namespace: what it
    prints in its logs), from the last NSpid field of /proc/PID/status; `pid` itself
    where that cannot be read."""
    try:
        for line in _read(pid, "status").decode("ascii", "replace").splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return pid


def role_of(cmdline: tuple[str, ...], *, is_target: bool) -> str:
    """A short name for what the process does: launcher, scheduler_TP3, detokenizer, ..."""
    title = " ".join(cmdline).strip()
    if is_target:
        return "launcher"
    from_title = servers.role_from_title(title)
    if from_title is not None:
        return from_title
    if "multiprocessing.resource_tracker" in title:
        return "resource_tracker"
    if "multiprocessing.spawn" in title or "multiprocessing.forkserver" in title:
        return "mp_child"
    return Path(cmdline[0]).name if cmdline and cmdline[0] else "process"


def access_hint(uid: int) -> str:
    """How to get read access to another process's environ."""
    if os.geteuid() in (0, uid):
        # Same user or root and still refused: the kernel's ptrace access check (another
        # container's process, a non-dumpable process, or Yama ptrace_scope).
        return (
            "the kernel refused even this user (ptrace access check): run envguard inside "
            "the server's container or PID namespace, as root"
        )
    return f"run as root or as uid {uid}"


def parents() -> dict[int, int]:
    """pid -> ppid of every process now, from one pass over /proc."""
    table: dict[int, int] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        try:
            table[int(entry.name)] = int(stat_fields(int(entry.name))[1])
        except (OSError, ValueError, IndexError):
            continue  # exited between listing and reading: not part of the tree any more
    return table


def children_map(table: dict[int, int] | None = None) -> dict[int, list[int]]:
    """ppid -> its children, from `table` (one scan of /proc when not given)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in (parents() if table is None else table).items():
        children.setdefault(ppid, []).append(pid)
    return children


def descendants(pid: int, children: dict[int, list[int]] | None = None) -> list[int]:
    """Every descendant of `pid`, parents before children. Give `children` (children_map)
    when walking many trees: one scan of /proc for all of them."""
    if children is None:
        children = children_map()
    found: list[int] = []
    queue = sorted(children.get(pid, []))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue += sorted(children.get(child, []))
    return found


def process_tree(
    pid: int, children: dict[int, list[int]] | None = None
) -> tuple[list[ProcessSnapshot], list[int], list[int]]:
    """The target and all its descendants; the descendants that exited while being read
    (unverifiable: reported, never silently dropped); and zombie descendants (exited, not
    yet reaped: nothing left to check, so noted, not a failure). The target is re-read
    last: if it died meanwhile, ProcessGone is raised."""
    if not (PROC / str(pid)).exists():
        raise TargetError(
            f"no process with pid {pid}",
            hint="check the pid (`pgrep -af sglang`), or use --port / --match",
        )
    root = snapshot(pid, is_target=True)
    if root.environ_state == "denied":
        raise AccessDenied(
            f"process {pid} belongs to uid {root.uid}; /proc/{pid}/environ is not readable",
            hint=access_hint(root.uid),
        )
    snapshots: list[ProcessSnapshot] = [root]
    vanished: list[int] = []
    zombies: list[int] = []
    for child in descendants(pid, children):
        try:
            snapshots.append(snapshot(child))
        except ProcessGone as gone:
            (zombies if gone.zombie else vanished).append(child)
    snapshot(pid, is_target=True)  # raises ProcessGone if the server died meanwhile
    return snapshots, vanished, zombies
