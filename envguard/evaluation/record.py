"""A benchmark result as the ledger keeps it (one dataclass: `ledger list` loads only this;
comparing records is envguard.evaluation.results)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["valid", "refused"]


@dataclass(frozen=True)
class Record:
    id: int | None
    created_at: str  # ISO 8601, UTC
    host: str
    profile_name: str
    profile_version: int
    profile_digest: str
    fingerprint: str | None
    verdict: Verdict
    reasons: tuple[str, ...]
    command: tuple[str, ...]  # redacted
    metrics: dict[str, float]
    setup: dict[str, Any] | None  # redacted, normalised (see envguard.fingerprint)

    @property
    def label(self) -> str:
        return f"{self.profile_name}@{self.profile_version}"
