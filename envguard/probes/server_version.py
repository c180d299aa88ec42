"""Which version of sglang/vllm a running server imports, read from its installed metadata.

Looked for where the server's Python finds packages, as the process sees the filesystem
(/proc/PID/root): the interpreter's prefix (a venv's `bin/python` -> `lib/python3*/
site-packages`), PYTHONPATH, and any site-packages directory the process has files mapped
from (/proc/PID/maps: torch's libraries are mapped by every real server).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from envguard.files import read_regular


class InstalledVersion(NamedTuple):
    version: str
    where: str  # the metadata file it was read from, as the process names it


def _site_dirs(
    pid: int | None, interpreter: str | None, cwd: str | None, environ: dict[str, str]
) -> list[str]:
    dirs: list[str] = []
    dirs += [p for p in environ.get("PYTHONPATH", "").split(":") if p]
    if interpreter:
        path = PurePosixPath(interpreter)
        if not path.is_absolute():
            path = PurePosixPath(cwd or "/") / path
        prefix = path.parent.parent
        dirs += [
            f"{prefix}/lib/python3*/site-packages",
            f"{prefix}/lib/python3*/dist-packages",
            f"{prefix}/local/lib/python3*/dist-packages",
        ]
    try:
        maps = Path(f"/proc/{pid}/maps").read_text(errors="replace") if pid else ""
    except OSError:
        maps = ""
    for match in re.finditer(r"(/\S*/(?:site|dist)-packages)/", maps):
        if match.group(1) not in dirs:
            dirs.append(match.group(1))
    return dirs


def installed_version(
    server: str,
    pid: int | None,
    root: Path,
    interpreter: str | None,
    cwd: str | None,
    environ: dict[str, str] | None,
) -> InstalledVersion | None:
    for pattern in _site_dirs(pid, interpreter, cwd, environ or {}):
        relative = pattern.lstrip("/")
        for site in sorted(root.glob(relative)) if "*" in relative else [root / relative]:
            for metadata in sorted(site.glob(f"{server}-*.dist-info/METADATA")):
                version = _version_of(metadata)
                if version is not None:
                    where = "/" + str(metadata.relative_to(root))
                    return InstalledVersion(version, where)
    return None


def _version_of(metadata: Path) -> str | None:
    try:
        text = read_regular(metadata).decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
        if not line.strip():
            break  # the headers end at the first blank line
    return None
