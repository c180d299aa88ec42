"""One server per port: is the address free, who claims it, who listens on it.

A launch decides before it starts anything that it may have the port (a claim file per port
in a directory only this user can write, kept until the server has bound it), and counts a
health answer only when the listener is the launched server or its descendant.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

from envguard.errors import EnvguardError, Refused
from envguard.probes.target import listener_within


def port_in_use(host: str | None, port: int) -> bool:
    """Whether binding the server's address would fail (SO_REUSEADDR, as servers bind)."""
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host if host not in (None, "") else "0.0.0.0", port))
        except OSError:
            return True
    return False


def listener_is_within(url: str, pid: int) -> bool:
    """Whether the process listening on `url`'s local port is `pid` or one of its
    descendants. A URL on another host cannot be told from here: it counts."""
    parts = urlsplit(url)
    port = url_port(url)
    if port is None or parts.hostname not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", None):
        return True
    return listener_within(port, pid)


def url_port(url: str | None) -> int | None:
    if url is None:
        return None
    parts = urlsplit(url)
    return parts.port or (80 if parts.scheme == "http" else None)


def port_claim(port: int) -> Path | None:
    """Where launches of this user claim `port` (a pid file per port, in a directory only
    this user can write); None where no such directory can be had (the bind check stays)."""
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    directory = Path(base) / f"envguard-{os.getuid()}" / "ports"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError:
        return None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None  # not ours alone: a claim there could be planted
    return directory / f"{port}.pid"


def refuse_a_claimed_port(claim: Path, port: int, bound: bool) -> None:
    from envguard.launching import pidfile

    try:
        record = pidfile.read(claim)
    except EnvguardError:
        return  # a damaged claim claims nothing
    if record is not None and pidfile.identify(record).identity == "ours":
        state = "serves it" if bound else "has not bound it yet (still starting)"
        raise Refused(
            f"port {port} is taken: a server envguard launched {state}, pid {record.pid}",
            hint=f"stop that one first (pid {record.pid}), or wait for it; one server per port",
        )
