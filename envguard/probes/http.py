"""A bare HTTP/1.0 GET for health checks and /server_info.

urllib.request costs ~17 ms of imports (http.client, email) on paths that run from cron and
before every benchmark; this needs only the socket module. HTTP/1.0 means no chunked body,
and the server closes the connection when it is done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import socket

MAX_BODY = 16 * 2**20


def get(host: str, port: int, path: str, timeout: float) -> tuple[int, bytes]:
    """(status, body); status 0 when nothing answered (refused, timed out, not HTTP)."""
    request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: */*\r\n\r\n"
    chunks: list[bytes] = []
    try:
        with _connect(host.strip("[]"), port, timeout) as conn:
            conn.sendall(request.encode("ascii"))
            while chunk := conn.recv(65536):
                chunks.append(chunk)
                if sum(map(len, chunks)) > MAX_BODY:
                    return 0, b""
    except OSError:
        return 0, b""
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        return 0, b""
    return int(status_line[1]), body


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    """A connected socket. An address literal (the usual 127.0.0.1) is connected to
    directly: create_connection() would pass it through getaddrinfo(), which imports the
    idna codec (~2 ms) to encode even a numeric host."""
    import socket

    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        conn = socket.socket(family, socket.SOCK_STREAM)
        try:
            conn.settimeout(timeout)
            conn.connect((host, port))
        except BaseException:
            conn.close()
            raise
        return conn
    return socket.create_connection((host, port), timeout=timeout)


def get_url(url: str, timeout: float) -> tuple[int, bytes]:
    """GET an http:// URL."""

    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return get(parts.hostname or "127.0.0.1", parts.port or 80, path, timeout)
