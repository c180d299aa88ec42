"""Facts about GPUs that envguard must get right: how CUDA reads CUDA_VISIBLE_DEVICES, and
what NVML's codes mean.

Sources: CUDA Toolkit documentation, "CUDA Environment Variables" (CUDA_VISIBLE_DEVICES);
NVML API reference (nvmlClocksEventReasons, nvmlComputeMode_t); docs/gpu.md.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
NVML = "NVML"  # the source findings about GPUs name
DEVICE_ORDER = "CUDA_DEVICE_ORDER"

# nvmlClocksEventReasons (nvml.h: nvmlClocksEventReasonGpuIdle = 0x1, ...), by the names a
# profile uses. "Throttle reasons" before driver 535.
CLOCK_EVENTS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}

# nvmlComputeMode_t: 1 (exclusive thread) was removed from the API.
COMPUTE_MODES: dict[int, str] = {0: "default", 2: "prohibited", 3: "exclusive_process"}
ComputeMode = Literal["default", "prohibited", "exclusive_process"]

ClockEvent = Literal[
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
]


def clock_events(mask: int) -> tuple[str, ...]:
    """The named reasons set in an NVML clock-event bit mask (unknown bits as hex)."""
    names = tuple(name for name, bit in CLOCK_EVENTS.items() if mask & bit)
    rest = mask & ~sum(CLOCK_EVENTS.values())
    return names + ((f"0x{rest:x}",) if rest else ())


class VisibleEntry(NamedTuple):
    """One entry of CUDA_VISIBLE_DEVICES."""

    kind: Literal["index", "uuid", "mig"]
    text: str


_INDEX = re.compile(r"\d+\Z")


def visible_entries(value: str) -> list[VisibleEntry]:
    """CUDA_VISIBLE_DEVICES split into entries, in order, up to the first that can never
    name a GPU (a negative or malformed index): CUDA shows only the devices listed before
    an invalid entry (`0,2,-1,1` shows 0 and 2). Whether an index or UUID names a GPU that
    exists is decided against the host's GPUs (probes.gpu)."""
    entries: list[VisibleEntry] = []
    for raw in value.split(","):
        text = raw  # not stripped: the documentation shows no spaces, and none is assumed
        if _INDEX.match(text):
            entries.append(VisibleEntry("index", text))
        elif text.startswith("GPU-"):
            entries.append(VisibleEntry("uuid", text))
        elif text.startswith("MIG-"):
            entries.append(VisibleEntry("mig", text))
        else:
            break
    return entries


def version_key(version: str) -> tuple[int, ...]:
    """A dotted driver version as numbers: 580.159.04 -> (580, 159, 4)."""
    return tuple(int(part) for part in re.findall(r"\d+", version))
