"""Wait until the server answers its health URL, it dies, or time runs out - saying what
is happening meanwhile (big models take many minutes to load: docs/servers.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, NamedTuple

from envguard.probes.http import get_url

Outcome = Literal["healthy", "exited", "timeout"]


class HealthResult(NamedTuple):
    outcome: Outcome
    elapsed: float
    last_status: str  # "200", "503", "no answer"
    exit_code: int | None = None


def wait_healthy(
    url: str,
    exited: Callable[[], int | None],
    timeout: float,
    progress: Callable[[float, str], None],
    interval: float = 1.0,
    answered_by_it: Callable[[], bool] = lambda: True,
) -> HealthResult:
    """Poll `url` every `interval` seconds. `exited` returns the server's exit code once it
    has died (None while it runs). A 200 counts only if `answered_by_it()`: the listener is
    the launched server (another server on the port answered for it once)."""
    start = time.monotonic()
    last = "no answer"
    while True:
        elapsed = time.monotonic() - start
        code = exited()
        if code is not None:
            return HealthResult("exited", elapsed, last, code)
        status, _ = get_url(url, timeout=min(5.0, interval * 5))
        last = str(status) if status else "no answer"
        if status == 200:
            if answered_by_it():
                return HealthResult("healthy", time.monotonic() - start, last)
            last = "200, but from another process listening on the port"
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            return HealthResult("timeout", elapsed, last)
        progress(elapsed, last)
        time.sleep(min(interval, max(0.0, timeout - elapsed)))


def log_tail(path: str, lines: int = 20) -> list[str]:
    """The last lines of a log file (what a person reads when a start fails)."""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except OSError:
        return []
    return data.decode(errors="replace").splitlines()[-lines:]
