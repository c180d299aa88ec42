"""envguard check: verify a live server's process tree against a profile."""

from __future__ import annotations

from pathlib import Path

import click

from envguard.commands.check_argv import early_gpu_reading, run_check
from envguard.commands.options import (
    profile_option,
    skip_gpu_option,
    target_from,
    target_options,
    wants_json,
)


@click.command("check")
@profile_option
@target_options
@click.option("--all", "every_match", is_flag=True, help="Check every server --match finds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict line.")
@skip_gpu_option
@click.option(
    "--nccl-log",
    metavar="FILE",
    help="The server's log, written with NCCL_DEBUG=INFO: hold what NCCL says it read "
    "against the profile and against what envguard read.",
)
@click.option(
    "--config-root",
    type=click.Path(file_okay=False, path_type=Path),
    hidden=True,
    help="Read NCCL config files under this directory instead of /proc/PID/root.",
)
def check_command(
    profile_path: str,
    pid: int | None,
    port: int | None,
    pattern: str | None,
    every_match: bool,
    as_json: bool,
    quiet: bool,
    skip_gpu: bool,
    nccl_log: str | None,
    config_root: Path | None,
) -> int:
    """Verify a live server against a profile.

    Reads the environment of the server and of every worker process, the NCCL config
    files they see, and reports every difference. Exit code: 0 ok, 1 drift,
    3 could not evaluate (see the README's exit-code table).
    """
    wants_json(as_json)
    return run_check(
        profile_path,
        target_from(pid, port, pattern),
        every_match=every_match,
        as_json=as_json,
        quiet=quiet,
        skip_gpu=skip_gpu,
        nccl_log=nccl_log,
        config_root=config_root,
        echo=lambda text, err: click.echo(text, err=err),
        early=None if skip_gpu else early_gpu_reading(profile_path),
    )
