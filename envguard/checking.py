"""The check engine: load the profile, read the target's process tree, evaluate it.

Library first: `check()` takes plain arguments and returns a CheckReport; `envguard check`,
`launch` (after health), `bench` (before and after the run) all call it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from envguard.evaluation.findings import Finding
from envguard.evaluation.report import CheckReport
from envguard.probes.observe import ProcessObservation
from envguard.probes.process import children_map
from envguard.probes.target import Target, resolve

if TYPE_CHECKING:
    from envguard.probes.launch_line import LaunchObservation


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
    from envguard.profile.loader import load_profile

    loaded = load_profile(profile_path)
    server = loaded.profile.server
    checks_flags = server.kind != "generic" and bool(server.flags or server.forbidden_flags)
    pids = resolve(target, every_match=every_match)
    processes: list[ProcessObservation] = []
    findings: list[Finding] = []
    launches: list[LaunchObservation] = []
    zombies: list[int] = []
    # Many servers (--all): one scan of /proc serves every tree.
    children = children_map() if len(pids) > 1 else None
    for pid in pids:
        observation = observe(pid, config_root=config_root, children=children)
        processes += observation.processes
        zombies += observation.zombies
        findings += evaluate(loaded.profile, observation)
        if checks_flags or read_launch:
            from envguard.probes.launch_line import observe_launch

            launcher = observation.processes[0].process
            launch = observe_launch(
                launcher, version=server.version, config_root=config_root, server_info=checks_flags
            )
            launches.append(launch)
            if checks_flags:
                from envguard.evaluation.flags import evaluate_flags

                findings += evaluate_flags(server, launch, launcher.role)
    return CheckReport(
        loaded,
        target,
        tuple(pids),
        tuple(processes),
        tuple(findings),
        tuple(launches),
        tuple(zombies),
    )
