"""Evaluate the GPUs a server sees (NVML facts) against a profile's [gpu] section."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envguard.evaluation.findings import Draft, Finding, placed
from envguard.knowledge.gpu import NVML, VISIBLE_DEVICES, version_key
from envguard.probes.gpu import (
    FINGERPRINT_FACTS,
    GpuFacts,
    GpuObservation,
    GpuReading,
    GpuUnavailable,
    facts_for,
)
from envguard.profile.schema import GpuSection

SOURCE = NVML


def facts_needed(spec: GpuSection) -> frozenset[str]:
    """The fact groups (probes.gpu) that checking `spec` reads; name and UUID always."""
    given = {key for key, value in spec._asdict().items() if value not in (None, ())}
    return facts_for(given)


def start_reading(spec: GpuSection, *, fingerprint: bool = False) -> GpuReading | None:
    """NVML started beside the check (probes.gpu.GpuReading) for the facts checking `spec`
    needs, and the fingerprint's for bench and watch; None for a profile without [gpu]:
    NVML is never loaded."""
    if spec.is_empty():
        return None
    return GpuReading(
        wanted=facts_needed(spec) | (FINGERPRINT_FACTS if fingerprint else frozenset())
    )


def unavailable(exc: GpuUnavailable) -> Finding:
    """The finding of a [gpu] profile checked where NVML cannot answer: never ok."""
    [finding] = placed(
        [
            Draft(
                kind="unverifiable",
                subject="GPUs",
                expected=None,
                actual=exc.message,
                source=SOURCE,
                hint="run the check where the NVIDIA driver is loaded, or add --skip-gpu to "
                "check the rest (the output then says so)",
            )
        ],
        None,
        None,
    )
    return finding


def evaluate_gpus(spec: GpuSection, seen: GpuObservation) -> list[Finding]:
    """Findings of kind `gpu` (a GPU is not as the profile says) or `unverifiable` (NVML
    could not tell); server-wide, so without a pid."""
    return placed(_drafts(spec, seen), None, None)


def _drafts(spec: GpuSection, seen: GpuObservation) -> Iterator[Draft]:
    if spec.count is not None and len(seen.gpus) != spec.count:
        shown = "unset" if seen.visible is None else repr(seen.visible)
        yield Draft(
            kind="gpu",
            subject="GPUs",
            expected=f"{spec.count} GPUs",
            actual=f"{len(seen.gpus)} of the host's {seen.host_count} ({VISIBLE_DEVICES} {shown})",
            source=SOURCE,
            hint=f"give the server {spec.count} GPUs ({VISIBLE_DEVICES}), and check that "
            "every GPU is up (nvidia-smi)",
        )
    if spec.driver is not None and not re.fullmatch(spec.driver, seen.driver):
        yield _driver(f"matches /{spec.driver}/", seen.driver)
    if spec.driver_min is not None and version_key(seen.driver) < version_key(spec.driver_min):
        yield _driver(f">= {spec.driver_min}", seen.driver)
    for gpu in seen.gpus:
        yield from _Judge(gpu).drafts(spec)


def _driver(expected: str, actual: str) -> Draft:
    return Draft(
        kind="gpu",
        subject="driver",
        expected=expected,
        actual=actual,
        source=SOURCE,
        hint="the driver changed (an upgrade?): measure again and update the profile, or "
        "reinstall the driver it was tuned with",
    )


class _Judge:
    """The findings of one GPU."""

    def __init__(self, gpu: GpuFacts) -> None:
        self.gpu = gpu
        self.subject = f"GPU {gpu.nvml_index} ({gpu.uuid})"
        self.failed = dict(gpu.errors)

    def differs(
        self, fact: str, group: str, actual: object, expected: str, shown: str, hint: str
    ) -> Draft:
        """A `gpu` finding, or `unverifiable` where NVML had no answer (`actual` None); the
        fact `group` (probes.gpu) is where a failed query's error was kept."""
        if actual is None:
            return Draft(
                kind="unverifiable",
                subject=f"{self.subject} {fact}",
                expected=expected,
                actual="NVML could not read it: "
                + self.failed.get(group, "not supported on this GPU"),
                source=SOURCE,
                hint="nvidia-smi -q shows what the driver reports",
            )
        return Draft(
            kind="gpu",
            subject=f"{self.subject} {fact}",
            expected=expected,
            actual=shown,
            source=SOURCE,
            hint=hint,
        )

    def drafts(self, spec: GpuSection) -> Iterator[Draft]:
        gpu = self.gpu
        if spec.name is not None and not re.fullmatch(spec.name, gpu.name):
            yield self.differs(
                "name", "name", gpu.name, f"matches /{spec.name}/", gpu.name, "another GPU model"
            )
        if spec.persistence is not None and gpu.persistence != spec.persistence:
            yield self.differs(
                "persistence",
                "persistence",
                gpu.persistence,
                _on(spec.persistence),
                _on(gpu.persistence),
                "persistence mode is lost on reboot: enable nvidia-persistenced",
            )
        limit = gpu.power_limit_w
        if spec.power_limit_min is not None and (limit is None or limit < spec.power_limit_min):
            default = f" (default {gpu.power_default_w:g} W)" if gpu.power_default_w else ""
            yield self.differs(
                "power limit",
                "power_limit",
                limit,
                f">= {spec.power_limit_min:g} W",
                f"{limit:g} W" if limit is not None else "",
                f"the enforced power cap was lowered{default}: nvidia-smi -q -d POWER",
            )
        yield from self._modes(spec)
        yield from self._pcie(spec)
        yield from self._clock_events(spec)

    def _modes(self, spec: GpuSection) -> Iterator[Draft]:
        gpu = self.gpu
        for fact, wanted, current, pending in (
            ("ECC", spec.ecc, gpu.ecc, gpu.ecc_pending),
            ("MIG", spec.mig, gpu.mig, gpu.mig_pending),
        ):
            if wanted is None:
                continue
            if current != wanted:
                yield self.differs(
                    fact,
                    fact.lower(),
                    current,
                    _on(wanted),
                    _on(current),
                    f"{fact} mode is not as tuned",
                )
            elif pending is not None and pending != wanted:
                yield self.differs(
                    f"{fact} pending",
                    fact.lower(),
                    pending,
                    _on(wanted),
                    f"{_on(pending)} after the next reboot",
                    f"a {fact} change is pending for the next reboot: undo it",
                )
        if spec.compute_mode is not None and gpu.compute_mode != spec.compute_mode:
            yield self.differs(
                "compute mode",
                "compute_mode",
                gpu.compute_mode,
                spec.compute_mode,
                str(gpu.compute_mode),
                "the compute mode is not as tuned: nvidia-smi -q -d COMPUTE",
            )

    def _pcie(self, spec: GpuSection) -> Iterator[Draft]:
        gpu = self.gpu
        if spec.pcie_gen_min is not None:
            wanted = f">= Gen{spec.pcie_gen_min}"
            if gpu.pcie_gen_max is not None and gpu.pcie_gen_max < spec.pcie_gen_min:
                yield self.differs(
                    "PCIe generation",
                    "pcie_max",
                    gpu.pcie_gen_max,
                    wanted,
                    f"Gen{gpu.pcie_gen_max} at most",
                    "the link cannot reach it: check the slot, riser and BIOS settings",
                )
            elif gpu.pcie_gen is not None and gpu.pcie_gen < spec.pcie_gen_min and self.idle:
                # GPUs lower the link speed while idle and raise it under load (nvml.h,
                # nvmlDeviceGetCurrPcieLinkGeneration): an idle reading proves nothing.
                yield Draft(
                    kind="unverifiable",
                    subject=f"{self.subject} PCIe generation",
                    expected=wanted,
                    actual=f"Gen{gpu.pcie_gen} while idle",
                    source=SOURCE,
                    hint="an idle GPU lowers its link speed: check again under load",
                )
            elif gpu.pcie_gen is None or gpu.pcie_gen < spec.pcie_gen_min:
                yield self.differs(
                    "PCIe generation",
                    "pcie",
                    gpu.pcie_gen,
                    wanted,
                    f"Gen{gpu.pcie_gen} under load",
                    "the link trained down: reseat the card, check the slot and riser",
                )
        width = gpu.pcie_width
        if spec.pcie_width_min is not None and (width is None or width < spec.pcie_width_min):
            yield self.differs(
                "PCIe width",
                "pcie",
                width,
                f">= x{spec.pcie_width_min}",
                f"x{width}",
                "the link trained to fewer lanes: reseat the card, check the slot and riser",
            )

    @property
    def idle(self) -> bool:
        return "gpu_idle" in (self.gpu.clock_events or ())

    def _clock_events(self, spec: GpuSection) -> Iterator[Draft]:
        if not spec.forbidden_clock_events:
            return
        expected = "none of " + ", ".join(spec.forbidden_clock_events)
        events = self.gpu.clock_events
        active = [e for e in spec.forbidden_clock_events if e in (events or ())]
        if events is None or active:
            yield self.differs(
                "clock events",
                "clock_events",
                events,
                expected,
                ", ".join(active),
                "the GPU is slowing its clocks now: check cooling and power "
                "(nvidia-smi -q -d PERFORMANCE)",
            )


def _on(value: bool | None) -> str:
    return {True: "on", False: "off", None: "unknown"}[value]
