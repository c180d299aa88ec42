"""Findings and the verdict they add up to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

FindingKind = Literal[
    "missing",  # a required variable is not set
    "mismatch",  # set, but not to an accepted value
    "forbidden",  # a forbidden variable is set
    "unexpected",  # an unlisted variable in a strict namespace
    "misspelled",  # an NCCL-looking name NCCL does not read, close to one it does
    "misread",  # a value NCCL reads differently from how it looks
    "inconsistent",  # ranks of one server disagree
    "rejected",  # the server's parser refuses its command line
    "gpu",  # a GPU the server sees is not as the profile says (NVML)
    "nccl-log",  # NCCL's own log says it used something other than the profile says
    "unverifiable",  # the setting cannot be known from outside
]

Verdict = Literal["ok", "drift", "unverifiable"]


class Draft(NamedTuple):
    """A finding before its process is known (built with keywords: expected and actual are
    both strings, and must not swap)."""

    kind: FindingKind
    subject: str
    expected: str | None
    actual: str | None
    source: str | None
    hint: str


class Finding(NamedTuple):
    """One thing that is not as the profile says, in one process.

    Values are already redacted for display (see knowledge.redaction.shown): a Finding
    never holds a secret, so no renderer can leak one.
    """

    kind: FindingKind
    subject: str  # the variable (or file) concerned
    pid: int | None
    role: str | None
    expected: str | None
    actual: str | None
    source: str | None  # environ, /etc/nccl.conf, ~/.nccl.conf, ...
    hint: str

    @property
    def is_drift(self) -> bool:
        return self.kind != "unverifiable"


def verdict(findings: list[Finding]) -> Verdict:
    """Drift wins over unverifiable: a definite difference is an answer; only when nothing
    definite was found does an unverifiable part make the whole check unverifiable."""
    if any(f.is_drift for f in findings):
        return "drift"
    if findings:
        return "unverifiable"
    return "ok"


def placed(drafts: Iterable[Draft], pid: int | None, role: str | None) -> list[Finding]:
    """Drafts made into findings of one process."""
    return [
        Finding(
            kind=d.kind,
            subject=d.subject,
            pid=pid,
            role=role,
            expected=d.expected,
            actual=d.actual,
            source=d.source,
            hint=d.hint,
        )
        for d in drafts
    ]
