"""The `envguard` command: one click group, one error handler, one module per verb.

Subcommands are imported only when invoked (`envguard check` from cron does not pay for
launch, args or the flag catalogs)."""

from __future__ import annotations

import importlib
import os
from typing import Any

import click

from envguard import __version__
from envguard.commands.failure import report_failure
from envguard.errors import JSON_OUTPUT, EnvguardError

COMMANDS = {
    "check": "envguard.commands.check:check_command",
    "launch": "envguard.commands.launch:launch_command",
    "stop": "envguard.commands.stop:stop_command",
    "args": "envguard.commands.args:args_command",
    "profile": "envguard.commands.profile:profile_group",
    "demo": "envguard.commands.demo:demo_command",
    "bench": "envguard.commands.bench:bench_command",
    "ledger": "envguard.commands.ledger:ledger_group",
    "watch": "envguard.commands.watch:watch_command",
    "capture": "envguard.commands.capture:capture_command",
}


class EnvguardGroup(click.Group):
    """Loads subcommands lazily; turns every EnvguardError into one line per problem, a
    hint, and its exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, name = target.partition(":")
        command = getattr(importlib.import_module(module), name)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """The one place envguard exits: a command returns its exit code or raises. With
        --json, an error is one JSON document on stdout too (and the lines on stderr)."""
        # https://no-color.org, decided once for every command: any non-empty NO_COLOR
        # turns colour off; otherwise click keeps colour only on a terminal.
        ctx.color = False if os.environ.get("NO_COLOR") else None
        try:
            code = super().invoke(ctx)
        except KeyboardInterrupt:
            ctx.exit(130)  # Ctrl-C: quiet, as a shell reports it (click would say "Aborted!")
        except EnvguardError as exc:
            ctx.exit(
                report_failure(
                    exc,
                    as_json=bool(ctx.meta.get(JSON_OUTPUT)),
                    echo=lambda text, err: click.echo(text, err=err),
                )
            )
        if isinstance(code, int) and code:
            ctx.exit(code)
        return code


@click.group(
    "envguard", cls=EnvguardGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="envguard")
def cli() -> None:
    """Keep GPU inference servers on the environment they were tuned for.

    Exit codes: 0 ok, 1 drift (or a refused launch), 2 usage error,
    3 could not evaluate (bad profile, no such process, permission, unreadable).
    """
