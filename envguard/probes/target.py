"""Find the server to check: by pid, by listening TCP port, or by command-line regex."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from envguard.errors import AccessDenied, TargetError
from envguard.knowledge.redaction import redact_argv
from envguard.probes.process import stat_fields


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


def resolve(target: Target, *, every_match: bool = False) -> list[int]:
    """The pid(s) of the server's top process. More than one only with `every_match`."""
    if target.pid is not None:
        return [target.pid]
    if target.port is not None:
        return [_by_port(target.port)]
    assert target.match is not None
    return _by_match(target.match, every_match)


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


def _by_port(port: int) -> int:
    import psutil

    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        raise AccessDenied(
            f"listing sockets to find port {port} was refused",
            hint="run as root, or give the server's --pid",
        ) from None
    listeners = [
        c
        for c in connections
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    ]
    if not listeners:
        raise TargetError(
            f"nothing is listening on TCP port {port}",
            hint="is the server up? (`ss -ltnp`), or use --pid / --match",
        )
    pids = {c.pid for c in listeners if c.pid is not None}
    if not pids:
        raise AccessDenied(
            f"port {port} is held by another user's process",
            hint="run as root or as the server's user, or give --pid",
        )
    parent = {p.pid: p.ppid() for p in map(psutil.Process, pids)}
    return _topmost(pids, parent)[0]


def _by_match(pattern: str, every_match: bool) -> list[int]:
    import psutil

    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise TargetError(
            f"--match {pattern!r} is not a valid regular expression: {exc}",
            hint="quote the pattern for the shell; escape regex characters",
        ) from None
    own = _own_lineage()
    parent: dict[int, int] = {}
    matched: dict[int, list[str]] = {}
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        info = proc.info
        parent[info["pid"]] = info["ppid"] or 0
        cmdline = info["cmdline"] or []
        if info["pid"] not in own and cmdline and regex.search(" ".join(cmdline)):
            matched[info["pid"]] = cmdline
    tops = _topmost(set(matched), parent)
    if not tops:
        raise TargetError(
            f"no process command line matches {pattern!r}",
            hint="check with `pgrep -af PATTERN`, or use --pid / --port",
        )
    if len(tops) > 1 and not every_match:
        listing = "; ".join(f"{pid}: {' '.join(redact_argv(matched[pid]))[:120]}" for pid in tops)
        raise TargetError(
            f"--match {pattern!r} matches {len(tops)} servers: {listing}",
            hint="narrow the pattern, give --pid, or add --all to check each",
        )
    return tops


def _own_lineage() -> set[int]:
    """This process and its ancestors: `sh -c 'envguard check --match sglang'` must not
    find the shell that started it."""
    lineage = {os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in lineage:
        lineage.add(pid)
        try:
            pid = int(stat_fields(pid)[1])
        except (OSError, ValueError):
            break
    return lineage
