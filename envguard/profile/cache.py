"""A per-user cache of validated profiles, so `envguard check` from cron skips pydantic.

Validating costs ~75 ms of imports; a cache hit costs one file read and a few stat calls.
An entry is used only if every file of the `extends` chain is unchanged and so are the
envguard version and the schema module (files are compared by size, inode, mtime and ctime,
as git's index does: no hashing on the hot path).

Entries are JSON, which is data and never code: a planted entry can at worst describe a
profile, and even that only if it is the user's own file that nobody else can write
(envguard/cachedir.py). An entry holds what the profile holds.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any, NamedTuple

from envguard import __version__
from envguard.cachedir import cache_dir, file_stamp, read_entry, write_entry
from envguard.profile import schema
from envguard.profile.schema import (
    EnvSection,
    FlagRule,
    GpuSection,
    Profile,
    ServerSection,
    ValueRule,
)

MAX_ENTRY = 1 << 20  # a profile entry is a few KB; anything larger is not one of ours


class Cached(NamedTuple):
    """What the loader needs back (the cache knows no loader: data flows one way)."""

    profile: Profile
    chain: tuple[str, ...]
    digest: str


def _entry(path: Path) -> Path | None:
    directory = cache_dir("profiles")
    if directory is None:
        return None
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError):
        return None
    key = zlib.crc32(str(resolved).encode()).to_bytes(4, "big").hex() + "-" + path.name
    return directory / f"{key}.json"


def get(path: Path) -> Cached | None:
    """The cached profile for `path`, or None on any miss or anything odd."""
    entry = _entry(path)
    if entry is None:
        return None
    data = read_entry(entry, MAX_ENTRY)
    if data is None:
        return None
    try:
        document = json.loads(data)
        if document["envguard"] != __version__ or document["schema"] != _schema_stamp():
            return None
        files = document["files"]
        if not files or files[-1][0] != str(path.resolve()):
            return None  # another profile whose key collided
        if any(file_stamp(name) != stamp for name, stamp in files):
            return None
        return Cached(
            profile_from_data(document["profile"]),
            tuple(document["chain"]),
            str(document["digest"]),
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # partial, stale or foreign: just a miss


def put(path: Path, cached: Cached) -> None:
    entry = _entry(path)
    if entry is None:
        return
    document = {
        "envguard": __version__,
        "schema": _schema_stamp(),
        "files": [[str(Path(name).resolve()), file_stamp(name)] for name in cached.chain],
        "chain": list(cached.chain),
        "digest": cached.digest,
        "profile": profile_to_data(cached.profile),
    }
    write_entry(entry, json.dumps(document))


def _schema_stamp() -> list[int] | None:
    return file_stamp(schema.__file__)


# --- a validated Profile as JSON data and back, without pydantic --------------------------


def profile_to_data(profile: Profile) -> dict[str, Any]:
    return dict(schema.to_data(profile))


def profile_from_data(data: dict[str, Any]) -> Profile:
    """Rebuild a Profile that was validated when it was cached. The shape is the schema's:
    a table in env.required/optional is a ValueRule, in server.flags a FlagRule."""
    env, server = data["env"], data["server"]
    return Profile(
        schema_version=data["schema_version"],
        name=data["name"],
        version=data["version"],
        description=data["description"],
        extends=tuple(data["extends"]),
        server=ServerSection(
            kind=server["kind"],
            version=server["version"],
            flags={k: _flag(v) for k, v in server["flags"].items()},
            forbidden_flags=tuple(server["forbidden_flags"]),
            command=tuple(server["command"]),
            health_url=server["health_url"],
        ),
        env=EnvSection(
            required={k: _value(v) for k, v in env["required"].items()},
            optional={k: _value(v) for k, v in env["optional"].items()},
            forbidden=tuple(env["forbidden"]),
            strict_prefixes=tuple(env["strict_prefixes"]),
        ),
        gpu=GpuSection(
            **{
                **data["gpu"],
                "forbidden_clock_events": tuple(data["gpu"]["forbidden_clock_events"]),
            }
        ),
    )


def _value(value: Any) -> Any:
    if isinstance(value, dict):
        one_of = value["one_of"]
        return ValueRule(
            one_of=tuple(one_of) if one_of is not None else None,
            min=value["min"],
            max=value["max"],
            pattern=value["pattern"],
        )
    return value


def _flag(value: Any) -> Any:
    if isinstance(value, dict):
        one_of = value["one_of"]
        return FlagRule(
            one_of=tuple(one_of) if one_of is not None else None,
            min=value["min"],
            max=value["max"],
        )
    if isinstance(value, list):
        return tuple(value)
    return value
