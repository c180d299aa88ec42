"""The server's own view of its resolved arguments: SGLang's /server_info.

SGLang 0.5.10+ serves /server_info (/get_server_info before, kept as an alias) with every
resolved ServerArgs field, including computed ones such as mem_fraction_static - and
api_key, which must never be shown. vLLM has it only with VLLM_SERVER_DEV_MODE=1.
"""

from __future__ import annotations

import json
from typing import Any

from envguard.probes.http import get

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
        status, body = get(address, port, path, timeout)
        if status != 200:
            continue
        try:
            data = json.loads(body)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None
