"""A per-user cache of validated profiles, so `envguard check` from cron skips pydantic.

Validating costs ~75 ms of imports; a cache hit costs a few file reads and hashes. An entry
is used only if every file of the `extends` chain still hashes the same and both the
envguard version and the schema module are unchanged. The cache is the user's own
directory (like ~/.bashrc, whoever can write it can run code as the user); writing it is
best-effort: a read-only home only costs speed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
from pathlib import Path

from envguard import __version__
from envguard.profile import schema
from envguard.profile.loader import LoadedProfile

_SCHEMA_DIGEST = hashlib.sha256(Path(schema.__file__).read_bytes()).hexdigest()


def cache_dir() -> Path | None:
    if os.environ.get("ENVGUARD_NO_CACHE"):
        return None
    explicit = os.environ.get("ENVGUARD_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envguard" / "profiles"


def _entry(path: Path) -> Path | None:
    directory = cache_dir()
    if directory is None:
        return None
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    return directory / f"{key}.pickle"


def _file_digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def get(path: Path) -> LoadedProfile | None:
    entry = _entry(path)
    if entry is None:
        return None
    try:
        version, schema_digest, files, loaded = pickle.loads(entry.read_bytes())
    except Exception:  # a missing, partial or stale entry is just a miss
        return None
    if version != __version__ or schema_digest != _SCHEMA_DIGEST:
        return None
    if any(_file_digest(name) != digest for name, digest in files):
        return None
    if not isinstance(loaded, LoadedProfile):
        return None
    return dataclasses.replace(loaded, path=str(path))


def put(path: Path, loaded: LoadedProfile) -> None:
    entry = _entry(path)
    if entry is None:
        return
    files = [(str(Path(name).resolve()), _file_digest(name)) for name in loaded.chain]
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(pickle.dumps((__version__, _SCHEMA_DIGEST, files, loaded)))
        temporary.replace(entry)
    except OSError:
        pass
