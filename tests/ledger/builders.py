"""Records for ledger tests: valid ones by default, anything overridable."""

from __future__ import annotations

from typing import Any

from envguard.evaluation.record import Record
from envguard.fingerprint import fingerprint

BASE_SETUP: dict[str, Any] = {
    "env": {"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring", "NCCL_BUFFSIZE": 16777216},
    "flags": {"tp_size": 8, "mem_fraction_static": 0.88},
    "server": {"kind": "sglang", "version": "0.5.23"},
}


def record(
    *,
    metrics: dict[str, float] | None = None,
    setup: dict[str, Any] | None = None,
    profile: str = "kimi",
    verdict: str = "valid",
    reasons: tuple[str, ...] = (),
    **overrides: Any,
) -> Record:
    setup = setup if setup is not None else BASE_SETUP
    values: dict[str, Any] = {
        "id": None,
        "created_at": "2026-11-29T10:00:00+00:00",
        "host": "gpu-host-1",
        "profile_name": profile,
        "profile_version": 2,
        "profile_digest": "d" * 64,
        "fingerprint": fingerprint(setup),
        "verdict": verdict,
        "reasons": reasons,
        "command": ("python", "bench.py"),
        "metrics": metrics if metrics is not None else {"tok_s": 88.8},
        "setup": setup,
    }
    values.update(overrides)
    return Record(**values)


def varied(**changes: Any) -> dict[str, Any]:
    """BASE_SETUP with env/flags entries changed: varied(env={"NCCL_ALGO": "Tree"})."""
    setup = {section: dict(values) for section, values in BASE_SETUP.items()}
    for section, entries in changes.items():
        setup[section].update(entries)
    return setup
