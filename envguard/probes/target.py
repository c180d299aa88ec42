"""Find the server to check: by pid, by listening TCP port, or by command-line regex.

A port is found the way `ss -ltnp` finds it (probes/listeners.py): the kernel names the
sockets listening on it, and the processes holding them are found under /proc/PID/fd. One
pass over /proc answers both --port and --match, however many processes there are. Several
servers listening on one port (SO_REUSEPORT) or matching one pattern are an ambiguity to
resolve, never a guess.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from envguard.errors import AccessDenied, TargetError, UsageError
from envguard.knowledge.redaction import redact_argv
from envguard.probes.listeners import listening_inodes, socket_holders
from envguard.probes.process import PROC, descendants, parents, stat_fields

SHOWN = 10  # servers named in an ambiguity message; the rest are counted


class Target(NamedTuple):
    """How the user named the server: exactly one of the three is set."""

    pid: int | None = None
    port: int | None = None
    match: str | None = None

    def describe(self) -> str:
        if self.pid is not None:
            return f"pid {self.pid}"
        if self.port is not None:
            return f"port {self.port}"
        return f"--match {self.match!r}"


def compile_match(pattern: str) -> re.Pattern[str]:
    """The --match pattern, or a usage error (exit 2) saying what is wrong with it."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"--match {pattern!r} is not a valid regular expression: {exc}",
            hint="quote the pattern for the shell; escape regex characters",
        ) from None


def resolve(
    target: Target, *, every_match: bool = False, table: dict[int, int] | None = None
) -> list[int]:
    """The pid(s) of the server's top process. More than one only with `every_match`.
    `table`: pid -> ppid of every process (process.parents), when the caller has read it
    already for the trees it will read next: one pass over /proc then serves both."""
    if target.pid is not None:
        return [target.pid]
    if target.port is not None:
        return _by_port(target.port, every_match, table or parents())
    assert target.match is not None
    return _by_match(target.match, every_match, table or parents())


def _topmost(pids: set[int], parent: dict[int, int]) -> list[int]:
    """Drop every pid whose ancestor is also in the set: a server, not its workers."""

    def has_ancestor_in_set(pid: int) -> bool:
        seen = set()
        current = parent.get(pid, 0)
        while current > 1 and current not in seen:
            if current in pids:
                return True
            seen.add(current)
            current = parent.get(current, 0)
        return False

    return sorted(pid for pid in pids if not has_ancestor_in_set(pid))


def listener_within(port: int, pid: int) -> bool:
    """Whether a process listening on TCP `port` is `pid` or one of its descendants."""
    holders, _ = socket_holders(listening_inodes(port), [pid, *descendants(pid)])
    return bool(holders)


def _by_port(port: int, every_match: bool, parent: dict[int, int]) -> list[int]:
    inodes = listening_inodes(port)
    if not inodes:
        raise TargetError(
            f"nothing is listening on TCP port {port}",
            hint="is the server up? (`ss -ltnp`), or use --pid / --match",
        )
    holders, denied = socket_holders(inodes, sorted(parent))
    if not holders:
        raise AccessDenied(
            f"port {port} is held by a process envguard may not look into"
            + (f" ({denied} processes of other users)" if denied else ""),
            hint="run as root or as the server's user, or give --pid",
        )
    tops = _topmost(holders, parent)
    if len(tops) > 1 and not every_match:
        raise TargetError(
            f"port {port} has {len(tops)} servers listening (SO_REUSEPORT): "
            + _listing(tops, {pid: _cmdline(pid) for pid in tops[:SHOWN]}),
            hint="give the one to check with --pid, or add --all to check each",
        )
    return tops


def _by_match(pattern: str, every_match: bool, parent: dict[int, int]) -> list[int]:
    regex = compile_match(pattern)
    own = _own_lineage()
    matched: dict[int, list[str]] = {}
    for pid in parent:
        if pid in own:
            continue
        cmdline = _cmdline(pid)
        if cmdline and regex.search(" ".join(cmdline)):
            matched[pid] = cmdline
    tops = _topmost(set(matched), parent)
    if not tops:
        raise TargetError(
            f"no process command line matches {pattern!r}",
            hint="check with `pgrep -af PATTERN`, or use --pid / --port",
        )
    if len(tops) > 1 and not every_match:
        raise TargetError(
            f"--match {pattern!r} matches {len(tops)} servers: " + _listing(tops, matched),
            hint="narrow the pattern, give --pid, or add --all to check each",
        )
    return tops


def _listing(pids: list[int], commands: dict[int, list[str]]) -> str:
    """The first few servers with their (redacted, shortened) command lines; a count of
    the rest, so that 2,000 matches make one readable line."""
    shown = "; ".join(
        f"{pid}: {' '.join(redact_argv(commands.get(pid, [])))[:120]}" for pid in pids[:SHOWN]
    )
    rest = len(pids) - SHOWN
    return shown + (f"; ... and {rest} more" if rest > 0 else "")


def _cmdline(pid: int) -> list[str]:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [os.fsdecode(part) for part in raw.rstrip(b"\0").split(b"\0") if part]


def _own_lineage() -> set[int]:
    """This process and its ancestors: `sh -c 'envguard check --match sglang'` must not
    find the shell that started it."""
    lineage = {os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in lineage:
        lineage.add(pid)
        try:
            pid = int(stat_fields(pid)[1])
        except (OSError, ValueError, IndexError):
            break
    return lineage
