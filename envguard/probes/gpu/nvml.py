"""Reading GPU facts through NVML (nvidia-ml-py, imported as `pynvml`)."""

from __future__ import annotations

import threading
from typing import Any

from envguard.knowledge import gpu as known
from envguard.probes.gpu.facts import ALL_FACTS, GpuFacts, GpuObservation, GpuUnavailable, HostGpus
from envguard.probes.gpu.visible import seen_by

_started: list[Any] = []  # the initialised pynvml, once this process has started NVML


def load_nvml() -> Any:
    """The initialised pynvml module; GpuUnavailable when there is no NVML to ask.

    NVML is started once a process and left running: a second check in the same process
    (bench checks before and after the run) finds it warm, and the driver releases it when
    the process exits (nvmlShutdown alone costs ~5 ms on an H200 host: docs/gpu.md)."""
    if _started:
        return _started[0]
    hint = "run where the NVIDIA driver is loaded, or add --skip-gpu to check the rest"
    try:
        import pynvml
    except ImportError as exc:
        raise GpuUnavailable(
            f"cannot verify GPUs: NVML not available (no pynvml: {exc})",
            hint="pip install nvidia-ml-py; " + hint,
        ) from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise GpuUnavailable(f"cannot verify GPUs: NVML not available ({exc})", hint=hint) from None
    _started.append(pynvml)
    return pynvml


def release_nvml() -> None:
    """Shut NVML down where this process started it: for a process that lives on (a
    foreground `envguard launch` supervising its server for days), not one about to exit."""
    if _started:
        _started.pop().nvmlShutdown()


def observe_gpus(
    visible: str | None, nvml: Any = None, *, wanted: frozenset[str] = ALL_FACTS
) -> GpuObservation:
    """Facts of every GPU a process with CUDA_VISIBLE_DEVICES=`visible` sees (None: unset,
    every GPU). `nvml`: an initialised pynvml (load_nvml() when not given). `wanted`: the
    fact groups to read (ALL_FACTS | {APP_CLOCKS} for everything); the rest stay None."""
    nvml = nvml if nvml is not None else load_nvml()
    return seen_by(read_host(nvml, wanted=wanted), visible)


def read_host(nvml: Any, *, wanted: frozenset[str] = ALL_FACTS) -> HostGpus:
    """Every GPU of the host; GpuUnavailable when NVML fails on the way. MIG mode is
    always read: a GPU in MIG mode has its MIG devices listed (CUDA_VISIBLE_DEVICES may
    name one)."""
    try:
        every = _each_gpu(nvml, nvml.nvmlDeviceGetCount(), wanted | {"mig"})
        cuda = _call(nvml, nvml.nvmlSystemGetCudaDriverVersion_v2)
        return HostGpus(
            driver=_text(nvml.nvmlSystemGetDriverVersion()),
            cuda_driver=f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
            facts=tuple(facts for facts, _ in every),
            mig_devices=tuple(migs for _, migs in every),
        )
    except nvml.NVMLError as exc:
        raise _failed(exc) from None


def _failed(exc: Exception) -> GpuUnavailable:
    return GpuUnavailable(
        f"cannot verify GPUs: NVML failed ({exc})",
        hint="nvidia-smi tells whether the driver answers; a lost GPU needs a reset",
    )


def _each_gpu(
    nvml: Any, count: int, wanted: frozenset[str]
) -> list[tuple[GpuFacts, tuple[str, ...]]]:
    """(facts, MIG device UUIDs) of every GPU of the host, one thread a GPU. The first
    queries of a GPU cost the driver milliseconds each (docs/gpu.md); NVML is thread-safe
    (NVML API reference, "Thread Safety") and ctypes lets go of the GIL during each call."""

    def one(index: int) -> tuple[GpuFacts, tuple[str, ...]]:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        gpu = _facts(nvml, index, handle, _text(nvml.nvmlDeviceGetUUID(handle)), wanted)
        return gpu, (_mig_devices(nvml, handle) if gpu.mig else ())

    if count <= 1:
        return [one(i) for i in range(count)]
    results: list[tuple[GpuFacts, tuple[str, ...]] | BaseException | None] = [None] * count

    def work(index: int) -> None:
        try:
            results[index] = one(index)
        except BaseException as exc:  # re-raised below, in the caller's thread
            results[index] = exc

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done: list[tuple[GpuFacts, tuple[str, ...]]] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        done.append(result)
    return done


def _mig_devices(nvml: Any, handle: Any) -> tuple[str, ...]:
    found = []
    for slot in range(_call(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
        try:
            device = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError:
            continue  # an empty slot
        found.append(_text(nvml.nvmlDeviceGetUUID(device)))
    return tuple(found)


def _facts(nvml: Any, index: int, handle: Any, uuid: str, wanted: frozenset[str]) -> GpuFacts:
    errors: list[tuple[str, str]] = []

    def read(fact: str, function: Any, *args: Any) -> Any:
        if fact.partition(":")[0] not in wanted:
            return None
        try:
            return function(handle, *args)
        except nvml.NVMLError_NotSupported:
            return None
        except nvml.NVMLError as exc:
            errors.append((fact.partition(":")[0], str(exc)))
            return None

    clock, target = nvml.nvmlDeviceGetClock, nvml.NVML_CLOCK_ID_APP_CLOCK_TARGET
    ecc = read("ecc", nvml.nvmlDeviceGetEccMode) or (None, None)
    mig = read("mig", nvml.nvmlDeviceGetMigMode) or (None, None)
    pci = read("bus_id", nvml.nvmlDeviceGetPciInfo)
    mode = read("compute_mode", nvml.nvmlDeviceGetComputeMode)
    events = read("clock_events", _events_function(nvml))
    return GpuFacts(
        nvml_index=index,
        uuid=uuid,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        bus_id=_text(pci.busId) if pci is not None else None,
        persistence=_flag(read("persistence", nvml.nvmlDeviceGetPersistenceMode)),
        power_limit_w=_watts(read("power_limit", nvml.nvmlDeviceGetEnforcedPowerLimit)),
        power_default_w=_watts(
            read("power_limit:default", nvml.nvmlDeviceGetPowerManagementDefaultLimit)
        ),
        ecc=_flag(ecc[0]),
        ecc_pending=_flag(ecc[1]),
        mig=_flag(mig[0]),
        mig_pending=_flag(mig[1]),
        compute_mode=known.COMPUTE_MODES.get(mode, str(mode)) if mode is not None else None,
        pcie_gen=read("pcie", nvml.nvmlDeviceGetCurrPcieLinkGeneration),
        pcie_width=read("pcie:width", nvml.nvmlDeviceGetCurrPcieLinkWidth),
        pcie_gen_max=read("pcie_max", nvml.nvmlDeviceGetMaxPcieLinkGeneration),
        pcie_width_max=read("pcie_max:width", nvml.nvmlDeviceGetMaxPcieLinkWidth),
        app_clock_sm_mhz=read("app_clocks", clock, nvml.NVML_CLOCK_SM, target),
        app_clock_mem_mhz=read("app_clocks:mem", clock, nvml.NVML_CLOCK_MEM, target),
        clock_events=known.clock_events(events) if events is not None else None,
        errors=tuple(errors),
    )


def _events_function(nvml: Any) -> Any:
    # Renamed from "throttle reasons" in driver 535 / nvidia-ml-py 12.535.
    return getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    )


def _call(nvml: Any, function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except nvml.NVMLError:
        return None


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _flag(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else milliwatts / 1000
