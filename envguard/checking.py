"""The check engine: load the profile, read the target's process tree, evaluate it.

Library first: `check()` takes plain arguments and returns a CheckReport; `envguard check`,
`launch` (after health), `bench` (before and after the run) all call it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from envguard.evaluation.findings import Finding
from envguard.evaluation.report import CheckReport
from envguard.probes.observe import ProcessObservation, visible_devices
from envguard.probes.process import children_map, namespace_pid, parents
from envguard.probes.target import Target, resolve
from envguard.profile.loader import LoadedProfile, load_profile

if TYPE_CHECKING:
    from envguard.probes.gpu import GpuObservation, GpuReading
    from envguard.probes.launch_line import LaunchObservation
    from envguard.profile.schema import GpuSection


def check(
    profile: str | Path | LoadedProfile,
    target: Target,
    *,
    every_match: bool = False,
    config_root: Path | None = None,
    read_launch: bool = False,
    skip_gpu: bool = False,
    nccl_log: str | Path | None = None,
    gpu_reading: GpuReading | None = None,
) -> CheckReport:
    """Load the profile, read the target's process tree, and evaluate it.

    Raises EnvguardError (exit 3) when it cannot evaluate: bad profile, no such process,
    permission denied. `read_launch` parses the launcher's flags even when the profile has
    none (bench fingerprints them). A profile with [gpu] loads NVML (`skip_gpu`: not).
    `nccl_log`: a log of the server written with NCCL_DEBUG=INFO, whose lines are held
    against the profile and against what envguard read from the same processes.
    `profile`: a path or name, or a profile already loaded; `gpu_reading`: NVML already
    started for it (evaluation.gpu.start_reading), so that it runs beside more of the work.
    """
    from envguard.evaluation.check import evaluate
    from envguard.probes.observe import observe

    loaded = profile if isinstance(profile, LoadedProfile) else load_profile(profile)
    # NVML starts now (if not already), beside the rest; bench and watch fingerprint GPUs.
    gpus = GpuCheck(loaded.profile.gpu, skip=skip_gpu, fingerprint=read_launch, reading=gpu_reading)
    try:
        server = loaded.profile.server
        checks_flags = server.kind != "generic" and bool(server.flags or server.forbidden_flags)
        # One pass over /proc finds the server (--port, --match) and serves every tree.
        table = parents()
        pids = resolve(target, every_match=every_match, table=table)
        children = children_map(table)
        processes: list[ProcessObservation] = []
        findings: list[Finding] = []
        launches: list[LaunchObservation] = []
        zombies: list[int] = []
        visible: list[str | None] = []
        for pid in pids:
            observation = observe(pid, config_root=config_root, children=children)
            processes += observation.processes
            zombies += observation.zombies
            findings += evaluate(loaded.profile, observation)
            visible.append(visible_devices(observation.processes))
            if checks_flags or read_launch:
                from envguard.probes.launch_line import observe_launch

                launcher = observation.processes[0].process
                launch = observe_launch(
                    launcher,
                    version=server.version,
                    config_root=config_root,
                    server_info=checks_flags,
                )
                launches.append(launch)
                if checks_flags:
                    from envguard.evaluation.flags import evaluate_flags

                    findings += evaluate_flags(server, launch, launcher.role)
        for devices in visible:
            findings += gpus.check(devices)
        logged = None
        if nccl_log is not None:
            from envguard.evaluation.nccl_log import evaluate_nccl_log
            from envguard.probes.nccl_log import read_nccl_log

            logged = read_nccl_log(nccl_log)
            own = {p.process.pid: namespace_pid(p.process.pid) for p in processes}
            findings += evaluate_nccl_log(loaded.profile, logged, processes, own)
        return CheckReport(
            loaded,
            target,
            tuple(pids),
            tuple(processes),
            tuple(findings),
            tuple(launches),
            tuple(zombies),
            gpus=tuple(gpus.observed),
            gpu_skipped=skip_gpu and gpus.wanted,
            nccl_log=logged,
        )
    finally:
        gpus.close()


class GpuCheck:
    """The GPU part of a check, only for a profile with [gpu]: NVML starts beside the rest
    of the check as soon as the profile is known (probes.gpu.GpuReading); without NVML,
    one `unverifiable` finding per server (never ok)."""

    def __init__(
        self,
        spec: GpuSection,
        *,
        skip: bool,
        fingerprint: bool = False,
        reading: GpuReading | None = None,
    ) -> None:
        self.spec = spec
        self.wanted = not spec.is_empty()
        self.skip = skip
        self.observed: list[GpuObservation] = []
        self._reading: GpuReading | None = None
        if self.wanted and not skip:
            from envguard.evaluation.gpu import start_reading

            self._reading = reading or start_reading(spec, fingerprint=fingerprint)
        elif reading is not None:
            reading.close()  # started for nothing: reap it

    def check(self, visible: str | None) -> list[Finding]:
        if self._reading is None:
            return []
        from envguard.evaluation.gpu import evaluate_gpus, unavailable
        from envguard.probes.gpu import GpuUnavailable

        try:
            seen = self._reading.observe(visible)
        except GpuUnavailable as exc:
            return [unavailable(exc)]
        self.observed.append(seen)
        return evaluate_gpus(self.spec, seen)

    def close(self) -> None:
        if self._reading is not None:
            self._reading.close()
