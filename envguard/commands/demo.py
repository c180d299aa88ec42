"""envguard demo: the story envguard exists for, on a stand-in server (no GPU needed)."""

from __future__ import annotations

import click

from envguard.demo import run_demo


@click.command("demo")
@click.option(
    "-p",
    "--profile",
    "profile_path",
    default="demo",
    show_default=True,
    help="The profile to demonstrate (a name or a path).",
)
def demo_command(profile_path: str) -> int:
    """A tuned server passes; a restart that lost its NCCL tuning is caught; a benchmark of
    it is neither recorded nor compared with the tuned one; envguard launch fixes it.

    Runs on any machine, in a temporary directory (a stand-in plays the GPU server)."""
    return run_demo(
        profile_path,
        say=lambda line: click.secho(line, bold=line[:2].rstrip(".").isdigit()),
        show=click.echo,
    )
