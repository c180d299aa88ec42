"""GPU facts through NVML (the nvidia-ml-py package, imported as `pynvml`), for the GPUs a
server can see.

Loaded only when a profile has a [gpu] section or a command asks for GPU facts: NVML's
initialisation is the cost (measured on an H200 host: docs/gpu.md). A fact a GPU does not
support is None; one NVML refused to read is kept as an error, so that "could not verify"
never reads as "ok".
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, NamedTuple

from envguard.errors import EnvguardError
from envguard.knowledge import gpu as facts
from envguard.knowledge.gpu import VisibleEntry

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


def observe_gpus(
    visible: str | None, nvml: Any = None, *, wanted: frozenset[str] = ALL_FACTS
) -> GpuObservation:
    """Facts of every GPU a process with CUDA_VISIBLE_DEVICES=`visible` sees (None: unset,
    every GPU). `nvml`: an initialised pynvml (load_nvml() when not given). `wanted`: the
    fact groups to read (ALL_FACTS | {APP_CLOCKS} for everything); the rest stay None."""
    nvml = nvml if nvml is not None else load_nvml()
    return seen_by(read_host(nvml, wanted=wanted), visible)


class GpuReading:
    """NVML started and every GPU of the host read beside the rest of a check (reading
    /proc, parsing flags, asking the server), in a child process of its own.

    Starting NVML is the cost of a [gpu] check: on an H200 host, importing pynvml ~15 ms,
    nvmlInit ~14 ms, the first query of each GPU ~7 ms, the facts ~8 ms more (docs/gpu.md).
    A thread would share the interpreter's lock with the check; a forked child runs on
    another core and hands back the facts as JSON through a pipe. Where this process
    already runs other threads (forking would copy their locks mid-use), a thread it is.
    """

    def __init__(self, *, wanted: frozenset[str] = ALL_FACTS) -> None:
        self._wanted = wanted
        self._result: HostGpus | BaseException | None = None
        self._child: tuple[int, int] | None = None  # (pid, read end of the pipe)
        self._thread: threading.Thread | None = None
        if threading.active_count() == 1:
            self._fork()
        else:
            self._thread = threading.Thread(target=self._in_thread, daemon=True)
            self._thread.start()

    def _in_thread(self) -> None:
        try:
            self._result = read_host(load_nvml(), wanted=self._wanted)
        except BaseException as exc:  # raised again in the caller's thread, by observe()
            self._result = exc

    def _fork(self) -> None:
        readable, writable = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: read, report, and leave without running any exit code
            os.close(readable)
            answer: dict[str, Any]
            try:
                answer = {"host": _host_data(read_host(load_nvml(), wanted=self._wanted))}
            except GpuUnavailable as exc:
                answer = {"unavailable": [exc.message, exc.hint]}
            except BaseException as exc:
                answer = {"failed": f"{type(exc).__name__}: {exc}"}
            data = json.dumps(answer).encode()
            while data:
                data = data[os.write(writable, data) :]
            os._exit(0)
        os.close(writable)
        self._child = (pid, readable)

    def observe(self, visible: str | None) -> GpuObservation:
        """The GPUs a process with CUDA_VISIBLE_DEVICES=`visible` sees; GpuUnavailable as
        load_nvml and read_host raise it."""
        self._collect()
        if isinstance(self._result, BaseException):
            raise self._result
        assert self._result is not None
        return seen_by(self._result, visible)

    def close(self) -> None:
        """Reap the child if observe() never did (a check that failed on the way)."""
        self._collect()

    def _collect(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self._child is None:
            return
        pid, readable = self._child
        self._child = None
        with os.fdopen(readable, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        try:
            answer = json.loads(data)
        except ValueError:
            answer = {"failed": "the NVML reader died"}
        if "host" in answer:
            self._result = _host_from(answer["host"])
        elif "unavailable" in answer:
            self._result = GpuUnavailable(*answer["unavailable"])
        else:
            self._result = GpuUnavailable(
                f"cannot verify GPUs: {answer['failed']}",
                hint="nvidia-smi tells whether the driver answers",
            )


def _host_data(host: HostGpus) -> dict[str, Any]:
    return {
        "driver": host.driver,
        "cuda_driver": host.cuda_driver,
        "facts": [gpu._asdict() for gpu in host.facts],
        "mig_devices": [list(m) for m in host.mig_devices],
    }


def _host_from(data: dict[str, Any]) -> HostGpus:
    def gpu(fields: dict[str, Any]) -> GpuFacts:
        events = fields["clock_events"]
        return GpuFacts(
            **{
                **fields,
                "clock_events": tuple(events) if events is not None else None,
                "errors": tuple(tuple(e) for e in fields["errors"]),
            }
        )

    return HostGpus(
        driver=data["driver"],
        cuda_driver=data["cuda_driver"],
        facts=tuple(gpu(f) for f in data["facts"]),
        mig_devices=tuple(tuple(m) for m in data["mig_devices"]),
    )


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


def seen_by(host: HostGpus, visible: str | None) -> GpuObservation:
    """The host's GPUs that CUDA shows a process with CUDA_VISIBLE_DEVICES=`visible`."""
    chosen, notes = _visible(visible, host)
    return GpuObservation(
        driver=host.driver,
        cuda_driver=host.cuda_driver,
        host_count=len(host.facts),
        gpus=tuple(host.facts[i] for i in chosen),
        visible=visible,
        notes=tuple(notes),
    )


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


