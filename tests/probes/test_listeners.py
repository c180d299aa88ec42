"""The listening-socket lookup: the kernel's sock_diag answer, and the /proc/net fallback,
against real sockets (IPv4 and IPv6, listening or only bound) and psutil as the oracle."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from envguard.probes import listeners
from envguard.probes.listeners import listening_inodes, socket_holders
from tests.builders import free_port


def inode(sock: socket.socket) -> int:
    return os.fstat(sock.fileno()).st_ino


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def listen(family: int, port: int, opened: list[socket.socket], *, backlog: bool = True) -> int:
    sock = socket.socket(family)
    opened.append(sock)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1" if family == socket.AF_INET else "::1", port))
    if backlog:
        sock.listen()
    return inode(sock)


def test_both_families_are_found_and_a_bound_socket_is_not(sockets: list[socket.socket]) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    port = free_port()
    four = listen(socket.AF_INET, port, sockets)
    try:
        six = listen(socket.AF_INET6, port, sockets)
    except OSError as exc:
        pytest.skip(f"cannot listen on ::1 here: {exc}")
    listen(socket.AF_INET, port, sockets, backlog=False)  # bound, not listening
    other = listen(socket.AF_INET, free_port(), sockets)
    found = listening_inodes(port)
    assert found == {four, six}
    assert other not in found
    # The fallback reads /proc/net/tcp{,6} and must agree.
    assert listeners._from_proc_net(port) == found


def test_the_fallback_serves_where_netlink_is_refused(
    sockets: list[socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    expected = listen(socket.AF_INET, port, sockets)

    def refused(family: int, port: int) -> list[int]:
        raise PermissionError("sock_diag: operation not permitted")

    monkeypatch.setattr(listeners, "_diag", refused)
    assert listening_inodes(port) == {expected}


def test_the_holder_is_this_process_and_psutil_agrees(sockets: list[socket.socket]) -> None:
    psutil = pytest.importorskip("psutil")
    port = free_port()
    listen(socket.AF_INET, port, sockets)
    holders, denied = socket_holders(listening_inodes(port), [os.getpid(), os.getppid()])
    oracle = {
        c.pid for c in psutil.net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    }  # fmt: skip
    assert holders == oracle == {os.getpid()} and denied == 0


def test_a_proc_file_longer_than_a_page_is_read_whole() -> None:
    # seq_file hands out at most a page per read(): a short read is not the end. A Python
    # blocked on stdin has a maps file of several pages that stays put while it waits.
    import subprocess
    import sys

    from envguard.probes.process import read_proc

    child = subprocess.Popen(
        [sys.executable, "-c", "import decimal, sqlite3, ssl; print('ready', flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        expected = Path(f"/proc/{child.pid}/maps").read_bytes()
        assert len(expected) > 8192
        assert read_proc(f"/proc/{child.pid}/maps") == expected
    finally:
        child.kill()
        child.wait()
