"""Where watch events go: a command (the event as JSON on stdin), a webhook (JSON POST with
a plain `text` field that chat webhooks render), and Prometheus textfile metrics. Each sink
gets only the time left of the run's --timeout; a failure is reported, never raised."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from envguard.knowledge.redaction import redact_value

EVENT_SCHEMA = 1  # the version of the event document (docs/alerts.md)


def send_command(command: str, event: dict[str, Any], deadline: float) -> str | None:
    """Run `command` (a shell line) with the event on stdin; None when it succeeded, else
    why not."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return "no time left"
    try:
        result = subprocess.run(
            command,
            shell=True,
            input=json.dumps(event),
            text=True,
            capture_output=True,
            timeout=remaining,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return f"--alert-cmd did not finish in {remaining:.1f}s"
    except OSError as exc:
        return f"--alert-cmd could not run: {exc.strerror}"
    if result.returncode != 0:
        return f"--alert-cmd exited with {result.returncode}"
    return None


def send_webhook(url: str, event: dict[str, Any], deadline: float) -> str | None:
    """POST {"text": ..., "event": {...}}; None when the receiver answered 2xx."""
    return post_json(url, {"text": event["text"], "event": event}, deadline)


def post_json(url: str, payload: object, deadline: float) -> str | None:
    """POST `payload` as JSON within the time left; None on a 2xx answer, else why not."""
    import urllib.error
    import urllib.request

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return "no time left"
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=remaining) as reply:
            status = reply.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        return f"{redact_value(url)}: no answer ({getattr(exc, 'reason', exc)})"
    return None if 200 <= status < 300 else f"{redact_value(url)}: HTTP {status}"


def write_textfile(directory: Path, name: str, text: str) -> str | None:
    """Write DIRECTORY/NAME.prom as node_exporter's textfile collector wants it: complete or
    not at all (a temporary file renamed over it)."""
    path = directory / f"{name}.prom"
    temporary = directory / f".{name}.prom.{os.getpid()}.tmp"
    try:
        temporary.write_text(text)
        temporary.replace(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    return None


# Alertmanager's alert names, by what a run found (the Prometheus rules in hooks/ use the
# same names, so a host with and without Prometheus pages the same way).
ALERTNAMES = {
    "drift": "EnvguardDrift",
    "unverifiable": "EnvguardUnverifiable",
    "gone": "EnvguardServerDown",
}


def post_alertmanager(
    base_url: str,
    firing: dict[str, dict[str, Any]],
    resolved: list[str],
    common: dict[str, str],
    now: str,
    deadline: float,
) -> str | None:
    """POST to Alertmanager's v2 API (/api/v2/alerts): every alert still firing (clients
    re-send active alerts; Alertmanager resolves those it stops hearing about after its
    resolve_timeout), and an endsAt for each that no longer fires. `firing` maps an alert
    name to its annotations; `common` holds the shared labels."""
    alerts = [
        {"labels": {**common, "alertname": name, "severity": annotations.pop("severity")},
         "annotations": annotations, "startsAt": now}
        for name, annotations in ((n, dict(a)) for n, a in firing.items())
    ] + [
        {"labels": {**common, "alertname": name, "severity": "critical"}, "endsAt": now}
        for name in resolved
    ]  # fmt: skip
    if not alerts:
        return None
    return post_json(base_url.rstrip("/") + "/api/v2/alerts", alerts, deadline)