def _visible(visible: str | None, host: HostGpus) -> tuple[list[int], list[str]]:
    """NVML indices of the GPUs CUDA shows, in CUDA's order, and notes on how."""
    if visible is None:
        return list(range(len(host.facts))), []
    chosen: list[int] = []
    notes: list[str] = []
    entries = facts.visible_entries(visible)
    for entry in entries:
        index = _resolve(entry, host)
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
    names = {host.facts[i].name for i in chosen}
    if any(e.kind == "index" for e in entries) and len(names) > 1:
        notes.append(
            "indices are read in PCI bus order (NVML's); CUDA orders unlike GPUs fastest "
            f"first unless {facts.DEVICE_ORDER}=PCI_BUS_ID"
        )
    return chosen, notes


def _resolve(entry: VisibleEntry, host: HostGpus) -> int | None:
    uuids = [gpu.uuid for gpu in host.facts]
    if entry.kind == "index":
        index = int(entry.text)
        return index if index < len(uuids) else None
    if entry.kind == "uuid":
        # An abbreviated UUID counts when it names exactly one GPU (CUDA's documentation).
        matches = [i for i, uuid in enumerate(uuids) if uuid.startswith(entry.text)]
        return matches[0] if len(matches) == 1 else None
    # MIG-GPU-<gpu uuid>/<gi>/<ci> (before driver 470) names its parent; MIG-<uuid> is a
    # MIG device's own UUID: its parent is the GPU that lists it.
    if entry.text.startswith("MIG-GPU-"):
        parent = entry.text.removeprefix("MIG-").split("/", 1)[0]
        return uuids.index(parent) if parent in uuids else None
    for index, devices in enumerate(host.mig_devices):
        if entry.text in devices:
            return index
    return None


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
        compute_mode=facts.COMPUTE_MODES.get(mode, str(mode)) if mode is not None else None,
        pcie_gen=read("pcie", nvml.nvmlDeviceGetCurrPcieLinkGeneration),
        pcie_width=read("pcie:width", nvml.nvmlDeviceGetCurrPcieLinkWidth),
        pcie_gen_max=read("pcie_max", nvml.nvmlDeviceGetMaxPcieLinkGeneration),
        pcie_width_max=read("pcie_max:width", nvml.nvmlDeviceGetMaxPcieLinkWidth),
        app_clock_sm_mhz=read("app_clocks", clock, nvml.NVML_CLOCK_SM, target),
        app_clock_mem_mhz=read("app_clocks:mem", clock, nvml.NVML_CLOCK_MEM, target),
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
