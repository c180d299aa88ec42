"""envguard demo: check a stand-in server that passes, then one that drifted (no GPU needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import click

from envguard.errors import EnvguardError, ExitCode
from envguard.probes.target import Target


def _start_standin(environ: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "envguard.testing.standin", "--schedulers", "2"],
        env=environ,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    from envguard.testing.standin import wait_ready

    if not wait_ready(process.stdout):
        process.kill()
        raise EnvguardError(
            "the stand-in server did not start",
            hint="is the `setproctitle` package installed? pip install 'envguard[demo]'",
        )
    return process


@click.command("demo")
@click.option(
    "-p",
    "--profile",
    "profile_path",
    default="demo",
    show_default=True,
    help="The profile to demonstrate.",
)
def demo_command(profile_path: str) -> int:
    """Start a stand-in server with the profile's environment and check it (passes), then
    restart it the way the seed story's server was, tuning lost, and check again (drift)."""
    from envguard.checking import check
    from envguard.launching.environment import build_environment
    from envguard.profile.loader import load_profile
    from envguard.render.text import check_text

    profile = load_profile(profile_path).profile
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    tuned = build_environment(profile, base).environ
    # The seed story's restart: the NCCL variables were lost; here one also came back typed
    # as "16M", which NCCL reads as 16 bytes.
    drifted = {k: v for k, v in tuned.items() if not k.startswith("NCCL_")}
    drifted["NCCL_BUFFSIZE"] = "16M"
    codes = []
    for title, environ in (
        ("1. A server started with the profile's environment", tuned),
        ("2. The same server restarted with its NCCL tuning lost (the seed story)", drifted),
    ):
        server = _start_standin(environ)
        try:
            report = check(profile_path, Target(pid=server.pid))
        finally:
            server.terminate()
            server.wait()
        click.secho(f"{title}:", bold=True)
        click.echo(check_text(report) + "\n")
        codes.append(report.exit_code)
    if codes == [ExitCode.OK, ExitCode.DRIFT]:
        click.echo("The first check passed (exit 0), the second found the drift (exit 1).")
        return 0
    click.echo(f"unexpected exit codes {[int(c) for c in codes]}: expected [0, 1]", err=True)
    return int(ExitCode.DRIFT)
