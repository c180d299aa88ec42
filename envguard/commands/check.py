"""envguard check: verify a live server's process tree against a profile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envguard.commands.options import target_from, target_options
from envguard.errors import ExitCode
from envguard.evaluation.findings import Finding, Verdict, verdict
from envguard.probes.observe import ProcessObservation
from envguard.probes.target import Target
from envguard.profile.loader import LoadedProfile

if TYPE_CHECKING:  # flags machinery (argparse, catalogs) loads only for profiles with flags
    from envguard.probes.launch import LaunchObservation


@dataclass(frozen=True)
class CheckReport:
    """The result of one check: what was looked at, what was found, the verdict."""

    profile: LoadedProfile
    target: Target
    server_pids: tuple[int, ...]
    processes: tuple[ProcessObservation, ...]
    findings: tuple[Finding, ...]
    launches: tuple[LaunchObservation, ...] = ()  # when the profile has server flags

    @property
    def verdict(self) -> Verdict:
        return verdict(list(self.findings))

    @property
    def exit_code(self) -> ExitCode:
        return {"ok": ExitCode.OK, "drift": ExitCode.DRIFT, "unverifiable": ExitCode.UNVERIFIABLE}[
            self.verdict
        ]


def check(
    profile_path: str | Path,
    target: Target,
    *,
    every_match: bool = False,
    config_root: Path | None = None,
    read_launch: bool = False,
) -> CheckReport:
    """Load the profile, read the target's process tree, and evaluate it.

    Raises EnvguardError (exit 3) when it cannot evaluate: bad profile, no such process,
    permission denied. `read_launch` parses the launcher's flags even when the profile has
    none (bench fingerprints them).
    """
    from envguard.evaluation.check import evaluate
    from envguard.probes.observe import observe
    from envguard.probes.target import resolve
    from envguard.profile.loader import load_profile

    loaded = load_profile(profile_path)
    server = loaded.profile.server
    checks_flags = server.kind != "generic" and bool(server.flags or server.forbidden_flags)
    pids = resolve(target, every_match=every_match)
    processes: list[ProcessObservation] = []
    findings: list[Finding] = []
    launches: list[LaunchObservation] = []
    for pid in pids:
        observation = observe(pid, config_root=config_root)
        processes += observation.processes
        findings += evaluate(loaded.profile, observation)
        if checks_flags or read_launch:
            from envguard.probes.launch import observe_launch

            launcher = observation.processes[0].process
            launch = observe_launch(
                launcher, version=server.version, config_root=config_root, server_info=checks_flags
            )
            launches.append(launch)
            if checks_flags:
                from envguard.evaluation.flags import evaluate_flags

                findings += evaluate_flags(server, launch, launcher.role)
    return CheckReport(
        loaded, target, tuple(pids), tuple(processes), tuple(findings), tuple(launches)
    )


@click.command("check")
@click.option(
    "-p",
    "--profile",
    "profile_path",
    required=True,
    metavar="FILE",
    help="The profile (TOML) the server must match.",
)
@target_options
@click.option("--all", "every_match", is_flag=True, help="Check every server --match finds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict line.")
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
    config_root: Path | None,
) -> None:
    """Verify a live server against a profile.

    Reads the environment of the server and of every worker process, the NCCL config
    files they see, and reports every difference. Exit code: 0 ok, 1 drift,
    3 could not evaluate (see the README's exit-code table).
    """
    report = check(
        profile_path,
        target_from(pid, port, pattern),
        every_match=every_match,
        config_root=config_root,
    )
    if as_json:
        from envguard.render.json import check_json

        click.echo(check_json(report))
    else:
        from envguard.render.text import check_text

        click.echo(check_text(report, quiet=quiet), color=_color())
    click.get_current_context().exit(int(report.exit_code))


def _color() -> bool | None:
    import os

    # https://no-color.org: any non-empty NO_COLOR turns colour off; otherwise click
    # keeps colour only on a terminal.
    return False if os.environ.get("NO_COLOR") else None
