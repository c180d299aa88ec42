"""A per-user cache of validated profiles, so `envguard check` from cron skips pydantic.

Validating costs ~75 ms of imports; a cache hit costs one file read and a few stat calls.
An entry is used only if every file of the `extends` chain is unchanged and so are the
envguard version and the schema module (files are compared by size, inode, mtime and ctime,
as git's index does: no hashing on the hot path). The cache is the user's own
directory (like ~/.bashrc, whoever can write it can run code as the user); writing it is
best-effort: a read-only home only costs speed.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import zlib
from pathlib import Path

from envguard import __version__
from envguard.profile import schema
from envguard.profile.loader import LoadedProfile


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
    key = zlib.crc32(str(path.resolve()).encode()).to_bytes(4, "big").hex() + "-" + path.name
    return directory / f"{key}.pickle"


def _file_stamp(path: str) -> tuple[int, ...] | None:
    """What tells a changed file without reading it: size, inode, mtime and ctime in ns
    (as git's index does). ctime cannot be set back by `touch`, so an edit always shows."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return (st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def get(path: Path) -> LoadedProfile | None:
    entry = _entry(path)
    if entry is None:
        return None
    try:
        version, schema_digest, files, loaded = pickle.loads(entry.read_bytes())
    except Exception:  # a missing, partial or stale entry is just a miss
        return None
    if version != __version__ or schema_digest != _schema_stamp():
        return None
    if not files or files[-1][0] != str(path.resolve()):
        return None  # another profile whose key collided
    if any(_file_stamp(name) != stamp for name, stamp in files):
        return None
    if not isinstance(loaded, LoadedProfile):
        return None
    return dataclasses.replace(loaded, path=str(path))


def put(path: Path, loaded: LoadedProfile) -> None:
    entry = _entry(path)
    if entry is None:
        return
    files = [(str(Path(name).resolve()), _file_stamp(name)) for name in loaded.chain]
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(pickle.dumps((__version__, _schema_stamp(), files, loaded)))
        temporary.replace(entry)
    except OSError:
        pass


def _schema_stamp() -> tuple[int, ...] | None:
    return _file_stamp(schema.__file__)
