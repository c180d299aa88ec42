"""Options several commands share: how to name the server (--pid | --port | --match), and
the types that keep values sane (finite seconds, 64-bit ids)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from envguard.errors import JSON_OUTPUT

if TYPE_CHECKING:
    from envguard.probes.target import Target

F = TypeVar("F", bound=Callable[..., object])

# Commands that take a server or benchmark command: the first argument that is not one of
# envguard's options starts that command, with or without `--` (as nohup, timeout and
# docker run read theirs): `launch -p P python3 -m http.server --force` gives --force to
# the server, not to envguard.
SERVER_COMMAND: dict[str, Any] = {"ignore_unknown_options": True, "allow_interspersed_args": False}

INT64_MAX = 2**63 - 1  # SQLite's INTEGER; a larger id or limit is a usage error, not a crash


class Seconds(click.FloatRange):
    """A non-negative, finite number of seconds (`nan` would never time out)."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return seconds


def grace_option(help_text: str) -> Callable[[F], F]:
    """--grace: seconds between SIGTERM and SIGKILL, the same for stop and a foreground
    launch."""
    return click.option("--grace", type=Seconds(), default=30.0, show_default=True, help=help_text)


def count(minimum: int = 1) -> click.IntRange:
    """A positive integer that fits SQLite's 64-bit INTEGER."""
    return click.IntRange(minimum, INT64_MAX)


profile_option = click.option(
    "-p",
    "--profile",
    "profile_path",
    required=True,
    metavar="PROFILE",
    help="The profile: a name (`envguard profile list`) or a path to a .toml file.",
)


skip_gpu_option = click.option(
    "--skip-gpu",
    is_flag=True,
    help="Do not check the profile's [gpu] section (where NVML cannot load); the output "
    "says it was skipped.",
)


def target_options(function: F) -> F:
    """--pid, --port and --match, exactly one of which the command must get."""
    for option in reversed(
        [
            click.option("--pid", type=click.IntRange(1, 2**22), help="The server's top process."),
            click.option(
                "--port", type=click.IntRange(1, 65535), help="Find the server by its TCP port."
            ),
            click.option(
                "--match", "pattern", metavar="REGEX", help="Find the server by command line."
            ),
        ]
    ):
        function = option(function)
    return function


def target_from(pid: int | None, port: int | None, pattern: str | None) -> Target:
    from envguard.probes.target import Target  # not for ledger, profile, args or stop

    given = [
        name
        for name, value in (("--pid", pid), ("--port", port), ("--match", pattern))
        if value is not None
    ]
    if len(given) != 1:
        raise click.UsageError(
            "give exactly one of --pid, --port or --match"
            + (f" (got {', '.join(given)})" if given else "")
        )
    return Target(pid, port, pattern)


def wants_json(as_json: bool) -> bool:
    """Note that this command answers in JSON, errors included; returns `as_json`."""
    click.get_current_context().meta[JSON_OUTPUT] = as_json
    return as_json
