"""Where profiles are found: a path, or a name looked up in the user's, the system's and the
shipped profile directories, in that order (the first one wins, so a user can shadow a
shipped profile by copying it).

- a path (holds `/`, ends in `.toml`, or names an existing file) is used as it is;
- `$XDG_CONFIG_HOME/envguard/profiles/NAME.toml` (default `~/.config/envguard/profiles`);
- `/etc/envguard/profiles/NAME.toml`;
- the profiles shipped with envguard (package data `envguard.profiles`).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import NamedTuple

from envguard.errors import ProfileError

SYSTEM_DIR = Path("/etc/envguard/profiles")


class Found(NamedTuple):
    name: str  # what `-p NAME` takes, e.g. "demo" or "base/rtx-pro-6000-pcie5-8gpu"
    origin: str  # user, system or shipped
    path: Path


def user_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "envguard" / "profiles"


def shipped_dir() -> Path | None:
    """The installed package data; in a source checkout run without installing, profiles/."""
    try:
        spec = importlib.util.find_spec("envguard.profiles")
    except ImportError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    checkout = Path(__file__).resolve().parents[2] / "profiles"
    return checkout if checkout.is_dir() else None


def search_dirs() -> list[tuple[str, Path]]:
    dirs = [("user", user_dir()), ("system", SYSTEM_DIR)]
    shipped = shipped_dir()
    if shipped is not None:
        dirs.append(("shipped", shipped))
    return dirs


def is_path(spec: str) -> bool:
    return "/" in spec or spec.endswith(".toml") or Path(spec).is_file()


def locate(spec: str | Path) -> Path:
    """The file a `-p` argument means."""
    if isinstance(spec, Path) or is_path(spec):
        return Path(spec)
    looked = []
    for _, directory in search_dirs():
        candidate = directory / f"{spec}.toml"
        if candidate.is_file():
            return candidate
        looked.append(str(directory))
    raise ProfileError(
        f"{spec}: no such profile (looked for {spec}.toml in {', '.join(looked)})",
        hint="`envguard profile list` shows the profiles by name; or give a path to a .toml file",
    )


def available() -> list[Found]:
    """Every profile by name; a name found in several places is listed where it wins."""
    found: dict[str, Found] = {}
    for origin, directory in search_dirs():
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*.toml")):
            name = path.relative_to(directory).with_suffix("").as_posix()
            found.setdefault(name, Found(name, origin, path))
    return sorted(found.values())
