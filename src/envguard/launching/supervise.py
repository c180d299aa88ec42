"""Run the server: detached (own session, log file) or in the foreground (signals
forwarded to its process group, its exit code passed through, nothing left behind)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def start_detached(
    command: list[str], environ: dict[str, str], log: Path, header: str
) -> subprocess.Popen[bytes]:
    """Start in a new session and process group, output appended to `log` after a header
    line, so the server outlives this process and the terminal (what `nohup ... &` did)."""
    with log.open("ab") as handle:
        handle.write(header.encode() + b"\n")
        handle.flush()
        return subprocess.Popen(
            command,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_foreground(command: list[str], environ: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start in its own process group (so signals reach its workers through us)."""
    return subprocess.Popen(command, env=environ, process_group=0)


def forward_signals(child: subprocess.Popen[bytes]) -> Callable[[], None]:
    """Send SIGINT/SIGTERM/SIGHUP we receive to the child's process group; return a
    function that restores the previous handlers."""

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


def exit_status(returncode: int) -> int:
    """The child's exit code; killed by signal N is 128+N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def reap_group(pgid: int, grace: float = 5.0) -> None:
    """Leave no orphans: TERM whatever is left in the group, KILL it after `grace`."""
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.05)
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is still in the group."""
    try:
        os.killpg(pgid, 0)  # cheap: an empty group answers ESRCH without a /proc scan
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def stop_group(pid: int, grace: float) -> str:
    """TERM the group led by `pid`, wait `grace` seconds, then KILL. Returns what it took."""
    try:
        pgid = os.getpgid(pid)
    except ProcessLookupError:
        return "not running"
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.05)
    if not _group_alive(pgid):
        return "stopped (SIGTERM)"
    _signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.05)
    return "killed (SIGKILL after SIGTERM was ignored)"
