"""A bare HTTP/1.0 GET for health checks and /server_info.

urllib.request costs ~17 ms of imports (http.client, email) on paths that run from cron and
before every benchmark; this needs only the socket module. HTTP/1.0 means no chunked body,
and the server closes the connection when it is done.
"""

from __future__ import annotations

from urllib.parse import urlsplit

MAX_BODY = 16 * 2**20


def get(host: str, port: int, path: str, timeout: float) -> tuple[int, bytes]:
    """(status, body); status 0 when nothing answered (refused, timed out, not HTTP)."""
    import socket

    request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: */*\r\n\r\n"
    chunks: list[bytes] = []
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout) as conn:
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


def get_url(url: str, timeout: float) -> tuple[int, bytes]:
    """GET an http:// URL."""

    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return get(parts.hostname or "127.0.0.1", parts.port or 80, path, timeout)
