"""The result of one check: what was looked at, what was found, and the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from envguard.errors import ExitCode
from envguard.evaluation.findings import Finding, Verdict, verdict
from envguard.probes.observe import ProcessObservation
from envguard.probes.target import Target
from envguard.profile.loader import LoadedProfile

if TYPE_CHECKING:  # flags machinery (argparse, catalogs) loads only for profiles with flags
    from envguard.probes.gpu import GpuObservation
    from envguard.probes.launch_line import LaunchObservation
    from envguard.probes.nccl_log import NcclLog


class CheckReport(NamedTuple):
    """The result of one check: what was looked at, what was found, the verdict."""

    profile: LoadedProfile
    target: Target
    server_pids: tuple[int, ...]
    processes: tuple[ProcessObservation, ...]
    findings: tuple[Finding, ...]
    launches: tuple[LaunchObservation, ...] = ()  # when the profile has server flags
    zombies: tuple[int, ...] = ()  # exited workers not yet reaped: noted, nothing to check
    gpus: tuple[GpuObservation, ...] = ()  # one per server, when the profile has [gpu]
    gpu_skipped: bool = False  # the profile has [gpu] and --skip-gpu said not to look
    nccl_log: NcclLog | None = None  # NCCL's own log, when one was given

    @property
    def verdict(self) -> Verdict:
        return verdict(list(self.findings))

    @property
    def exit_code(self) -> ExitCode:
        return {"ok": ExitCode.OK, "drift": ExitCode.DRIFT, "unverifiable": ExitCode.UNVERIFIABLE}[
            self.verdict
        ]
