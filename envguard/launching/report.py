"""What `envguard launch` tells a person before it starts anything."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

from envguard.knowledge.redaction import redact_argv, shown

if TYPE_CHECKING:
    from envguard.launching.preflight import Preflight
    from envguard.profile.loader import LoadedProfile

Echo = Callable[[str], None]


def report_preflight(loaded: LoadedProfile, pre: Preflight, echo: Echo) -> None:

    declared = loaded.profile.declared_names()
    injected = ", ".join(
        f"{n}={shown(n, v, declared)}" for n, v in sorted(pre.built.injected.items())
    )
    echo(f"envguard launch: {loaded.label}: {shlex.join(redacted(pre.command))}")
    echo(f"  environment: set {injected or 'nothing'}")
    if pre.built.dropped:
        echo(
            f"  environment: dropped {', '.join(pre.built.dropped)} (forbidden or unlisted in a "
            "strict namespace)"
        )
    if pre.built.neutralised:
        echo(
            f"  environment: set {', '.join(pre.built.neutralised)} empty, so no NCCL config "
            "file can set them (NCCL treats empty as unset)"
        )
    if pre.gpu_note is not None:
        echo(f"  {pre.gpu_note}")
    if pre.launch is not None and pre.launch.catalog_note:
        echo(f"  note: {pre.launch.catalog_note}")


def redacted(command: tuple[str, ...] | list[str]) -> list[str]:

    return redact_argv(list(command))


def findings_text(pre: Preflight) -> list[str]:
    """The preflight's findings, laid out as `envguard check` lays them out."""
    from envguard.render.text import finding_lines

    return [line for finding in pre.findings for line in finding_lines(finding)]
