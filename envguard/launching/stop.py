"""Stop a launched server - and only that server.

Before any signal: the pid file must name the very process envguard started (its start
time and boot, see envguard.launching.pidfile), that process must lead its own process
group (envguard starts servers in their own session), and the group must not be pid 1's,
a kernel thread's, or envguard's own. A signal to group 0 means "my own group" and one to
pid 1's group can take down a container: neither is ever sent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from envguard.errors import Refused
from envguard.launching import pidfile
from envguard.launching.supervise import stop_group
from envguard.probes.process import stat_fields

PF_KTHREAD = 0x00200000  # include/linux/sched.h: the process is a kernel thread


class Stopped(NamedTuple):
    pid: int | None
    outcome: str  # what happened, for people


def stop(pid_file: Path, grace: float) -> Stopped:
    """Stop the server `pid_file` names; an already-stopped server is success."""

    with pidfile.launch_lock(pid_file):
        record = pidfile.read(pid_file)
        if record is None:
            return Stopped(None, f"not running: no pid file at {pid_file} (nothing to stop)")
        verdict = pidfile.identify(record)
        if verdict.identity == "gone":
            pid_file.unlink(missing_ok=True)
            return Stopped(
                record.pid, f"not running (pid {record.pid} has exited); removed {pid_file}"
            )
        if verdict.identity == "stranger":
            raise Refused(
                f"{pid_file} is stale: pid {record.pid} is now another process "
                f"({verdict.command}), not the server envguard started; left it alone",
                hint=f"the server it named is gone: delete {pid_file}",
            )
        if verdict.identity == "unknown":
            raise Refused(
                f"{pid_file} names pid {record.pid} ({verdict.command}) but records no start "
                "time (written by envguard 0.1), so envguard cannot tell it is the server it "
                "started; left it alone",
                hint=f"if it is, stop it by hand (kill -TERM -{record.pid}) and delete {pid_file}",
            )
        unsafe = unsafe_group(record.pid)
        if unsafe is not None:
            raise Refused(
                f"{pid_file}: pid {record.pid}: {unsafe}; left it alone",
                hint=f"check the process (ps -o pid,pgid,lstart,args -p {record.pid}); "
                f"delete {pid_file} if it is not your server",
            )
        outcome = stop_group(record.pid, grace)
        pid_file.unlink(missing_ok=True)
    return Stopped(record.pid, outcome)


def unsafe_group(pid: int) -> str | None:
    """Why signalling the process group led by `pid` could hit what is not the server."""

    if pid <= 1:
        return "pid 1 (init) or lower is never signalled"
    try:
        fields = stat_fields(pid)
        pgid = os.getpgid(pid)
    except (OSError, ValueError, IndexError):
        return None  # gone meanwhile: stop_group finds nothing to signal
    if int(fields[6]) & PF_KTHREAD or int(fields[1]) == 2:
        return "a kernel thread, never a server"
    if pgid <= 1:
        return f"its process group is {pgid}, which would signal envguard itself or init"
    if pgid != pid:
        return (
            f"it does not lead its own process group (group {pgid}), so it is not a server "
            "envguard started"
        )
    if pgid == os.getpgrp():
        return "its process group is envguard's own"
    return None
