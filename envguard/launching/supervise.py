"""Run the server: detached (own session, log file) or in the foreground (signals
forwarded to its process group, its exit code passed through, nothing left behind)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from envguard.errors import EnvguardError
from envguard.probes.process import stat_fields

# Every catchable signal whose default would end envguard: each is passed on to the
# server's group, so envguard never dies and leaves the server orphaned (SIGQUIT and
# SIGUSR1 did). The stopping ones start the grace period before SIGKILL.
FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
)
STOPPING = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT})


class Child:
    """A started process: what subprocess.Popen would give here (pid, poll, wait,
    returncode) without importing subprocess, whose threads and selectors cost ~1.2 ms on
    the path `envguard launch` takes before the server even starts."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            _, status = os.waitpid(self.pid, 0)  # EINTR is retried (PEP 475)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def executable(program: str, environ: dict[str, str]) -> str:
    """`program` found on the server's own PATH (as Popen(env=...) searches), or an error."""
    if "/" in program:
        candidates = [program]
    else:
        path = environ.get("PATH", os.defpath)
        candidates = [os.path.join(d or ".", program) for d in path.split(os.pathsep)]  # noqa: PTH118
    for candidate in candidates:
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):  # noqa: PTH112
            return candidate
    raise EnvguardError(
        f"{program}: command not found (or not executable)",
        hint="check the command after --, or give its absolute path",
    )


def start_detached(command: list[str], environ: dict[str, str], log: Path, header: str) -> Child:
    """Start in a new session and process group, output appended to `log` after a header
    line, so the server outlives this process and the terminal (what `nohup ... &` did)."""
    program = executable(command[0], environ)
    with log.open("ab") as handle:
        # An argument that is not UTF-8 (bytes from the shell) is written escaped.
        handle.write(header.encode("utf-8", "backslashreplace") + b"\n")
        handle.flush()
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, handle.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, handle.fileno(), 2),
        ]
        return Child(os.posix_spawn(program, command, environ, file_actions=actions, setsid=True))


def start_foreground(
    command: list[str], environ: dict[str, str], *, stdout_to_stderr: bool = False
) -> Child:
    """Start in its own process group (so signals reach its workers through us). With
    `stdout_to_stderr` the server's output goes to stderr (stdout carries envguard's JSON)."""
    actions = [(os.POSIX_SPAWN_DUP2, 2, 1)] if stdout_to_stderr else []
    program = executable(command[0], environ)
    return Child(os.posix_spawn(program, command, environ, setpgroup=0, file_actions=actions))


def forward_signals(child: Child, grace: float = 30.0) -> Callable[[], None]:
    """Send the signals we receive (FORWARDED) to the child's process group. After a
    stopping one, the group gets SIGKILL once `grace` seconds pass, or at once on a second
    stopping signal: a server that ignores SIGTERM cannot hold envguard up forever. Returns
    a function that restores the previous handlers (and cancels a pending SIGKILL)."""
    timers: list[threading.Timer] = []

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)
        if signum not in STOPPING:
            return
        if timers:  # the second stopping signal: no more waiting
            kill()
            return
        timer = threading.Timer(grace, kill)
        timer.daemon = True
        timer.start()
        timers.append(timer)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}

    def restore() -> None:
        for timer in timers:
            timer.cancel()
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
            fields = stat_fields(int(entry.name))
        except (OSError, ValueError):
            continue
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
