"""JSON output of `envguard check --json` (documented in the README)."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from envguard import __version__
from envguard.knowledge.namespaces import shown
from envguard.knowledge.nccl import is_nccl_name

if TYPE_CHECKING:
    from envguard.commands.check import CheckReport
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
        "findings": [dataclasses.asdict(f) for f in report.findings],
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
