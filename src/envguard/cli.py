"""The `envguard` command: one click group, one error handler, one module per verb."""

from __future__ import annotations

import sys

import click

from envguard import __version__
from envguard.commands.check import check_command
from envguard.commands.profile import profile_group
from envguard.errors import EnvguardError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envguard")
def cli() -> None:
    """Keep GPU inference servers on the environment they were tuned for."""


cli.add_command(check_command)
cli.add_command(profile_group)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every EnvguardError becomes its message, a hint, and its exit code."""
    try:
        cli.main(args=argv, prog_name="envguard", standalone_mode=False)
    except EnvguardError as exc:
        for line in exc.message.splitlines():
            click.echo(f"envguard: {line}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    sys.exit(0)
