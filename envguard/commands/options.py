"""Options several commands share: how to name the server (--pid | --port | --match)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from envguard.probes.target import Target

F = TypeVar("F", bound=Callable[..., object])


def target_options(function: F) -> F:
    """--pid, --port and --match, exactly one of which the command must get."""
    for option in reversed(
        [
            click.option("--pid", type=int, help="The server's top process."),
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
