"""Observe how a server was launched: its command line parsed with the right catalog, the
--config file it reads, and (when asked) its own /server_info view."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from envguard.files import read_text
from envguard.flags.recognise import LaunchCommand, recognise
from envguard.probes.process import ProcessSnapshot

if TYPE_CHECKING:  # the catalog, argparse and site lookups load only for a server launch
    from envguard.flags.catalog import Catalog
    from envguard.flags.parsed import ParsedCommandLine
    from envguard.probes.server_version import InstalledVersion

ServerInfoState = Literal["reachable", "unreachable", "not tried"]


class LaunchObservation(NamedTuple):
    pid: int | None  # None: a command not started yet (envguard launch's preflight)
    launch: LaunchCommand | None
    catalog: Catalog | None = None
    installed: InstalledVersion | None = None
    catalog_note: str | None = None  # the catalog is not the exact version
    parsed: ParsedCommandLine | None = None
    server_info: dict[str, Any] | None = None
    server_info_state: ServerInfoState = "not tried"


def read_launch_line(
    cmdline: Sequence[str],
    *,
    pid: int | None,
    root: Path,
    cwd: str | None,
    environ: dict[str, str] | None,
    version: str | None,
) -> LaunchObservation:
    """Read a launch command the way its server will: recognise the entry point, find the
    installed server version (`version`, from the profile, wins), choose its flag catalog,
    and parse the arguments, reading a --config file as the server would (under `root`,
    relative to `cwd`). The one sequence for a live launcher and a command not yet started."""
    launch = recognise(tuple(cmdline))
    if launch is None:
        return LaunchObservation(pid, None)
    from envguard.flags.catalog import choose_version, load
    from envguard.flags.parse_cache import parse
    from envguard.probes.server_version import installed_version

    installed = installed_version(launch.server, pid, root, launch.interpreter, cwd, environ)
    wanted = version or (installed.version if installed else None)
    chosen, note = choose_version(launch.server, wanted)
    catalog = load(launch.server, chosen)

    def read(path: str) -> str:
        full = PurePosixPath(path)
        if not full.is_absolute():
            full = PurePosixPath(cwd or "/") / full
        return read_text(root / str(full).lstrip("/"))

    parsed = parse(catalog, list(launch.args), read, subcommand=launch.subcommand)
    return LaunchObservation(pid, launch, catalog, installed, note, parsed)


def listen_address(parsed: ParsedCommandLine | None) -> tuple[str | None, int | None]:
    """The --host and --port the server will listen on, as it parsed them."""
    if parsed is None or not parsed.ok:
        return None, None
    host, port = parsed.values.get("host"), parsed.values.get("port")
    return (
        host.value if host and isinstance(host.value, str) else None,
        port.value if port and isinstance(port.value, int) else None,
    )


def observe_launch(
    snap: ProcessSnapshot,
    *,
    version: str | None,
    config_root: Path | None = None,
    server_info: bool = True,
) -> LaunchObservation:
    """Read a live launcher's command line, and (`server_info`) ask the server itself."""
    root = config_root or Path(f"/proc/{snap.pid}/root")
    observed = read_launch_line(
        snap.cmdline, pid=snap.pid, root=root, cwd=snap.cwd, environ=snap.environ, version=version
    )
    host, port = listen_address(observed.parsed)
    if not server_info or port is None:
        return observed
    from envguard.probes import server_info as info_probe

    info = info_probe.fetch(host, port)
    state: ServerInfoState = "reachable" if info is not None else "unreachable"
    return observed._replace(server_info=info, server_info_state=state)
