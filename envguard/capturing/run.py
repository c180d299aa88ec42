"""Capture a profile from a live, known-good server: the tuning variables its ranks run
with (NCCL config files included), its flags by canonical name, its GPUs.

What is written is what `envguard check` of the same server accepts (exit 0), and what
`envguard launch` needs to start it again with the same fingerprint. Nothing secret is ever
written: secret-looking names, values shaped like credentials and secret options are left
out, each with a note saying so.
"""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path
from typing import Any, NamedTuple

from envguard.errors import EnvguardError, Refused
from envguard.knowledge import servers
from envguard.knowledge.nccl import is_nccl_name, same_setting
from envguard.knowledge.redaction import (
    is_secret_option,
    looks_secret,
    redact_argv,
    redact_nested,
    redact_value,
)
from envguard.knowledge.tuning import in_tuning_namespace
from envguard.probes.observe import (
    ENVIRON,
    Observation,
    ProcessObservation,
    observe,
    visible_devices,
)
from envguard.probes.target import Target, resolve
from envguard.profile.schema import SCHEMA_VERSION, Profile

Comments = dict[tuple[str, str], str]  # (table, key) -> a comment for that line


class Captured(NamedTuple):
    document: dict[str, Any]  # the profile, as TOML data
    comments: Comments
    notes: tuple[str, ...]  # what was left out, and why
    pid: int


def capture(
    target: Target, *, name: str, base: Profile | None = None, base_path: str | None = None
) -> Captured:
    """The profile of the server `target` names; `base`: write only what differs from it
    (and extend it by `base_path`). Raises Refused when the ranks disagree (not a
    known-good server), EnvguardError when nothing can be read."""
    [pid] = resolve(target)
    seen = observe(pid)
    notes: list[str] = []
    comments: Comments = {}
    required, optional = _environment(seen, notes, comments)
    server = _server(seen.processes[0], notes)
    gpu = _gpu(seen.processes, notes)
    if base is not None:
        required, server, gpu = _beyond(base, required, server, gpu, comments)
        # A rule replaces the base's whole (profile/loader.py): keep ours unless the same.
        optional = {k: v for k, v in optional.items() if base.env.optional.get(k) != v}
    env: dict[str, Any] = {"required": required}
    if optional:
        env["optional"] = optional
    strict = base.env.strict_prefixes if base is not None else ()
    if any(is_nccl_name(n) for n in [*required, *optional]) and "NCCL_" not in strict:
        # Every NCCL variable the server runs with is named: any other one is drift.
        env["strict_prefixes"] = ["NCCL_"]
    launcher = seen.processes[0].process
    program = Path(launcher.cmdline[0]).name if launcher.cmdline else launcher.role
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "version": 1,
        "description": f"Captured from pid {pid} ({program}) on {socket.gethostname()}, "
        + time.strftime("%Y-%m-%d %H:%M %Z"),
    }
    if base_path is not None:
        document["extends"] = [base_path]
    if server:
        document["server"] = server
    document["env"] = env
    if gpu:
        document["gpu"] = gpu
    return Captured(document, comments, tuple(notes), pid)


def _environment(
    seen: Observation, notes: list[str], comments: Comments
) -> tuple[dict[str, str], dict[str, Any]]:
    """The tuning variables as the ranks see them (every rank must agree): `required` where
    the launcher has the same value, `optional` where the server sets or changes them in its
    workers itself (SGLang sets CUDA_DEVICE_MAX_CONNECTIONS: docs/servers.md), so that
    both the launcher and the ranks pass."""
    launcher = seen.processes[0]
    ranks = [p for p in seen.processes if servers.is_rank(p.process.role)] or [launcher]
    readable = [p for p in ranks if p.effective is not None]
    if not readable:
        raise EnvguardError(
            f"cannot read the environment of any rank of pid {seen.target_pid}",
            hint="restart the server with SPT_NOENV=1 (envguard launch sets it), as root or "
            "as its user",
        )
    if len(readable) < len(ranks):
        unread = len(ranks) - len(readable)
        notes.append(f"{unread} ranks could not be read; captured from the rest")
    for proc in readable:
        if proc.env_plugin:
            notes.append(f"pid {proc.process.pid}: {proc.env_plugin}: NCCL may see other values")
            break
    names = sorted({n for p in readable for n in (p.effective or {}) if in_tuning_namespace(n)})
    required: dict[str, str] = {}
    optional: dict[str, Any] = {}
    disagree: list[str] = []
    for name in names:
        if name == servers.SPT_NOENV:
            continue
        settings = [(p.effective or {}).get(name) for p in readable]
        values = {s.value if s else None for s in settings}
        if len(values) > 1:
            shown = ", ".join(sorted(repr(v) if v is not None else "unset" for v in values))
            disagree.append(f"{name} ({shown})")
            continue
        value = next(iter(values))
        assert value is not None
        if looks_secret(name) or redact_value(value) != value:
            if is_nccl_name(name):
                # NCCL_ is strict in a captured profile: name it, never its value.
                optional[name] = {"pattern": ".*"}
                comments["env.optional", name] = "a credential: its value is not recorded"
            notes.append(f"{name} left out: it looks like a credential")
            continue
        own = launcher.effective.get(name) if launcher.effective is not None else None
        if launcher.effective is None or (own is not None and own.value == value):
            required[name] = value
            files = {s.source for s in settings if s is not None and s.source != ENVIRON}
            if files:
                comments["env.required", name] = f"from {', '.join(sorted(files))}"
        else:
            optional[name] = {"one_of": [own.value, value]} if own is not None else value
            comments["env.optional", name] = "set by the server itself in its workers"
    if disagree:
        raise Refused(
            f"the ranks of pid {seen.target_pid} disagree on {'; '.join(disagree)}",
            hint="a known-good server's ranks agree: fix it first (`envguard check` names "
            "the processes), then capture",
        )
    return required, optional


