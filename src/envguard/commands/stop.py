"""envguard stop: end a launched server and its workers."""

from __future__ import annotations

from pathlib import Path

import click

from envguard.errors import EnvguardError


@click.command("stop")
@click.option("--pid-file", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds between SIGTERM and SIGKILL.",
)
def stop_command(pid_file: Path, grace: float) -> None:
    """Stop a launched server: SIGTERM to its process group, SIGKILL after --grace seconds."""
    from envguard.launching import pidfile
    from envguard.launching.supervise import stop_group

    pid = pidfile.read_pid(pid_file)
    if pid is None:
        raise EnvguardError(
            f"{pid_file}: no pid file (or no pid in it)",
            hint="give the --pid-file the server was launched with",
        )
    if not pidfile.alive(pid):
        pid_file.unlink(missing_ok=True)
        click.echo(f"pid {pid} is not running; removed the stale {pid_file}")
        return
    outcome = stop_group(pid, grace)
    pid_file.unlink(missing_ok=True)
    click.echo(f"pid {pid}: {outcome}")
