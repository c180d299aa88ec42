"""What is read of a GPU, in what shape, and which profile keys need which facts."""

from __future__ import annotations

from typing import NamedTuple

from envguard.errors import EnvguardError

# What can be read of each GPU besides its name and UUID, by group. Each group's first query
# costs the driver up to a few ms a GPU (docs/gpu.md), so a check reads what it needs.
ALL_FACTS = frozenset(
    {"bus_id", "persistence", "power_limit", "ecc", "mig", "compute_mode", "pcie", "pcie_max",
     "clock_events"}
)  # fmt: skip
APP_CLOCKS = "app_clocks"  # the application clock targets: no check needs them
# The fact groups each key of a profile's [gpu] section needs read (name, UUID: always).
KEY_FACTS: dict[str, frozenset[str]] = {
    "count": frozenset(),
    "name": frozenset(),
    "driver": frozenset(),
    "driver_min": frozenset(),
    "persistence": frozenset({"persistence"}),
    "power_limit_min": frozenset({"power_limit"}),
    "ecc": frozenset({"ecc"}),
    "mig": frozenset({"mig"}),
    "compute_mode": frozenset({"compute_mode"}),
    # An idle GPU's link speed proves nothing: the idle reason decides (evaluation.gpu).
    "pcie_gen_min": frozenset({"pcie", "pcie_max", "clock_events"}),
    "pcie_width_min": frozenset({"pcie"}),
    "forbidden_clock_events": frozenset({"clock_events"}),
}
# The facts that are part of the setup's fingerprint (envguard.fingerprint.gpu_setup).
FINGERPRINT_FACTS = frozenset({"persistence", "power_limit", "ecc", "mig", "pcie_max"})


def facts_for(keys: set[str]) -> frozenset[str]:
    """The fact groups to read for a [gpu] section that sets `keys` (unknown: every one)."""
    if not keys <= KEY_FACTS.keys():
        return ALL_FACTS
    return frozenset().union(*(KEY_FACTS[key] for key in keys))


class GpuUnavailable(EnvguardError):
    """NVML cannot be loaded or initialised here (exit 3: could not verify)."""


class GpuFacts(NamedTuple):
    """One GPU. A fact is None where it was not asked for or the GPU does not support it;
    one NVML failed to read is in `errors`."""

    nvml_index: int  # NVML's index (PCI bus order)
    uuid: str
    name: str
    bus_id: str | None
    persistence: bool | None
    power_limit_w: float | None  # enforced
    power_default_w: float | None
    ecc: bool | None
    ecc_pending: bool | None
    mig: bool | None
    mig_pending: bool | None
    compute_mode: str | None
    pcie_gen: int | None
    pcie_width: int | None
    pcie_gen_max: int | None
    pcie_width_max: int | None
    app_clock_sm_mhz: int | None
    app_clock_mem_mhz: int | None
    clock_events: tuple[str, ...] | None
    errors: tuple[tuple[str, str], ...] = ()  # (fact, what NVML said)


class GpuObservation(NamedTuple):
    driver: str
    cuda_driver: str | None  # "13.0"
    host_count: int
    gpus: tuple[GpuFacts, ...]  # the GPUs the server sees, in CUDA's order
    visible: str | None  # CUDA_VISIBLE_DEVICES as the server has it (None: unset)
    notes: tuple[str, ...] = ()


class HostGpus(NamedTuple):
    """Every GPU of the host as NVML reports it (before CUDA_VISIBLE_DEVICES chooses)."""

    driver: str
    cuda_driver: str | None  # "13.0"
    facts: tuple[GpuFacts, ...]
    mig_devices: tuple[tuple[str, ...], ...]  # the MIG devices' UUIDs of each GPU in MIG mode
