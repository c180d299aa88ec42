"""GPU facts through NVML (the nvidia-ml-py package, imported as `pynvml`), for the GPUs a
server can see.

Loaded only when a profile has a [gpu] section or a command asks for GPU facts: NVML's
initialisation is the cost (measured on an H200 host: docs/gpu.md). A fact a GPU does not
support is None; one NVML refused to read is kept as an error, so that "could not verify"
never reads as "ok". The package: `facts` (what is read, and its shapes), `nvml` (reading
it), `visible` (the GPUs CUDA_VISIBLE_DEVICES shows) and `reading` (all of it beside a check).
"""

from envguard.probes.gpu.facts import (
    ALL_FACTS,
    APP_CLOCKS,
    FINGERPRINT_FACTS,
    KEY_FACTS,
    GpuFacts,
    GpuObservation,
    GpuUnavailable,
    HostGpus,
    facts_for,
)
from envguard.probes.gpu.nvml import load_nvml, observe_gpus, read_host, release_nvml
from envguard.probes.gpu.reading import GpuReading
from envguard.probes.gpu.visible import seen_by

__all__ = [
    "ALL_FACTS",
    "APP_CLOCKS",
    "FINGERPRINT_FACTS",
    "KEY_FACTS",
    "GpuFacts",
    "GpuObservation",
    "GpuReading",
    "GpuUnavailable",
    "HostGpus",
    "facts_for",
    "load_nvml",
    "observe_gpus",
    "read_host",
    "release_nvml",
    "seen_by",
]
