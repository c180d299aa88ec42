"""The launch manifest: what was started, how, and what check said about it (JSON beside
the pid file). Secrets are redacted here like everywhere else."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from envguard import __version__
from envguard.knowledge.redaction import redact_argv, redact_value, shown
from envguard.launching.preflight import Preflight
from envguard.probes.process import stat_fields
from envguard.profile.loader import LoadedProfile


def manifest_path(pid_file: Path) -> Path:
    stem = pid_file.name.removesuffix(".pid")
    return pid_file.with_name(f"{stem}.manifest.json")


def build(
    loaded: LoadedProfile,
    pre: Preflight,
    *,
    pid: int,
    log: Path | None,
    pid_file: Path | None,
    forced: bool,
    health: dict[str, Any] | None,
    verdict: str,
    findings: int,
) -> dict[str, Any]:
    declared = loaded.profile.declared_names()
    return {
        "envguard": __version__,
        "command": redact_argv(list(pre.command)),
        "cwd": str(Path.cwd()),
        "pid": pid,
        "start_time": datetime.now(UTC).isoformat(timespec="seconds"),
        "start_ticks": _start_ticks(pid),
        "profile": {
            "name": loaded.profile.name,
            "version": loaded.profile.version,
            "path": loaded.path,
            "digest": loaded.digest,
        },
        "injected": {n: shown(n, v, declared) for n, v in sorted(pre.built.injected.items())},
        "dropped": list(pre.built.dropped),
        "neutralised": list(pre.built.neutralised),
        "forced": forced,
        "findings_at_start": [f.kind + " " + f.subject for f in pre.findings],
        "health": health,
        "check": {"verdict": verdict, "findings": findings},
        "log": str(log) if log else None,
        "pid_file": str(pid_file) if pid_file else None,
    }


def write(path: Path, manifest: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # Built from redacted parts; the value rules run once more over every byte written.
    temporary.write_text(redact_value(json.dumps(manifest, indent=2)) + "\n")
    temporary.replace(path)


def _start_ticks(pid: int) -> int | None:

    try:
        return int(stat_fields(pid)[19])
    except (OSError, ValueError, IndexError):
        return None
