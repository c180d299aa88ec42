"""NCCL's own word on what it read: the lines NCCL_DEBUG=INFO prints.

With the ENV subsystem on (NCCL_DEBUG_SUBSYS includes ENV, as by default), each process
prints one line per variable it read, the same for the environment and NCCL config files
(docs/nccl.md, lines seen on an H200 with NCCL 2.28.9):

    vm:672:672 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 16777216.
    vm:672:672 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS

The prefix is host:pid:tid [cudaDev]; an integer ends with a period (`16M` prints as `16.`,
the 16 bytes NCCL made of it); a misspelled name prints nothing. Ranks come from the
communicator lines (`ncclCommInitRankConfig comm 0x... rank 0 nranks 2 cudaDev 0 ...`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from envguard.errors import EnvguardError
from envguard.files import open_regular

MAX_LOG = 1 << 30  # a server log of days; past this, give an excerpt (grep 'NCCL INFO')
MAX_LINE = 1 << 16

_LINE = re.compile(rb"([^\s:]+):(\d+):(\d+) \[(\d+)\] NCCL INFO (.*)")
_SET = re.compile(r"(NCCL_[A-Za-z0-9_]+) set by environment to (.*)")
_VERSION = re.compile(r"NCCL version (\S+)")
_RANK = re.compile(r"comm (0x[0-9a-fA-F]+) rank (\d+) nranks (\d+) cudaDev (\d+)")
_INTEGER = re.compile(r"-?\d+\.")


class LoggedProcess(NamedTuple):
    host: str
    pid: int  # as the process saw itself (its own PID namespace)
    version: str | None
    ranks: tuple[tuple[int, int], ...]  # (rank, nranks) of each communicator, in order
    settings: dict[str, str]  # variable -> the value NCCL says it used (integers as digits)

    @property
    def label(self) -> str:
        ranks = ", ".join(f"rank {rank}/{size}" for rank, size in self.ranks)
        return f"pid {self.pid}" + (f" ({ranks})" if ranks else "")

    @property
    def largest_communicator(self) -> int:
        return max((size for _, size in self.ranks), default=0)


class NcclLog(NamedTuple):
    path: str
    processes: tuple[LoggedProcess, ...]  # every process with NCCL INFO lines, by first line

    @property
    def env_lines(self) -> int:
        return sum(len(p.settings) for p in self.processes)


def read_nccl_log(path: str | Path) -> NcclLog:
    """Parse the NCCL INFO lines of a log (any other lines are skipped, and so is any
    prefix a logger put before NCCL's own). Raises EnvguardError (exit 3) when the log
    cannot be read."""
    found: dict[tuple[str, int], _Seen] = {}
    try:
        with open_regular(path) as handle:
            if handle.seek(0, 2) > MAX_LOG:
                raise EnvguardError(
                    f"{path}: larger than {MAX_LOG >> 30} GiB",
                    hint=f"give an excerpt: grep 'NCCL INFO' {path} > nccl.log",
                )
            handle.seek(0)
            while line := handle.readline(MAX_LINE):
                if b" NCCL INFO " in line:
                    _take(found, line)
    except OSError as exc:
        raise EnvguardError(
            f"{path}: cannot read the NCCL log ({exc.strerror or exc})",
            hint="give the server's log file, written with NCCL_DEBUG=INFO",
        ) from None
    processes = tuple(
        LoggedProcess(host, pid, seen.version, tuple(seen.ranks.values()), seen.settings)
        for (host, pid), seen in found.items()
    )
    return NcclLog(str(path), processes)


class _Seen:
    """What one process's lines said so far."""

    def __init__(self) -> None:
        self.version: str | None = None
        self.ranks: dict[str, tuple[int, int]] = {}  # communicator -> (rank, nranks)
        self.settings: dict[str, str] = {}


def _take(found: dict[tuple[str, int], _Seen], raw: bytes) -> None:
    match = _LINE.search(raw.rstrip(b"\r\n"))
    if match is None:
        return
    host = match.group(1).decode(errors="replace")
    seen = found.setdefault((host, int(match.group(2))), _Seen())
    message = match.group(5).decode(errors="replace")
    if setting := _SET.fullmatch(message):
        name, value = setting.groups()
        if _INTEGER.fullmatch(value):
            value = value[:-1]  # INFO(..., "%s set by environment to %lld.", ...)
        seen.settings.setdefault(name, value)
    elif version := _VERSION.match(message):
        seen.version = version.group(1)
    elif rank := _RANK.search(message):
        seen.ranks.setdefault(rank.group(1), (int(rank.group(2)), int(rank.group(3))))
