"""Put the probes together: the observed state of a server's process tree.

An Observation is what evaluation needs and nothing more; building it is the only I/O
`envguard check` does (besides loading the profile).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from envguard.knowledge import nccl
from envguard.knowledge.gpu import VISIBLE_DEVICES
from envguard.probes.ncclconf import ConfigFile, config_files
from envguard.probes.process import ProcessSnapshot, process_tree, read_proc

ENVIRON = "environ"

# Where dlopen() looks for libnccl-env.so besides LD_LIBRARY_PATH (ld.so defaults and the
# usual multiarch and CUDA image locations).
_LIBRARY_DIRS = (
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/local/lib",
    "/usr/local/cuda/lib64",
)


class Setting(NamedTuple):
    """A variable's value as the process will see it, and where it came from."""

    value: str
    source: str  # "environ", or the path of the NCCL config file that supplied it


class ProcessObservation(NamedTuple):
    process: ProcessSnapshot
    # The environment plus what NCCL config files add; None when the environ is unreadable.
    effective: dict[str, Setting] | None
    config_files: tuple[ConfigFile, ...]
    env_plugin: str | None  # why NCCL's environment cannot be seen from outside, if so


class Observation(NamedTuple):
    target_pid: int
    processes: tuple[ProcessObservation, ...]
    vanished: tuple[int, ...]  # descendants that exited while the tree was read
    zombies: tuple[int, ...] = ()  # exited descendants not yet reaped: no environment left


def observe(
    pid: int, *, config_root: Path | None = None, children: dict[int, list[int]] | None = None
) -> Observation:
    """Read the process tree of `pid` and the NCCL settings each process will see.

    `config_root` replaces each process's own root (/proc/PID/root) for config files
    and libraries: tests and `--config-root` use it to read a prepared tree instead.
    """
    snapshots, vanished, zombies = process_tree(pid, children)
    files_seen: dict[tuple[object, ...], tuple[ConfigFile, ...]] = {}
    libraries_seen: dict[tuple[str, str], str | None] = {}
    processes = []
    for snap in snapshots:
        root = config_root or Path(f"/proc/{snap.pid}/root")
        key = (
            str(root) if config_root else _root_identity(snap.pid),
            snap.uid,
            (snap.environ or {}).get("NCCL_CONF_FILE"),
            (snap.environ or {}).get("HOME"),
            snap.cwd,
        )
        if key not in files_seen:
            files_seen[key] = tuple(config_files(root, snap.uid, snap.environ, snap.cwd))
        processes.append(observe_process(snap, root, files_seen[key], (key[0], libraries_seen)))
    return Observation(pid, tuple(processes), tuple(vanished), tuple(zombies))


LibraryCache = tuple[str, dict[tuple[str, str], "str | None"]]


def observe_process(
    snap: ProcessSnapshot,
    root: Path,
    files: tuple[ConfigFile, ...],
    libraries: LibraryCache | None = None,
) -> ProcessObservation:
    """One process as NCCL will see it: its environment, completed by the config files it
    reads, and whether an environment plugin hides the rest. (Also used for a command not
    started yet: envguard launch's preflight.) `libraries`: the root's identity and what
    earlier processes of the tree found installed, so that one search serves them all."""
    effective = effective_settings(snap.environ, files) if snap.environ is not None else None
    plugin = find_env_plugin(snap, root, effective, libraries)
    return ProcessObservation(snap, effective, files, plugin)


def _root_identity(pid: int) -> str:
    # Processes of one container share a root; reading its files once is enough.
    try:
        stat = Path(f"/proc/{pid}/root").stat()
        return f"{stat.st_dev}:{stat.st_ino}"
    except OSError:
        return f"pid:{pid}"


def effective_settings(
    environ: dict[str, str], files: tuple[ConfigFile, ...]
) -> dict[str, Setting]:
    """Environment first, then each config file in order, never overwriting: NCCL applies
    file lines with setenv(name, value, 0), so a variable already in the environment - even
    empty, which NCCL then treats as unset - keeps its value."""
    settings = {name: Setting(value, ENVIRON) for name, value in environ.items()}
    for config in files:
        for name, value in config.values.items():
            settings.setdefault(name, Setting(value, config.path))
    return settings


def find_env_plugin(
    snap: ProcessSnapshot,
    root: Path,
    effective: dict[str, Setting] | None,
    libraries: LibraryCache | None = None,
) -> str | None:
    """NCCL 2.28+ loads an environment plugin that answers every variable lookup: with
    one present, what NCCL sees cannot be verified from outside."""
    setting = (effective or {}).get(nccl.ENV_PLUGIN_VARIABLE)
    if setting is not None and setting.value:
        if setting.value.lower() == "none":
            return None
        return f"{nccl.ENV_PLUGIN_VARIABLE}={setting.value} ({setting.source})"
    try:
        maps = read_proc(f"/proc/{snap.pid}/maps")
    except OSError:
        maps = b""
    at = maps.find(nccl.ENV_PLUGIN_LIBRARY.split(".")[0].encode())
    if at >= 0:
        end = maps.find(b"\n", at)
        line = maps[maps.rfind(b"\n", 0, at) + 1 : end if end >= 0 else len(maps)]
        return f"{os.fsdecode(line.split()[-1])} is loaded"
    library_path = (snap.environ or {}).get("LD_LIBRARY_PATH", "")
    if libraries is None:
        return _installed_plugin(root, library_path)
    identity, seen = libraries
    if (identity, library_path) not in seen:
        seen[identity, library_path] = _installed_plugin(root, library_path)
    return seen[identity, library_path]


def _installed_plugin(root: Path, library_path: str) -> str | None:
    """Where dlopen() would find the plugin under `root`, if anywhere."""
    for directory in (*filter(None, library_path.split(":")), *_LIBRARY_DIRS):
        candidate = PurePosixPath(directory if directory.startswith("/") else "/" + directory)
        try:
            present = (root / candidate.relative_to("/") / nccl.ENV_PLUGIN_LIBRARY).exists()
        except OSError:  # another user's (setuid) process: its root is not ours to read
            continue
        if present:
            return f"{candidate / nccl.ENV_PLUGIN_LIBRARY} is installed"
    return None


def visible_devices(processes: Sequence[ProcessObservation]) -> str | None:
    """CUDA_VISIBLE_DEVICES as the server has it: the first process whose environment can
    be read (the launcher, normally); None when unset."""
    for proc in processes:
        if proc.process.environ is not None:
            return proc.process.environ.get(VISIBLE_DEVICES)
    return None
