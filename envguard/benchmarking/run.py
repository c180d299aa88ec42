"""The bench engine: check, run the benchmark, check again; record the result with the
setup's fingerprint only when nothing changed - otherwise refuse and say why.

Library first: `bench()` takes plain arguments and returns envguard's exit code; the click
command in envguard.commands.bench only parses options."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from envguard.errors import EnvguardError, ExitCode, Refused
from envguard.evaluation.record import Record
from envguard.knowledge.redaction import redact_argv, redact_value
from envguard.probes.target import Target

if TYPE_CHECKING:
    from envguard.benchmarking.throughput import Api
    from envguard.evaluation.report import CheckReport

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Throughput:
    url: str
    api: Api = "completions"
    max_tokens: int = 500
    runs: int = 5
    warmup: int = 1
    timeout: float = 600.0


def _processes(report: CheckReport) -> dict[int, tuple[int, str]]:
    return {p.process.pid: (p.process.start_ticks, p.process.role) for p in report.processes}


def changes(before: CheckReport, after: CheckReport, fingerprint_before: str) -> list[str]:
    """Why a result taken between these two checks is not a result of the first setup."""
    from envguard.fingerprint import fingerprint, observed_setup

    reasons = []
    old, new = _processes(before), _processes(after)
    gone = [f"{old[pid][1]} {pid}" for pid in old if pid not in new or new[pid][0] != old[pid][0]]
    came = [f"{new[pid][1]} {pid}" for pid in new if pid not in old or new[pid][0] != old[pid][0]]
    if gone or came:
        reasons.append(
            "the server's processes changed during the run (restarted?): "
            + "; ".join(
                filter(
                    None,
                    [
                        f"gone: {', '.join(gone)}" if gone else "",
                        f"new: {', '.join(came)}" if came else "",
                    ],
                )
            )
        )
    setup_after = observed_setup(after)
    if fingerprint(setup_after) != fingerprint_before:
        from envguard.evaluation.results import setup_differences

        changed = [d.name for d in setup_differences(observed_setup(before), setup_after, [])]
        reasons.append(f"the setup changed during the run: {', '.join(changed) or 'fingerprint'}")
    if after.verdict != "ok":
        reasons.append(
            f"after the run the check says {after.verdict} ({len(after.findings)} findings)"
        )
    return reasons


def _run_command(command: list[str], stream: TextIO) -> tuple[int, str]:
    """Run the benchmark, streaming its stdout to `stream` while keeping a copy."""
    import subprocess

    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, errors="replace")
    except OSError as exc:
        raise EnvguardError(
            f"{command[0]}: cannot run the benchmark: {exc.strerror}",
            hint="check the command after --",
        ) from None
    assert child.stdout is not None
    kept = []
    for line in child.stdout:
        stream.write(line)
        stream.flush()
        kept.append(line)
    return child.wait(), "".join(kept)


def bench(
    profile_path: str,
    target: Target,
    command: list[str],
    *,
    throughput: Throughput | None,
    metric_options: tuple[str, ...],
    ledger_path: Path | None,
    echo: Echo,
    stream: TextIO | None = None,
    recorded: Callable[[int, Record], None] | None = None,
) -> int:
    """Check, run, check again, record. Returns envguard's exit code. The benchmark's own
    output goes to `stream` (stdout by default); `recorded` hears of the stored record."""
    stream = stream or sys.stdout
    import socket

    from envguard.benchmarking.metrics import extract, parse_metric_options, unusable
    from envguard.checking import check
    from envguard.fingerprint import fingerprint, observed_setup
    from envguard.render.text import check_text

    patterns = parse_metric_options(metric_options)
    before = check(profile_path, target, read_launch=True)
    if before.verdict != "ok":
        for line in check_text(before).splitlines():
            echo(line)
        raise Refused(
            f"the server does not match {before.profile.label}: the benchmark was not run",
            hint="fix the findings above (or relaunch with envguard launch), then bench again",
        )
    setup = observed_setup(before)
    setup_fingerprint = fingerprint(setup)
    echo(
        f"envguard bench: {before.profile.label} ok on {len(before.processes)} processes, "
        f"fingerprint {setup_fingerprint[:19]}"
    )
    reasons: list[str] = []
    if throughput is not None:
        from envguard.benchmarking.throughput import measure

        recorded_command = [
            "envguard-throughput",
            redact_value(throughput.url),
            f"--api={throughput.api}",
            f"--max-tokens={throughput.max_tokens}",
            f"--runs={throughput.runs}",
            f"--warmup={throughput.warmup}",
        ]
        lines: list[str] = []

        def both(line: str) -> None:
            stream.write(line + "\n")
            stream.flush()
            lines.append(line)

        try:
            metrics = measure(
                throughput.url,
                api=throughput.api,
                max_tokens=throughput.max_tokens,
                runs=throughput.runs,
                warmup=throughput.warmup,
                timeout=throughput.timeout,
                echo=both,
            )
        except EnvguardError as exc:
            reasons.append(f"the throughput probe failed: {exc.message}")
            metrics = {}
        output = "\n".join(lines)
    else:
        recorded_command = redact_argv(command)
        code, output = _run_command(command, stream)
        if code != 0:
            reasons.append(f"the benchmark command exited with status {code}")
        metrics = extract(output, patterns)
    try:
        after = check(profile_path, target, read_launch=True)
    except EnvguardError as exc:
        reasons.append(f"the server could not be checked after the run: {exc.message}")
    else:
        reasons += changes(before, after, setup_fingerprint)
    metrics, not_numbers = unusable(metrics)
    reasons += not_numbers
    if not metrics and not reasons:
        reasons.append("no metrics: print a JSON object last, or give --metric NAME=REGEX")
    record = Record(
        id=None,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        profile_name=before.profile.profile.name,
        profile_version=before.profile.profile.version,
        profile_digest=before.profile.digest,
        fingerprint=setup_fingerprint,
        verdict="refused" if reasons else "valid",
        reasons=tuple(reasons),
        command=tuple(recorded_command),
        metrics=metrics,
        setup=setup,
    )
    record_id = _store(record, ledger_path, output, echo)
    if recorded is not None:
        recorded(record_id, record)
    if reasons:
        echo(f"refused: recorded #{record_id} as refused, not as a result:")
        for reason in reasons:
            echo(f"  - {reason}")
        return int(ExitCode.DRIFT)
    shown = ", ".join(f"{k}={v:g}" for k, v in list(metrics.items())[:4])
    echo(f"recorded #{record_id}: {shown} (fingerprint {setup_fingerprint[:19]})")
    return int(ExitCode.OK)


def _store(record: Record, ledger_path: Path | None, output: str, echo: Echo) -> int:
    """Add the record; if the ledger cannot take it, keep everything in a file instead."""

    from envguard.ledger.store import Ledger, LedgerError

    try:
        ledger = Ledger.open(ledger_path)
        try:
            return ledger.add(record)
        finally:
            ledger.close()
    except LedgerError as exc:
        kept = _keep(dataclasses.asdict(record) | {"output": output})
        raise EnvguardError(
            f"{exc.message}; the result and the benchmark's output are saved in {kept}",
            hint=exc.hint,
        ) from None


def _keep(document: dict[str, Any]) -> Path:
    import tempfile

    name = f"envguard-bench-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{os.getpid()}.json"
    for directory in (Path.cwd(), Path(tempfile.gettempdir())):
        try:
            path = directory / name
            path.write_text(json.dumps(document, indent=2) + "\n")
            return path
        except OSError:
            continue
    raise EnvguardError(
        "could not save the result anywhere (working directory and temp dir)",
        hint="the output above is all that is left",
    )
