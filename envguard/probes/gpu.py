"""GPU facts through NVML (the nvidia-ml-py package, imported as `pynvml`), for the GPUs a
server can see.

Loaded only when a profile has a [gpu] section or a command asks for GPU facts: NVML's
initialisation is the cost (measured on an H200 host: docs/gpu.md). A fact a GPU does not
support is None; one NVML refused to read is kept as an error, so that "could not verify"
never reads as "ok".
"""

from __future__ import annotations

from typing import Any, NamedTuple

from envguard.errors import EnvguardError
from envguard.knowledge import gpu as facts
from envguard.knowledge.gpu import VisibleEntry


class GpuUnavailable(EnvguardError):
    """NVML cannot be loaded or initialised here (exit 3: could not verify)."""


class GpuFacts(NamedTuple):
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


def load_nvml() -> Any:
    """The initialised pynvml module; GpuUnavailable when there is no NVML to ask."""
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
    return pynvml


def observe_gpus(visible: str | None, nvml: Any = None, *, clocks: bool = False) -> GpuObservation:
    """Facts of every GPU a process with CUDA_VISIBLE_DEVICES=`visible` sees (None: unset,
    every GPU). `nvml`: an initialised pynvml (load_nvml() when not given). `clocks`: read
    the application clock targets too (~1-6 ms a GPU; no check needs them)."""
    own = nvml is None
    nvml = load_nvml() if own else nvml
    try:
        count = nvml.nvmlDeviceGetCount()
        every = _each_gpu(nvml, count, clocks)
        handles = [gpu[0] for gpu in every]
        uuids = [gpu[1].uuid for gpu in every]
        chosen, notes = _visible(nvml, visible, handles, uuids)
        cuda = _call(nvml, nvml.nvmlSystemGetCudaDriverVersion_v2)
        return GpuObservation(
            driver=_text(nvml.nvmlSystemGetDriverVersion()),
            cuda_driver=f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
            host_count=count,
            gpus=tuple(every[i][1] for i in chosen),
            visible=visible,
            notes=tuple(notes),
        )
    except nvml.NVMLError as exc:
        raise GpuUnavailable(
            f"cannot verify GPUs: NVML failed ({exc})",
            hint="nvidia-smi tells whether the driver answers; a lost GPU needs a reset",
        ) from None
    finally:
        if own:
            nvml.nvmlShutdown()


def _each_gpu(nvml: Any, count: int, clocks: bool) -> list[tuple[Any, GpuFacts]]:
    """(handle, facts) of every GPU of the host, read one thread a GPU. The first queries
    of a GPU cost the driver milliseconds each (measured on an H200: docs/gpu.md); NVML
    is thread-safe (NVML API reference, "Thread Safety") and ctypes lets go of the GIL
    during each call, so eight GPUs take about as long as one."""

    def one(index: int) -> tuple[Any, GpuFacts]:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        return handle, _facts(nvml, index, handle, _text(nvml.nvmlDeviceGetUUID(handle)), clocks)

    if count <= 1:
        return [one(i) for i in range(count)]
    import threading

    results: list[tuple[Any, GpuFacts] | BaseException | None] = [None] * count

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
    done: list[tuple[Any, GpuFacts]] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        done.append(result)
    return done


