"""envguard launch: the replacement for `nohup ... &` (the work is in envguard.launching)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from envguard.commands.options import (
    SERVER_COMMAND,
    Seconds,
    grace_option,
    profile_option,
    skip_gpu_option,
    wants_json,
)
from envguard.launching.run import DEFAULT_TIMEOUT, LaunchOptions


@click.command("launch", context_settings=SERVER_COMMAND)
@profile_option
@click.option(
    "--detach", is_flag=True, help="Run in the background: own session, log file, pid file."
)
@click.option(
    "--log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Log file (detached; default envguard-NAME.log).",
)
@click.option(
    "--pid-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Pid file (default envguard-NAME.pid when detached); the manifest goes beside it.",
)
@click.option(
    "--health-url",
    help="Poll until it answers 200 (default: [server] health_url, or "
    "/health on the command's --port).",
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds to wait for health.",
)
@click.option(
    "--clean-env",
    is_flag=True,
    help="Start from an allowlist (PATH, HOME, LANG, ...), "
    "like a systemd service, instead of this shell's environment.",
)
@grace_option("Foreground: seconds between a forwarded SIGTERM (or Ctrl-C) and SIGKILL.")
@click.option("--force", is_flag=True, help="Start even when the command contradicts the profile.")
@skip_gpu_option
@click.option(
    "--nccl-log",
    is_flag=True,
    help="With --detach: the check after health also holds NCCL's own lines in the "
    "server's log (NCCL_DEBUG=INFO) against the profile.",
)
@click.option("--print-systemd", is_flag=True, help="Print an equivalent systemd unit and exit.")
@click.option(
    "--json", "as_json", is_flag=True,
    help="Print one JSON document at the end: the exit code and the manifest (a foreground "
    "server's own output goes to stderr).",
)  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def launch_command(
    profile_path: str,
    detach: bool,
    log: Path | None,
    pid_file: Path | None,
    health_url: str | None,
    timeout: float,
    clean_env: bool,
    grace: float,
    force: bool,
    skip_gpu: bool,
    nccl_log: bool,
    print_systemd: bool,
    as_json: bool,
    command: tuple[str, ...],
) -> int:
    """Start a server with its profile's environment - the replacement for `nohup ... &`.

    Injects the profile's values (and SPT_NOENV=1 so workers stay verifiable), refuses a
    command whose flags contradict the profile, waits for health, checks the live process
    tree and writes a launch manifest beside the pid file.

    \b
    envguard launch -p profiles/kimi-k2.5-int4-tp8.toml --detach -- \\
        python3 -m sglang.launch_server --model-path /models/kimi-k2.5-int4 --tp 8 ...
    """
    from envguard.launching.run import launch

    def echo(line: str) -> None:
        # Progress and findings go to stderr. A reader that went away (a closed pipe) must
        # not stop a launch half-way: the server would be left without its manifest.
        with contextlib.suppress(OSError):
            click.echo(line, err=True)

    if print_systemd:
        from envguard.launching.systemd import print_systemd as systemd_unit

        click.echo(systemd_unit(profile_path, list(command), force, echo), nl=False)
        return 0
    wants_json(as_json)
    if nccl_log and not detach:
        raise click.UsageError("--nccl-log reads the server's log: give --detach (and --log)")
    options = LaunchOptions(
        detach=detach,
        log=log,
        pid_file=pid_file,
        health_url=health_url,
        timeout=timeout,
        clean_env=clean_env,
        force=force,
        grace=grace,
        server_stdout_to_stderr=as_json,
        skip_gpu=skip_gpu,
        nccl_log=nccl_log,
    )
    code = launch(profile_path, list(command), options, echo)
    if as_json:
        click.echo(json.dumps(launch_document(code, pid_file, detach, profile_path), indent=2))
    return code


def launch_document(
    code: int, pid_file: Path | None, detach: bool, profile: str
) -> dict[str, object]:
    """The exit code, and the manifest the launch wrote (when it had a pid file)."""
    from envguard.launching.manifest import manifest_path
    from envguard.profile.loader import load_profile

    if pid_file is None and detach:
        pid_file = Path(f"envguard-{load_profile(profile).profile.name}.pid")
    manifest = None
    if pid_file is not None:
        with contextlib.suppress(OSError, ValueError):
            manifest = json.loads(manifest_path(pid_file).read_text())
    return {
        "exit_code": code,
        "pid_file": str(pid_file) if pid_file else None,
        "manifest": manifest,
    }
