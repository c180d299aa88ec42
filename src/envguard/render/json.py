"""JSON output of `envguard check --json` (documented in the README)."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from envguard import __version__

if TYPE_CHECKING:
    from envguard.commands.check import CheckReport


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
            }
            for p in report.processes
        ],
        "findings": [dataclasses.asdict(f) for f in report.findings],
    }


def check_json(report: CheckReport) -> str:
    return json.dumps(check_dict(report), indent=2)
