"""Observe how a server was launched: its command line parsed with the right catalog, the
--config file it reads, and (when asked) its own /server_info view."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from envguard.flags.catalog import Catalog, choose_version, load
from envguard.flags.parser import ParsedCommandLine
from envguard.flags.recognise import LaunchCommand, recognise
from envguard.probes.process import ProcessSnapshot
from envguard.probes.server_version import InstalledVersion, installed_version

ServerInfoState = Literal["reachable", "unreachable", "not tried"]


@dataclass(frozen=True)
class LaunchObservation:
    pid: int | None  # None: a command not started yet (envguard launch's preflight)
    launch: LaunchCommand | None
    catalog: Catalog | None = None
    installed: InstalledVersion | None = None
    catalog_note: str | None = None  # the catalog is not the exact version
    parsed: ParsedCommandLine | None = None
    server_info: dict[str, Any] | None = None
    server_info_state: ServerInfoState = "not tried"


def observe_launch(
    snap: ProcessSnapshot,
    *,
    version: str | None,
    config_root: Path | None = None,
    server_info: bool = True,
) -> LaunchObservation:
    """Parse the launcher's command line. `version` (from the profile) wins over the
    version installed where the server runs."""
    from envguard.flags.preprocess import parse

    launch = recognise(snap.cmdline)
    if launch is None:
        return LaunchObservation(snap.pid, None)
    root = config_root or Path(f"/proc/{snap.pid}/root")
    installed = installed_version(
        launch.server, snap.pid, root, launch.interpreter, snap.cwd, snap.environ
    )
    wanted = version or (installed.version if installed else None)
    chosen, note = choose_version(launch.server, wanted)
    catalog = load(launch.server, chosen)

    def read(path: str) -> str:
        full = PurePosixPath(path)
        if not full.is_absolute():
            full = PurePosixPath(snap.cwd or "/") / full
        return (root / str(full).lstrip("/")).read_text()

    parsed = parse(catalog, list(launch.args), read, subcommand=launch.subcommand)
    info, state = None, "not tried"
    port = parsed.values.get("port")
    if server_info and parsed.ok and port is not None and isinstance(port.value, int):
        from envguard.probes import server_info as info_probe

        host = parsed.values.get("host")
        info = info_probe.fetch(host.value if host else None, port.value)
        state = "reachable" if info is not None else "unreachable"
    return LaunchObservation(snap.pid, launch, catalog, installed, note, parsed, info, state)  # type: ignore[arg-type]
