"""Before starting: build the environment, and find every reason the server would not run
the way its profile says (flags, values that cannot be met, NCCL config files, plugins)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

from envguard.evaluation.findings import Finding
from envguard.launching.environment import BuiltEnvironment, build_environment, keep_for_clean_env
from envguard.profile.schema import Profile

if TYPE_CHECKING:  # argparse and the catalogs load only when the profile has flags
    from envguard.probes.launch_line import LaunchObservation

ROLE = "command"  # findings about the command to be started, not a live process


class Preflight(NamedTuple):
    command: tuple[str, ...]
    built: BuiltEnvironment
    findings: tuple[Finding, ...]  # each one is a reason to refuse (unless --force)
    launch: LaunchObservation | None
    host: str | None
    port: int | None


def preflight(
    profile: Profile,
    command: list[str],
    base: dict[str, str],
    *,
    clean_env: bool = False,
    cwd: str | None = None,
) -> Preflight:
    from envguard.evaluation.check import evaluate
    from envguard.probes.ncclconf import config_files
    from envguard.probes.observe import (
        Observation,
        ProcessObservation,
        effective_settings,
        find_env_plugin,
    )
    from envguard.probes.process import ProcessSnapshot

    cwd = cwd or str(Path.cwd())
    if clean_env:
        base = keep_for_clean_env(base)
    root = Path("/")
    # The config files NCCL will read depend on the built environment (NCCL_CONF_FILE may
    # be dropped), and the built environment on them (a forbidden line gets neutralised).
    first = build_environment(profile, base)
    files = tuple(config_files(root, os.getuid(), first.environ, cwd))
    from_files: dict[str, str] = {}
    for config in files:
        for name, value in config.values.items():
            from_files.setdefault(name, value)
    built = build_environment(profile, base, from_files)
    findings = [
        Finding(
            "missing",
            name,
            None,
            ROLE,
            None,
            None,
            "profile",
            f"the profile cannot be met: {why}; give {name} an exact value or one_of",
        )
        for name, why in built.unmet
    ]
    # The server-to-be, as check will see it once it runs.
    snap = ProcessSnapshot(
        pid=0,
        ppid=os.getpid(),
        uid=os.getuid(),
        start_ticks=0,
        role=ROLE,
        cmdline=tuple(command),
        environ=built.environ,
        environ_state="ok",
        cwd=cwd,
    )
    effective = effective_settings(built.environ, files)
    proc = ProcessObservation(snap, effective, files, find_env_plugin(snap, root, effective))
    findings += [
        dataclasses.replace(f, pid=None)
        for f in evaluate(profile, Observation(0, (proc,), ()))
        if f.subject not in {name for name, _ in built.unmet}
    ]
    launch, host, port = _flags(profile, command, built.environ, cwd)
    if launch is not None:
        from envguard.evaluation.flags import evaluate_flags

        findings += evaluate_flags(profile.server, launch, ROLE)
    return Preflight(tuple(command), built, tuple(findings), launch, host, port)


def _flags(
    profile: Profile, command: list[str], environ: dict[str, str], cwd: str
) -> tuple[LaunchObservation | None, str | None, int | None]:
    """Parse the command's flags (for the profile's check, and to learn host and port)."""
    from urllib.parse import urlsplit

    server = profile.server
    host: str | None = None
    port: int | None = None
    if server.health_url:
        parts = urlsplit(server.health_url)
        host, port = parts.hostname, parts.port
    if server.kind == "generic":
        return None, host, port
    from envguard.flags.catalog import choose_version, load
    from envguard.flags.preprocess import parse
    from envguard.flags.recognise import recognise
    from envguard.probes.server_version import installed_version

    launch = recognise(command)
    from envguard.probes.launch_line import LaunchObservation

    if launch is None:
        if server.flags or server.forbidden_flags:
            return LaunchObservation(None, None), host, port
        return None, host, port
    installed = installed_version(launch.server, None, Path("/"), launch.interpreter, cwd, environ)
    chosen, note = choose_version(
        launch.server, server.version or (installed.version if installed else None)
    )
    catalog = load(launch.server, chosen)

    def read(path: str) -> str:
        full = PurePosixPath(path) if path.startswith("/") else PurePosixPath(cwd) / path
        return Path(str(full)).read_text()

    parsed = parse(catalog, list(launch.args), read, subcommand=launch.subcommand)
    if parsed.ok:
        given_port = parsed.values.get("port")
        given_host = parsed.values.get("host")
        port = given_port.value if given_port and isinstance(given_port.value, int) else port
        host = given_host.value if given_host and isinstance(given_host.value, str) else host
    observed = LaunchObservation(None, launch, catalog, installed, note, parsed)
    return (
        (observed if server.flags or server.forbidden_flags or not parsed.ok else None),
        host,
        port,
    )
