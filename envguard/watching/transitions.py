"""What changed since the last run: a pure function from (previous state, this run) to the
events worth telling someone about. Nothing while nothing changes.

The identity of a drift is the set of its findings without pids and roles (a restart with
the same drift is the same drift, and must not page again).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, NamedTuple

Status = Literal["ok", "drift", "unverifiable", "gone"]
Kind = Literal[
    "drift_appeared",
    "drift_changed",
    "drift_resolved",
    "server_gone",
    "server_back",
    "unverifiable",
    "restarted",
    "reminder",
]
SEVERITY: dict[Kind, str] = {
    "drift_appeared": "critical",
    "drift_changed": "critical",
    "reminder": "critical",
    "server_gone": "critical",
    "unverifiable": "warning",
    "drift_resolved": "resolved",
    "server_back": "resolved",
    "restarted": "info",
}


class Run(NamedTuple):
    """This run's outcome, as the state keeps it (findings already redacted)."""

    status: Status
    findings: tuple[str, ...]  # "kind subject: expected -> actual", no pid, sorted, unique
    processes: tuple[tuple[int, int], ...]  # (pid, start ticks): tells a restart
    fingerprint: str | None
    message: str  # why it is gone or unverifiable, when it is

    @property
    def identity(self) -> str:
        text = json.dumps([self.status, list(self.findings)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class Event(NamedTuple):
    kind: Kind
    severity: str
    summary: str
    findings: tuple[str, ...]


def transitions(
    previous: dict[str, Any] | None, run: Run, now: float, remind: float | None
) -> list[Event]:
    """The events between the last run's state and this run (empty when nothing changed)."""
    if previous is None:
        before: Status = "ok"
        before_identity = Run("ok", (), (), None, "").identity
        before_processes: tuple[tuple[int, int], ...] = run.processes
    else:
        before = previous["status"]
        before_identity = previous["identity"]
        before_processes = tuple((int(p[0]), int(p[1])) for p in previous.get("processes", []))
    if run.identity == before_identity:
        if (
            run.status == "ok"
            and run.processes
            and before_processes
            and run.processes != before_processes
        ):
            return [
                Event(
                    "restarted", SEVERITY["restarted"], "the server restarted and is compliant", ()
                )
            ]
        last_alert = (previous or {}).get("last_alert")
        if remind and run.status != "ok" and last_alert is not None and now - last_alert >= remind:
            return [_event("reminder", f"still {run.status}: {run.message or _count(run)}", run)]
        return []
    if run.status == "gone":
        return [_event("server_gone", f"the server is gone: {run.message}", run)]
    if run.status == "unverifiable":
        return [
            _event(
                "unverifiable", f"the server cannot be verified: {run.message or _count(run)}", run
            )
        ]
    if run.status == "drift":
        kind: Kind = "drift_changed" if before == "drift" else "drift_appeared"
        return [_event(kind, f"drift: {_count(run)}", run)]
    # ok now, something else before
    if before == "gone":
        return [_event("server_back", "the server is back and compliant", run)]
    return [_event("drift_resolved", "compliant again", run)]


def _event(kind: Kind, summary: str, run: Run) -> Event:
    return Event(kind, SEVERITY[kind], summary, run.findings)


def _count(run: Run) -> str:
    return f"{len(run.findings)} findings differ from the profile" if run.findings else run.status
