"""JSON output of `envguard check --json` (documented in the README)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from envguard import __version__
from envguard.knowledge.nccl import is_nccl_name
from envguard.knowledge.redaction import shown

if TYPE_CHECKING:
    from envguard.evaluation.report import CheckReport
    from envguard.probes.gpu import GpuObservation
    from envguard.probes.launch_line import LaunchObservation
    from envguard.probes.nccl_log import NcclLog
    from envguard.probes.observe import ProcessObservation


def check_dict(report: CheckReport) -> dict[str, Any]:
    profile = report.profile
    return {
        "envguard": __version__,
        "verdict": report.verdict,
        "exit_code": int(report.exit_code),
        "profile": {
            "name": profile.profile.name,
            "version": profile.profile.version,
            "path": profile.path,
            "digest": profile.digest,
        },
        "target": report.target.describe(),
        "servers": list(report.server_pids),
        "zombies": list(report.zombies),
        "processes": [
            {
                "pid": p.process.pid,
                "ppid": p.process.ppid,
                "role": p.process.role,
                "uid": p.process.uid,
                "environ": p.process.environ_state,
                "nccl_config_files": [{"path": c.path, "state": c.state} for c in p.config_files],
                "nccl_settings": nccl_settings(p, report.profile.profile.declared_names()),
            }
            for p in report.processes
        ],
        "findings": [f._asdict() for f in report.findings],
        "launches": [launch_dict(launch) for launch in report.launches],
        "gpus": {"skipped": report.gpu_skipped, "servers": [gpus_dict(g) for g in report.gpus]},
        "nccl_log": nccl_log_dict(report.nccl_log) if report.nccl_log else None,
    }


def nccl_log_dict(log: NcclLog) -> dict[str, Any]:
    """What NCCL's log said each process read (NCCL variables only: no secrets)."""
    return {
        "path": log.path,
        "processes": [
            {
                "host": p.host,
                "pid": p.pid,
                "nccl_version": p.version,
                "ranks": [{"rank": rank, "nranks": size} for rank, size in p.ranks],
                "settings": {n: shown(n, v, frozenset()) for n, v in p.settings.items()},
            }
            for p in log.processes
        ],
    }


def gpus_dict(seen: GpuObservation) -> dict[str, Any]:
    """GPU facts as NVML gave them (no secrets: hardware state only)."""
    return {
        "driver": seen.driver,
        "cuda_driver": seen.cuda_driver,
        "host_count": seen.host_count,
        "cuda_visible_devices": seen.visible,
        "notes": list(seen.notes),
        "gpus": [{**gpu._asdict(), "errors": dict(gpu.errors)} for gpu in seen.gpus],
    }


def launch_dict(observed: LaunchObservation) -> dict[str, Any]:
    from envguard.evaluation.flags import value_for_display

    launch, parsed, catalog = observed.launch, observed.parsed, observed.catalog
    if launch is None or parsed is None or catalog is None:
        return {"pid": observed.pid, "recognised": False}
    return {
        "pid": observed.pid,
        "recognised": True,
        "server": launch.server,
        "program": launch.program,
        "installed_version": observed.installed.version if observed.installed else None,
        "installed_version_from": observed.installed.where if observed.installed else None,
        "catalog": catalog.label,
        "catalog_note": observed.catalog_note,
        "ok": parsed.ok,
        "error": parsed.error,
        "notes": list(parsed.notes),
        "flags": {
            dest: {
                "value": value_for_display(dest, flag.value),
                "spelling": flag.spelling,
                "source": flag.origin,
            }
            for dest, flag in parsed.non_default().items()
        },
        "server_info": observed.server_info_state,
    }


def nccl_settings(proc: ProcessObservation, declared: frozenset[str]) -> dict[str, Any] | None:
    """The NCCL_* values the process will run with, each with where it came from."""
    if proc.effective is None:
        return None
    return {
        name: {"value": shown(name, setting.value, declared), "source": setting.source}
        for name, setting in sorted(proc.effective.items())
        if is_nccl_name(name)
    }


def check_json(report: CheckReport) -> str:
    return json.dumps(check_dict(report), indent=2)
