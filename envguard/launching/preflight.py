"""Before starting: build the environment, and find every reason the server would not run
the way its profile says (flags, values that cannot be met, NCCL config files, plugins)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from envguard.evaluation.findings import Finding
from envguard.knowledge.gpu import VISIBLE_DEVICES
from envguard.launching.environment import BuiltEnvironment, build_environment, keep_for_clean_env
from envguard.probes.process import ProcessSnapshot
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
    gpu_note: str | None = None  # what the GPU part looked at, or that it was skipped


def preflight(
    profile: Profile,
    command: list[str],
    base: dict[str, str],
    *,
    clean_env: bool = False,
    cwd: str | None = None,
    skip_gpu: bool = False,
) -> Preflight:
    from envguard.evaluation.check import evaluate
    from envguard.probes.ncclconf import config_files
    from envguard.probes.observe import Observation, observe_process

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
            kind="missing",
            subject=name,
            pid=None,
            role=ROLE,
            expected=None,
            actual=None,
            source="profile",
            hint=f"the profile cannot be met: {why}; give {name} an exact value or one_of",
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
    proc = observe_process(snap, root, files)
    findings += [
        f._replace(pid=None)
        for f in evaluate(profile, Observation(0, (proc,), ()))
        if f.subject not in {name for name, _ in built.unmet}
    ]
    launch, host, port = _flags(profile, command, built.environ, cwd)
    if launch is not None:
        from envguard.evaluation.flags import evaluate_flags

        findings += evaluate_flags(profile.server, launch, ROLE)
    gpu_note = None
    if not profile.gpu.is_empty():
        if skip_gpu:
            from envguard.render.text import GPUS_SKIPPED

            gpu_note = GPUS_SKIPPED
        else:
            gpu_findings, gpu_note = _gpus(profile, built.environ)
            findings += gpu_findings
    return Preflight(tuple(command), built, tuple(findings), launch, host, port, gpu_note)


def _gpus(profile: Profile, environ: dict[str, str]) -> tuple[list[Finding], str]:
    """The GPU part of the check, on the GPUs the server will see (its CUDA_VISIBLE_DEVICES
    as built). No NVML: GpuUnavailable (exit 3) - a start on unverified GPUs is never
    silent; --skip-gpu says so."""
    from envguard.evaluation.gpu import evaluate_gpus
    from envguard.probes.gpu import observe_gpus, release_nvml
    from envguard.render.text import gpu_summary

    try:
        seen = observe_gpus(environ.get(VISIBLE_DEVICES))
    finally:
        release_nvml()  # launch lives on beside its server: no NVML handles kept open
    return evaluate_gpus(profile.gpu, seen), gpu_summary(seen)


def _flags(
    profile: Profile, command: list[str], environ: dict[str, str], cwd: str
) -> tuple[LaunchObservation | None, str | None, int | None]:
    """Parse the command's flags (for the profile's check, and to learn host and port)."""

    server = profile.server
    host: str | None = None
    port: int | None = None
    if server.health_url:
        parts = urlsplit(server.health_url)
        host, port = parts.hostname, parts.port
    if server.kind == "generic":
        return None, host, port
    from envguard.probes.launch_line import listen_address, read_launch_line

    observed = read_launch_line(
        command, pid=None, root=Path("/"), cwd=cwd, environ=environ, version=server.version
    )
    checks_flags = bool(server.flags or server.forbidden_flags)
    if observed.launch is None:
        return (observed if checks_flags else None), host, port
    given_host, given_port = listen_address(observed.parsed)
    host, port = given_host or host, given_port or port
    parsed_ok = observed.parsed is not None and observed.parsed.ok
    return (observed if checks_flags or not parsed_ok else None), host, port
