"""The NCCL config files a process sees, read the way NCCL reads them.

Facts (docs/nccl.md, "How NCCL reads its settings"):
- If NCCL_CONF_FILE is set and non-empty, that file is read instead of ~/.nccl.conf
  (home from the passwd entry in NCCL <= 2.29); then /etc/nccl.conf is always read.
- Each line is applied with setenv(name, value, 0): never overwrites. So the process
  environment wins, then the user file, then /etc/nccl.conf; in one file the first wins.
- `KEY=VALUE` split at the first '='; no trimming, no quote removal; lines without '='
  skipped; '#' lines skipped (2.26+); trailing '\\r' stripped only since 2.30.
- Files are read through /proc/PID/root so a containerised server's files are the ones read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Literal, NamedTuple

from envguard.files import read_regular
from envguard.knowledge.redaction import quoted

FileState = Literal["read", "absent", "denied", "unreadable"]

ETC_NCCL_CONF = "/etc/nccl.conf"


class ConfigFile(NamedTuple):
    """One NCCL config file as NCCL would read it for one process."""

    path: str  # as the process names it
    state: FileState
    values: Mapping[str, str] = MappingProxyType({})  # a shared default: never mutable
    # How NCCL reads lines differently from how they look: (key, explanation).
    problems: tuple[tuple[str, str], ...] = ()


def parse_conf(text: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Parse an NCCL config file; return the values and the lines NCCL misreads."""
    values: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        if value.endswith("\r"):
            value = value[:-1]
            problems.append(
                (
                    key,
                    f"line {number} ends with CR (\\r): NCCL before 2.30 keeps it "
                    "in the value; save the file with Unix line endings",
                )
            )
        if key != key.strip():
            problems.append(
                (
                    key.strip(),
                    f"line {number}: NCCL does not trim spaces, so this "
                    f"line sets {key!r}, not {key.strip()}; remove the spaces",
                )
            )
        elif value != value.strip():
            problems.append(
                (
                    key,
                    f"line {number}: NCCL keeps the spaces around the value "
                    f"{quoted(key, value)}; remove them",
                )
            )
        values.setdefault(key, value)  # the first occurrence in a file wins
    return values, problems


def read_config_file(root: Path, path: str) -> ConfigFile:
    """Read `path` as the process sees it, under `root` (normally /proc/PID/root)."""
    target = root / PurePosixPath(path).relative_to("/")
    try:
        text = read_regular(target).decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return ConfigFile(path, "absent")
    except PermissionError:
        return ConfigFile(path, "denied")
    except OSError:
        return ConfigFile(path, "unreadable")
    values, problems = parse_conf(text)
    return ConfigFile(path, "read", values, tuple(problems))


def home_directory(root: Path, uid: int, environ: dict[str, str] | None) -> str | None:
    """The home NCCL <= 2.29 uses: the passwd entry of the process's uid, as the process
    sees /etc/passwd; $HOME only when passwd has no entry."""
    try:
        passwd = read_regular(root / "etc" / "passwd").decode(errors="replace")
    except OSError:
        passwd = ""
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and fields[2] == str(uid):
            return fields[5]
    return (environ or {}).get("HOME")


def config_files(
    root: Path, uid: int, environ: dict[str, str] | None, cwd: str | None
) -> list[ConfigFile]:
    """The files NCCL reads for a process, highest precedence first."""
    files: list[ConfigFile] = []
    conf_file = (environ or {}).get("NCCL_CONF_FILE", "")
    if conf_file:
        if not conf_file.startswith("/"):
            conf_file = str(PurePosixPath(cwd or "/") / conf_file)
        files.append(read_config_file(root, conf_file))
    else:
        home = home_directory(root, uid, environ)
        if home:
            files.append(read_config_file(root, str(PurePosixPath(home) / ".nccl.conf")))
    files.append(read_config_file(root, ETC_NCCL_CONF))
    return files
