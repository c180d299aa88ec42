"""One watch run: check, compare with the last run's state, deliver the events of a change
(and any still owed from earlier runs), publish textfile metrics, save the state.

Library first: `watch()` takes plain arguments and returns check's exit code; sink failures
are returned beside it, never raised: the verdict's exit code does not depend on a chat
server being up."""

from __future__ import annotations

import re
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from envguard.checking import check
from envguard.errors import ProfileError, TargetError
from envguard.evaluation.findings import Finding
from envguard.evaluation.report import CheckReport
from envguard.fingerprint import fingerprint, observed_setup
from envguard.knowledge.redaction import redact_value
from envguard.probes.target import Target
from envguard.render.prometheus import labels, metric
from envguard.watching import sinks, state
from envguard.watching.transitions import Event, Run, transitions


class Sinks(NamedTuple):
    alert_cmd: str | None = None
    webhook: str | None = None
    textfile_dir: Path | None = None
    alertmanager: str | None = None


class WatchResult(NamedTuple):
    exit_code: int
    events: tuple[Event, ...]  # the changes this run found
    delivered: int  # events sent (new and owed)
    failures: tuple[str, ...]  # sink failures (the events stay owed)


def watch(
    profile_path: str,
    target: Target,
    sinks_: Sinks,
    *,
    state_dir: Path | None = None,
    timeout: float = 20.0,
    remind_every: float | None = None,
    pause_until: float | None = None,
) -> WatchResult:
    """One run. `pause_until` (a Unix time) starts a quiet period for planned maintenance:
    until then, runs check and publish metrics but send nothing and remember nothing, so the
    first run after it compares with what was seen before the pause."""
    deadline = time.monotonic() + timeout
    directory = state_dir or state.default_dir()
    path = state.state_path(directory, str(Path(profile_path).resolve()), target.describe())
    with state.locked(path, deadline):
        previous = state.load(path)
        report, run, code = _observe(profile_path, target)
        now = time.time()
        label = report.profile.label if report else profile_path
        paused = pause_until or (previous or {}).get("paused_until")
        if paused is not None and now < paused:
            quiet = _publish(sinks_, run, report, label, target, now)
            base = previous or _first_state(label, target, run, now)
            state.save(path, {**base, "paused_until": paused})
            return WatchResult(code, (), 0, tuple(quiet))
        events = transitions(previous, run, now, remind_every)
        owed = list((previous or {}).get("owed", []))
        owed += [_document(e, label, target, now) for e in events]
        failures: list[str] = []
        delivered = 0
        still_owed = []
        for document in owed:
            problems = _deliver(document, sinks_, deadline)
            if problems:
                failures += problems
                still_owed.append(document)
            else:
                delivered += 1
        am_firing = list((previous or {}).get("alertmanager_firing", []))
        if sinks_.alertmanager is not None:
            problem, am_firing = _alertmanager(
                sinks_.alertmanager, run, am_firing, label, target, now, deadline
            )
            if problem:
                failures.append(problem)
        failures += _publish(sinks_, run, report, label, target, now)
        alerted = bool(events) and any(e.kind != "restarted" for e in events)
        state.save(
            path,
            {
                "profile": label,
                "target": target.describe(),
                "status": run.status,
                "identity": run.identity,
                "findings": list(run.findings),
                "processes": [list(p) for p in run.processes],
                "fingerprint": run.fingerprint,
                "message": run.message,
                "updated": now,
                "last_alert": now if alerted else (previous or {}).get("last_alert"),
                "owed": still_owed,
                "alertmanager_firing": am_firing,
            },
        )
    return WatchResult(code, tuple(events), delivered, tuple(failures))


def _publish(
    sinks_: Sinks, run: Run, report: CheckReport | None, label: str, target: Target, now: float
) -> list[str]:
    """The textfile metrics: written every run, paused or not (they are facts, not alerts)."""
    if sinks_.textfile_dir is None:
        return []
    text = _metrics(run, report, label, target, now)
    problem = sinks.write_textfile(sinks_.textfile_dir, _file_name(label, target), text)
    return [problem] if problem else []


def _first_state(label: str, target: Target, run: Run, now: float) -> dict[str, Any]:
    """What a paused first run remembers: compliant, so that drift found after the pause
    is news."""
    ok = Run("ok", (), run.processes, None, "")
    return {"profile": label, "target": target.describe(), "status": "ok",
            "identity": ok.identity, "processes": [list(p) for p in run.processes],
            "updated": now, "owed": []}  # fmt: skip


