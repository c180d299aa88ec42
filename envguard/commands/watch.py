"""envguard watch: one cron-sized run; alert only when something changed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from envguard.commands.options import Seconds, profile_option, target_from, target_options
from envguard.errors import ExitCode
from envguard.watching.run import Sinks, watch


@click.command("watch")
@profile_option
@target_options
@click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where runs keep what they saw (default $XDG_STATE_HOME/envguard/watch).",
)
@click.option("--alert-cmd", metavar="CMD", help="Run CMD (a shell line) with the event on stdin.")
@click.option("--webhook", metavar="URL", help="POST the event as JSON (with a `text` field).")
@click.option(
    "--alertmanager", metavar="URL",
    help="Post to Alertmanager's v2 API (routing, grouping, silences without Prometheus).",
)  # fmt: skip
@click.option(
    "--textfile-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write Prometheus metrics here (node_exporter's textfile collector).",
)
@click.option(
    "--timeout", type=Seconds(), default=20.0, show_default=True,
    help="The whole run ends within this, whatever a sink does.",
)  # fmt: skip
@click.option(
    "--remind-every", type=Seconds(), metavar="SECONDS",
    help="Repeat an unresolved alert this often (default: never).",
)  # fmt: skip
@click.option("--strict-sinks", is_flag=True, help="Exit 3 when an alert could not be delivered.")
@click.option(
    "--pause-until", type=click.DateTime(), metavar="TIME",
    help="Planned maintenance: send nothing until TIME (local, e.g. 2026-12-01T08:00); the "
    "first run after it compares with what was seen before.",
)  # fmt: skip
def watch_command(
    profile_path: str,
    pid: int | None,
    port: int | None,
    pattern: str | None,
    state_dir: Path | None,
    alert_cmd: str | None,
    webhook: str | None,
    alertmanager: str | None,
    textfile_dir: Path | None,
    timeout: float,
    remind_every: float | None,
    strict_sinks: bool,
    pause_until: datetime | None,
) -> int:
    """Check the server, compare with the last run, and alert only on a change: drift
    appeared, changed or resolved, server gone or back, unverifiable, restarted. An alert
    that could not be delivered is retried on the next run.

    \b
    * * * * * envguard watch -p kimi-k2.5-int4-tp8 --port 8000 --webhook https://chat/hook
    """
    result = watch(
        profile_path,
        target_from(pid, port, pattern),
        Sinks(alert_cmd, webhook, textfile_dir, alertmanager),
        state_dir=state_dir,
        timeout=timeout,
        remind_every=remind_every,
        pause_until=pause_until.timestamp() if pause_until else None,
    )
    if pause_until is not None:
        click.echo(f"paused until {pause_until.isoformat(timespec='minutes')}: no alerts")
    for event in result.events:
        click.echo(f"{event.severity}: {event.summary}")
    for failure in result.failures:
        click.echo(f"envguard: could not deliver an alert: {failure} (retried next run)", err=True)
    if strict_sinks and result.failures:
        return int(ExitCode.UNVERIFIABLE)
    return result.exit_code
