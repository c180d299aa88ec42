"""The host's GPUs that CUDA shows a process, from its CUDA_VISIBLE_DEVICES (docs/gpu.md)."""

from __future__ import annotations

from envguard.knowledge import gpu as known
from envguard.knowledge.gpu import VisibleEntry
from envguard.probes.gpu.facts import GpuObservation, HostGpus


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


def _visible(visible: str | None, host: HostGpus) -> tuple[list[int], list[str]]:
    """NVML indices of the GPUs CUDA shows, in CUDA's order, and notes on how."""
    if visible is None:
        return list(range(len(host.facts))), []
    chosen: list[int] = []
    notes: list[str] = []
    entries = known.visible_entries(visible)
    for entry in entries:
        index = _resolve(entry, host)
        if index is None or index in chosen:
            why = "names no GPU here" if index is None else "repeats a GPU"
            notes.append(
                f"{known.VISIBLE_DEVICES} entry {entry.text!r} {why}: CUDA shows only the "
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
            f"{known.VISIBLE_DEVICES}={visible!r}: CUDA shows only the GPUs before its first "
            "invalid entry"
        )
    names = {host.facts[i].name for i in chosen}
    if any(e.kind == "index" for e in entries) and len(names) > 1:
        notes.append(
            "indices are read in PCI bus order (NVML's); CUDA orders unlike GPUs fastest "
            f"first unless {known.DEVICE_ORDER}=PCI_BUS_ID"
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