def _observe(profile_path: str, target: Target) -> tuple[CheckReport | None, Run, int]:
    try:
        report = check(profile_path, target, read_launch=True)
    except ProfileError:
        raise  # a bad profile is the caller's to fix, not a state of the server
    except TargetError as exc:
        run = Run("gone", (), (), None, redact_value(exc.message))
        return None, run, int(exc.exit_code)
    findings = tuple(sorted({_identity(f) for f in report.findings}))
    processes = tuple(sorted((p.process.pid, p.process.start_ticks) for p in report.processes))
    status = report.verdict
    unverifiable = [f for f in report.findings if f.kind == "unverifiable"]
    message = unverifiable[0].hint if status == "unverifiable" and unverifiable else ""
    setup = fingerprint(observed_setup(report))
    return report, Run(status, findings, processes, setup, message), int(report.exit_code)


def _identity(finding: Finding) -> str:
    """A finding without its process: the same drift on a restarted server is the same."""
    return f"{finding.kind} {finding.subject}: {finding.expected} -> {finding.actual}"


def _document(event: Event, label: str, target: Target, now: float) -> dict[str, Any]:
    host = socket.gethostname()
    text = f"envguard on {host}: {label} ({target.describe()}): {event.summary}"
    if event.findings and event.kind != "drift_resolved":
        text += "\n" + "\n".join(f"- {f}" for f in event.findings[:20])
    return {
        "schema": sinks.EVENT_SCHEMA,
        "kind": event.kind,
        "severity": event.severity,
        "summary": event.summary,
        "text": text,
        "profile": label,
        "target": target.describe(),
        "host": host,
        "time": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
        "findings": list(event.findings),
    }


def _deliver(document: dict[str, Any], sinks_: Sinks, deadline: float) -> list[str]:
    problems = []
    if sinks_.alert_cmd is not None:
        problems.append(sinks.send_command(sinks_.alert_cmd, document, deadline))
    if sinks_.webhook is not None:
        problems.append(sinks.send_webhook(sinks_.webhook, document, deadline))
    return [p for p in problems if p]


def _alertmanager(
    url: str,
    run: Run,
    was_firing: list[str],
    label: str,
    target: Target,
    now: float,
    deadline: float,
) -> tuple[str | None, list[str]]:
    """Send what fires now and resolve what stopped; returns the failure (if any) and the
    names Alertmanager now knows as firing (unchanged on failure: retried next run)."""
    name = sinks.ALERTNAMES.get(run.status)
    findings = "\n".join(run.findings[:50])
    summary = f"{label} ({target.describe()}): {run.status}" + (
        f": {run.message}" if run.message else ""
    )
    firing = {} if name is None else {
        name: {"summary": summary, "findings": findings,
               "severity": "warning" if run.status == "unverifiable" else "critical"}
    }  # fmt: skip
    resolved = [n for n in was_firing if n not in firing]
    common = {"profile": label, "target": target.describe(), "host": socket.gethostname()}
    stamp = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
    problem = sinks.post_alertmanager(url, firing, resolved, common, stamp, deadline)
    return problem, (was_firing if problem else sorted(firing))


def _file_name(label: str, target: Target) -> str:
    return "envguard-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{label}-{target.describe()}")


def _metrics(run: Run, report: CheckReport | None, label: str, target: Target, now: float) -> str:
    base = [("profile", label), ("target", target.describe())]
    kinds: dict[str, int] = {}
    for finding in report.findings if report else ():
        kinds[finding.kind] = kinds.get(finding.kind, 0) + 1
    server = next((s for s in (report.launches if report else ()) if s.installed), None)
    version = server.installed.version if server and server.installed else ""
    profile_version = str(report.profile.profile.version) if report else ""
    return "".join(
        [
            metric("envguard_up", "gauge", "1 when the server was found.",
                   [(labels(base), 0 if run.status == "gone" else 1)]),
            metric("envguard_drift", "gauge", "1 when the server differs from its profile.",
                   [(labels(base), 1 if run.status == "drift" else 0)]),
            metric("envguard_unverifiable", "gauge", "1 when part of the setup cannot be verified.",
                   [(labels(base), 1 if run.status == "unverifiable" else 0)]),
            metric("envguard_findings", "gauge", "Findings of the last check, by kind.",
                   [(labels([*base, ("kind", k)]), n) for k, n in sorted(kinds.items())]),
            metric("envguard_last_run_timestamp_seconds", "gauge", "When the last watch run ended.",
                   [(labels(base), round(now, 3))]),
            metric("envguard_setup_info", "gauge", "The setup's fingerprint and versions.",
                   [(labels([*base, ("fingerprint", run.fingerprint or ""),
                             ("profile_version", profile_version),
                             ("server_version", version)]), 1)]),
        ]
    )  # fmt: skip
