"""The relevant observed setup of a server, normalised, and its fingerprint.

What goes in (documented in the README, "Fingerprint"):
- env: every variable in the tuning namespaces (envguard.knowledge.tuning) and every name
  the profile declares, as the server's ranks see them (environment plus NCCL config files),
  NCCL values normalised the way NCCL reads them (`0x1000000` and `16777216` are the same
  NCCL_BUFFSIZE). A secret-looking name enters as present (`<redacted>`), never with its
  value (another token is not another setup); secret-looking parts of other values (URL
  userinfo) are redacted. SPT_NOENV (envguard's own) is left out.
- flags: every launch flag that differs from the server's default, typed as the server
  parses it, except where the server listens (host, port); a secret option (api_key,
  hf_token, ...: envguard.knowledge.redaction) enters as present, never with its value.
- server: kind and installed version, when the launch was recognised.
- gpu: when the profile has [gpu] (NVML is loaded only then): the driver, how many GPUs the
  server sees, and per fact (a single value when every GPU agrees, else one per GPU) the
  model, persistence mode, enforced power limit, ECC and MIG modes, and the PCIe link the
  slot allows (its maximum generation and width). Readings that move by the second (clocks,
  temperatures, clock events, the current PCIe link of an idle GPU) stay out, and so do
  UUIDs and bus ids (another card of the same model is the same setup).
Nothing host-specific by itself (hostname, pids, times, paths of config files) goes in, so the
same setup gives the same fingerprint on any host; any change above changes it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from envguard.knowledge import nccl, servers
from envguard.knowledge.redaction import REDACTED, is_secret_option, recorded, redact_nested
from envguard.knowledge.tuning import in_tuning_namespace

if TYPE_CHECKING:
    from envguard.evaluation.report import CheckReport
    from envguard.flags.parsed import ParsedCommandLine
    from envguard.probes.gpu import GpuObservation

NOT_SETUP_FLAGS = frozenset({"host", "port"})
NOT_SETUP_ENV = frozenset({servers.SPT_NOENV})


def _normalised(name: str, value: str) -> Any:
    if name in nccl.TUNING_VARIABLES:
        reading = nccl.read(name, value)
        if reading.value is not None:
            return reading.value
    return recorded(name, value)


def _flag_value(dest: str, value: Any) -> Any:
    """A parsed flag as recorded: a secret's presence; other strings value-redacted."""
    return REDACTED if is_secret_option(dest) else redact_nested(value)


def observed_setup(report: CheckReport) -> dict[str, Any]:
    declared = report.profile.profile.declared_names()
    # Ranks see what NCCL uses; the launcher speaks for names only it has.
    ordered = sorted(report.processes, key=lambda p: not servers.is_rank(p.process.role))
    env: dict[str, Any] = {}
    for proc in reversed(ordered):
        for name, setting in (proc.effective or {}).items():
            relevant = in_tuning_namespace(name) or name in declared
            if relevant and name not in NOT_SETUP_ENV:
                env[name] = _normalised(name, setting.value)
    setup: dict[str, Any] = {"env": dict(sorted(env.items()))}
    for launch in report.launches:
        if launch.parsed is not None and launch.parsed.ok and launch.launch is not None:
            setup["flags"] = setup_flags(launch.parsed)
            installed = launch.installed.version if launch.installed else None
            setup["server"] = {"kind": launch.launch.server, "version": installed}
    if report.gpus:
        setup["gpu"] = gpu_setup(report.gpus[0])
    return setup


def gpu_setup(seen: GpuObservation) -> dict[str, Any]:
    """The GPU facts that are part of the setup (see the module docstring)."""
    per_gpu: dict[str, list[Any]] = {
        "name": [g.name for g in seen.gpus],
        "persistence": [g.persistence for g in seen.gpus],
        "power_limit_w": [g.power_limit_w for g in seen.gpus],
        "ecc": [g.ecc for g in seen.gpus],
        "mig": [g.mig for g in seen.gpus],
        "pcie_max": [f"Gen{g.pcie_gen_max} x{g.pcie_width_max}" for g in seen.gpus],
    }
    setup: dict[str, Any] = {"driver": seen.driver, "count": len(seen.gpus)}
    for fact, values in per_gpu.items():
        setup[fact] = values[0] if len(set(values)) == 1 else values
    return setup


def setup_flags(parsed: ParsedCommandLine) -> dict[str, Any]:
    """Every flag given (on the command line or in its --config file), by destination."""
    return {
        dest: _flag_value(dest, flag.value)
        for dest, flag in sorted(parsed.non_default().items())
        if dest not in NOT_SETUP_FLAGS
    }


def fingerprint(setup: dict[str, Any]) -> str:
    canonical = json.dumps(setup, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
