"""The `envguard` command: one click group, one error handler, one module per verb."""

from __future__ import annotations

from typing import Any

import click

from envguard import __version__
from envguard.commands.args import args_command
from envguard.commands.check import check_command
from envguard.commands.demo import demo_command
from envguard.commands.launch import launch_command, stop_command
from envguard.commands.profile import profile_group
from envguard.errors import EnvguardError


class EnvguardGroup(click.Group):
    """Turns every EnvguardError into one line per problem, a hint, and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EnvguardError as exc:
            for line in exc.message.splitlines():
                click.echo(f"envguard: {line}", err=True)
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            ctx.exit(int(exc.exit_code))


@click.group(
    "envguard", cls=EnvguardGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="envguard")
def cli() -> None:
    """Keep GPU inference servers on the environment they were tuned for.

    Exit codes: 0 ok, 1 drift (or a refused benchmark), 2 usage error,
    3 could not evaluate (bad profile, no such process, permission, unreadable).
    """


cli.add_command(check_command)
cli.add_command(profile_group)
cli.add_command(demo_command)
cli.add_command(args_command)
cli.add_command(launch_command)
cli.add_command(stop_command)

main = cli