def _visible(
    nvml: Any, visible: str | None, handles: list[Any], uuids: list[str]
) -> tuple[list[int], list[str]]:
    """NVML indices of the GPUs CUDA shows, in CUDA's order, and notes on how."""
    if visible is None:
        return list(range(len(handles))), []
    chosen: list[int] = []
    notes: list[str] = []
    entries = facts.visible_entries(visible)
    for entry in entries:
        index = _resolve(nvml, entry, handles, uuids)
        if index is None or index in chosen:
            why = "names no GPU here" if index is None else "repeats a GPU"
            notes.append(
                f"{facts.VISIBLE_DEVICES} entry {entry.text!r} {why}: CUDA shows only the "
                "GPUs listed before it"
            )
            break
        chosen.append(index)
        if entry.kind == "mig":
            if len(entries) > 1:
                notes.append("CUDA enumerates a single MIG device: entries after it are unused")
            break
    if len(entries) < len(visible.split(",")) and not notes:
        notes.append(
            f"{facts.VISIBLE_DEVICES}={visible!r}: CUDA shows only the GPUs before its first "
            "invalid entry"
        )
    if (
        any(e.kind == "index" for e in entries)
        and len({_text_name(nvml, handles[i]) for i in chosen}) > 1
    ):
        notes.append(
            "indices are read in PCI bus order (NVML's); CUDA orders unlike GPUs fastest "
            f"first unless {facts.DEVICE_ORDER}=PCI_BUS_ID"
        )
    return chosen, notes


def _text_name(nvml: Any, handle: Any) -> str:
    return _text(nvml.nvmlDeviceGetName(handle))


def _resolve(nvml: Any, entry: VisibleEntry, handles: list[Any], uuids: list[str]) -> int | None:
    if entry.kind == "index":
        index = int(entry.text)
        return index if index < len(handles) else None
    if entry.kind == "uuid":
        # An abbreviated UUID counts when it names exactly one GPU (CUDA's documentation).
        matches = [i for i, uuid in enumerate(uuids) if uuid.startswith(entry.text)]
        return matches[0] if len(matches) == 1 else None
    # MIG-GPU-<gpu uuid>/<gi>/<ci> (before driver 470) names its parent; MIG-<uuid> is a
    # MIG device's own UUID: find its parent among each GPU's MIG devices.
    if entry.text.startswith("MIG-GPU-"):
        parent = entry.text.removeprefix("MIG-").split("/", 1)[0]
        return uuids.index(parent) if parent in uuids else None
    for index, handle in enumerate(handles):
        for slot in range(_call(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except nvml.NVMLError:
                continue  # an empty slot
            if _text(nvml.nvmlDeviceGetUUID(mig)) == entry.text:
                return index
    return None


def _facts(nvml: Any, index: int, handle: Any, uuid: str, clocks: bool) -> GpuFacts:
    errors: list[tuple[str, str]] = []

    def read(fact: str, function: Any, *args: Any) -> Any:
        try:
            return function(handle, *args)
        except nvml.NVMLError_NotSupported:
            return None
        except nvml.NVMLError as exc:
            errors.append((fact, str(exc)))
            return None

    def app_clock(clock: int) -> tuple[Any, ...]:
        return nvml.nvmlDeviceGetClock, clock, nvml.NVML_CLOCK_ID_APP_CLOCK_TARGET

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
            read("power_default", nvml.nvmlDeviceGetPowerManagementDefaultLimit)
        ),
        ecc=_flag(ecc[0]),
        ecc_pending=_flag(ecc[1]),
        mig=_flag(mig[0]),
        mig_pending=_flag(mig[1]),
        compute_mode=facts.COMPUTE_MODES.get(mode, str(mode)) if mode is not None else None,
        pcie_gen=read("pcie_gen", nvml.nvmlDeviceGetCurrPcieLinkGeneration),
        pcie_width=read("pcie_width", nvml.nvmlDeviceGetCurrPcieLinkWidth),
        pcie_gen_max=read("pcie_gen_max", nvml.nvmlDeviceGetMaxPcieLinkGeneration),
        pcie_width_max=read("pcie_width_max", nvml.nvmlDeviceGetMaxPcieLinkWidth),
        app_clock_sm_mhz=read("app_clock_sm", *app_clock(nvml.NVML_CLOCK_SM)) if clocks else None,
        app_clock_mem_mhz=read("app_clock_mem", *app_clock(nvml.NVML_CLOCK_MEM))
        if clocks
        else None,
        clock_events=facts.clock_events(events) if events is not None else None,
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