def _server(launcher: ProcessObservation, notes: list[str]) -> dict[str, Any]:
    """[server]: kind, version, the flags that differ from the defaults, and the command."""
    from envguard.probes.launch_line import observe_launch

    observed = observe_launch(launcher.process, version=None, server_info=False)
    launch, parsed, catalog = observed.launch, observed.parsed, observed.catalog
    if launch is None or parsed is None or catalog is None:
        notes.append("not a recognised SGLang or vLLM launch: no [server] flags")
        return {}
    server: dict[str, Any] = {"kind": launch.server}
    if observed.installed is not None:
        server["version"] = observed.installed.version
    argv = list(launcher.process.cmdline)
    if redact_argv(argv) == argv:
        server["command"] = argv
    else:
        notes.append("[server] command left out: the command line holds a secret")
    if parsed.error is not None:
        notes.append(f"{catalog.label} refuses this command line ({parsed.error}): no flags")
        return server
    flags: dict[str, Any] = {}
    for dest, flag in sorted(parsed.non_default().items()):
        option = catalog.by_dest[dest].long_name.lstrip("-")
        value = _toml_value(flag.value)
        if is_secret_option(dest):
            notes.append(f"--{option} left out: a secret")
        elif value is None:
            notes.append(f"--{option} left out: its value ({flag.value!r}) has no TOML form")
        elif redact_nested(value) != value:
            notes.append(f"--{option} left out: its value looks like a credential")
        else:
            flags[option] = value
    if flags:
        server["flags"] = flags
    return server


def _toml_value(value: Any) -> Any:
    if isinstance(value, bool | int | str) or (isinstance(value, float) and value == value):
        return value
    if isinstance(value, list | tuple):
        items = [_toml_value(v) for v in value]
        return None if any(i is None for i in items) else items
    return None  # None, dicts (JSON flags: a table would not compare as the server parses)


def _gpu(processes: tuple[ProcessObservation, ...], notes: list[str]) -> dict[str, Any]:
    """[gpu] from the GPUs the server sees, where NVML can be had."""
    from envguard.probes.gpu import GpuUnavailable, observe_gpus

    try:
        seen = observe_gpus(visible_devices(processes))
    except GpuUnavailable as exc:
        notes.append(f"no [gpu]: {exc.message}")
        return {}
    gpus = seen.gpus
    if not gpus:
        return {"count": 0}
    gpu: dict[str, Any] = {"count": len(gpus), "driver": re.escape(seen.driver)}
    names = {g.name for g in gpus}
    if len(names) == 1:
        gpu["name"] = re.escape(names.pop())

    def same(values: list[Any]) -> Any:
        return values[0] if values[0] is not None and len(set(values)) == 1 else None

    for key, value in (
        ("persistence", same([g.persistence for g in gpus])),
        ("power_limit_min", min((g.power_limit_w for g in gpus if g.power_limit_w), default=None)),
        ("ecc", same([g.ecc for g in gpus])),
        ("mig", same([g.mig for g in gpus])),
        ("compute_mode", same([g.compute_mode for g in gpus])),
        # The link the slot allows (an idle GPU lowers its current speed), and the lanes.
        ("pcie_gen_min", min((g.pcie_gen_max for g in gpus if g.pcie_gen_max), default=None)),
        ("pcie_width_min", min((g.pcie_width for g in gpus if g.pcie_width), default=None)),
    ):
        if value is not None:
            gpu[key] = value
    return gpu


def _beyond(
    base: Profile,
    required: dict[str, str],
    server: dict[str, Any],
    gpu: dict[str, Any],
    comments: Comments,
) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """Only what `base` does not already require."""
    kept = {}
    for name, value in required.items():
        rule = base.env.required.get(name)
        if isinstance(rule, str | int) and same_setting(name, value, str(rule)):
            comments.pop(("env.required", name), None)
            continue
        kept[name] = value
    server = dict(server)
    if server.get("kind") == base.server.kind:
        server.pop("kind")
    if server.get("version") == base.server.version:
        server.pop("version", None)
    if "flags" in server:
        flags = {k: v for k, v in server["flags"].items() if base.server.flags.get(k) != v}
        server["flags"] = flags
        if not flags:
            server.pop("flags")
    if tuple(server.get("command", ())) == base.server.command:
        server.pop("command", None)
    base_gpu = base.gpu
    gpu = {k: v for k, v in gpu.items() if getattr(base_gpu, k, None) != v}
    return kept, server, gpu


def write(captured: Captured, path: Path, *, force: bool = False) -> None:
    """Write the profile as TOML (tomli-w), with its comments, validated before it lands:
    an invalid profile is never left behind. Refuses to replace a file unless `force`."""
    from envguard.profile.loader import load_profile
    from envguard.render.profile import profile_toml

    if path.exists() and not force:
        raise EnvguardError(
            f"{path}: exists; not replacing it", hint="choose another -o, or add --force"
        )
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(profile_toml(captured.document, captured.comments))
        load_profile(temporary, use_cache=False)  # ProfileError (exit 3) if not valid
        temporary.replace(path)
    except OSError as exc:
        raise EnvguardError(
            f"{path}: cannot write the profile ({exc.strerror or exc})",
            hint="choose a writable -o",
        ) from None
    finally:
        temporary.unlink(missing_ok=True)
