"""envguard stop: end a launched server and its workers."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envguard.commands.options import grace_option, wants_json


@click.command("stop")
@click.option("--pid-file", type=click.Path(dir_okay=False, path_type=Path), required=True)
@grace_option("Seconds between SIGTERM and SIGKILL.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def stop_command(pid_file: Path, grace: float, as_json: bool) -> None:
    """Stop a launched server: SIGTERM to its process group, SIGKILL after --grace seconds.

    Only the process the pid file was written for is signalled (its start time is in the
    file); a server that is not running is success, as with `systemctl stop`."""
    from envguard.launching.stop import stop

    wants_json(as_json)
    stopped = stop(pid_file, grace)
    if as_json:
        click.echo(json.dumps({"pid": stopped.pid, "outcome": stopped.outcome, "exit_code": 0}))
        return
    click.echo(f"pid {stopped.pid}: {stopped.outcome}" if stopped.pid else stopped.outcome)
