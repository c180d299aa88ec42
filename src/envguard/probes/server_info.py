"""The server's own view of its resolved arguments: SGLang's /server_info.

SGLang 0.5.10+ serves /server_info (/get_server_info before, kept as an alias) with every
resolved ServerArgs field, including computed ones such as mem_fraction_static - and
api_key, which must never be shown. vLLM has it only with VLLM_SERVER_DEV_MODE=1.
"""

from __future__ import annotations

import json
from typing import Any

PATHS = ("/server_info", "/get_server_info")


def local_host(host: str | None) -> str:
    """Where to reach a server bound to `host` from this machine."""
    if host in (None, "", "0.0.0.0", "::", "[::]"):
        return "127.0.0.1"
    return host


def fetch(host: str | None, port: int, timeout: float = 2.0) -> dict[str, Any] | None:
    """The JSON object the server returns, or None when it cannot be had (not an error:
    the command line stays the primary source). Never waits longer than `timeout` each."""
    address = local_host(host)
    for path in PATHS:
        status, body = _get(address, port, path, timeout)
        if status != 200:
            continue
        try:
            data = json.loads(body)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def _get(host: str, port: int, path: str, timeout: float) -> tuple[int, bytes]:
    """A bare HTTP/1.0 GET. urllib.request costs ~17 ms of imports (http.client, email) on
    the path `envguard check` takes from cron; this needs only the socket module. HTTP/1.0
    means no chunked body and the server closes the connection when done."""
    import socket

    request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: application/json\r\n\r\n"
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout) as conn:
            conn.sendall(request.encode("ascii"))
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
                if sum(map(len, chunks)) > 16 * 2**20:
                    return 0, b""  # not a server_info answer
    except OSError:
        return 0, b""
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        return 0, b""
    return int(status_line[1]), body
