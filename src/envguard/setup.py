"""The relevant observed setup of a server, normalised, and its fingerprint.

What goes in (documented in the README, "Fingerprint"):
- env: every variable in the tuning namespaces (NCCL_, SGLANG_, SGL_, VLLM_, CUDA_, TORCH_,
  PYTORCH_, NVIDIA_, OMP_) and every name the profile declares, as the server's ranks see
  them (environment plus NCCL config files), NCCL values normalised the way NCCL reads them
  (`0x1000000` and `16777216` are the same NCCL_BUFFSIZE). Secret-looking names are left out
  (another token is not another setup), and so is SPT_NOENV (envguard's own).
- flags: the launch flags that differ from the server's defaults, typed as the server parses
  them, except where the server listens (host, port) and secret flags.
- server: kind and installed version, when the launch was recognised.
- gpu: GPU facts, when a GPU probe exists (not yet: always absent).
Nothing host-specific by itself (hostname, pids, times, paths of config files) goes in, so the
same setup gives the same fingerprint on any host; any change above changes it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from envguard.knowledge import nccl, servers
from envguard.knowledge.namespaces import in_tuning_namespace, looks_secret

if TYPE_CHECKING:
    from envguard.commands.check import CheckReport

NOT_SETUP_FLAGS = frozenset({"host", "port"})
NOT_SETUP_ENV = frozenset({servers.SPT_NOENV})


def _normalised(name: str, value: str) -> Any:
    if name in nccl.TUNING_VARIABLES:
        reading = nccl.read(name, value)
        return reading.value if reading.value is not None else value
    return value


def observed_setup(report: CheckReport) -> dict[str, Any]:
    declared = report.profile.profile.declared_names()
    # Ranks see what NCCL uses; the launcher speaks for names only it has.
    ordered = sorted(report.processes, key=lambda p: not servers.is_rank(p.process.role))
    env: dict[str, Any] = {}
    for proc in reversed(ordered):
        for name, setting in (proc.effective or {}).items():
            relevant = in_tuning_namespace(name) or name in declared
            if relevant and not looks_secret(name) and name not in NOT_SETUP_ENV:
                env[name] = _normalised(name, setting.value)
    setup: dict[str, Any] = {"env": dict(sorted(env.items()))}
    for launch in report.launches:
        if launch.parsed is not None and launch.parsed.ok and launch.launch is not None:
            setup["flags"] = {
                dest: flag.value
                for dest, flag in sorted(launch.parsed.non_default().items())
                if dest not in NOT_SETUP_FLAGS and not looks_secret(dest)
            }
            installed = launch.installed.version if launch.installed else None
            setup["server"] = {"kind": launch.launch.server, "version": installed}
    return setup


def fingerprint(setup: dict[str, Any]) -> str:
    canonical = json.dumps(setup, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
