"""A strict stand-in for pynvml (nvidia-ml-py), for machines without a GPU.

It answers only the NVML calls envguard's GPU probe makes, from a description of GPUs, and
fails loudly (AssertionError) on any other call, on a call before nvmlInit or after
nvmlShutdown, and on a handle it did not hand out. Tests build `FakeNvml(spec)` in process;
a subprocess gets it by putting this directory first on PYTHONPATH with FAKE_NVML naming a
JSON spec file.

spec: {"driver": "580.159.04", "cuda": 13000, "init_error": null | "LibraryNotFound" | ...,
       "gpus": [{"uuid", "name", "bus_id", "persistence", "power_limit_mw",
                 "power_default_mw", "ecc": [cur, pending], "mig": [cur, pending],
                 "compute_mode", "pcie": [gen, width, gen_max, width_max],
                 "app_clocks": [sm, mem], "clock_events": int,
                 "unsupported": [function names], "failing": [function names],
                 "mig_devices": [uuid, ...]}]}
"""

from __future__ import annotations

import json
import os
import sys
import types
from typing import Any

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_ID_APP_CLOCK_TARGET = 1


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    pass


class NVMLError_InvalidArgument(NVMLError):
    pass


class NVMLError_GpuIsLost(NVMLError):
    pass


class NVMLError_NotFound(NVMLError):
    pass


class _Pci:
    def __init__(self, bus_id: str) -> None:
        self.busId = bus_id


class FakeNvml(types.ModuleType):
    """The pynvml module as a strict fake over `spec`."""

    _ANSWERS = frozenset(
        {
            "nvmlInit", "nvmlShutdown", "nvmlSystemGetDriverVersion",
            "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount",
            "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUUID", "nvmlDeviceGetName",
            "nvmlDeviceGetPciInfo", "nvmlDeviceGetPersistenceMode",
            "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementDefaultLimit",
            "nvmlDeviceGetEccMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetComputeMode",
            "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
            "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
            "nvmlDeviceGetClock", "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
        }
    )  # fmt: skip

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__("pynvml")
        self.spec = spec
        self.calls: list[str] = []
        self.live = 0  # nvmlInit minus nvmlShutdown
        for name in ("NVML_CLOCK_SM", "NVML_CLOCK_MEM", "NVML_CLOCK_ID_APP_CLOCK_TARGET"):
            setattr(self, name, globals()[name])
        for name, value in globals().items():
            if name.startswith("NVMLError"):
                setattr(self, name, value)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected NVML call: pynvml.{name}")

    def __getattribute__(self, name: str) -> Any:
        attribute = object.__getattribute__(self, name)
        if not (name.startswith("nvml") and name in FakeNvml._ANSWERS):
            return attribute

        def call(*args: Any) -> Any:  # recorded when called, not when looked up
            self.calls.append(name)
            if name != "nvmlInit" and not object.__getattribute__(self, "live"):
                raise AssertionError(f"pynvml.{name} called without nvmlInit")
            return attribute(*args)

        return call

    # --- the system ---------------------------------------------------------------
    def nvmlInit(self) -> None:
        error = self.spec.get("init_error")
        if error:
            raise globals()[f"NVMLError_{error}"](error)
        self.live += 1

    def nvmlShutdown(self) -> None:
        assert self.live > 0, "nvmlShutdown without nvmlInit"
        self.live -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.spec["driver"])

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return int(self.spec["cuda"])

    def nvmlDeviceGetCount(self) -> int:
        return len(self.spec["gpus"])

    def nvmlDeviceGetHandleByIndex(self, index: int) -> tuple[str, int]:
        if not 0 <= index < len(self.spec["gpus"]):
            raise NVMLError_InvalidArgument(f"no GPU {index}")
        return ("gpu", index)

    # --- one GPU ----------------------------------------------------------------------
    def _gpu(self, handle: Any, function: str) -> dict[str, Any]:
        assert isinstance(handle, tuple) and handle[0] == "gpu", f"{function}: bad handle"
        gpu: dict[str, Any] = self.spec["gpus"][handle[1]]
        if function in gpu.get("unsupported", ()):
            raise NVMLError_NotSupported("Not Supported")
        if function in gpu.get("failing", ()):
            raise NVMLError_GpuIsLost("GPU is lost")
        return gpu

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        if isinstance(handle, tuple) and handle[0] == "mig":
            return str(self.spec["gpus"][handle[1]]["mig_devices"][handle[2]])
        return str(self._gpu(handle, "nvmlDeviceGetUUID")["uuid"])

    def nvmlDeviceGetName(self, handle: Any) -> str:
        return str(self._gpu(handle, "nvmlDeviceGetName")["name"])

    def nvmlDeviceGetPciInfo(self, handle: Any) -> _Pci:
        return _Pci(self._gpu(handle, "nvmlDeviceGetPciInfo")["bus_id"])

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetPersistenceMode")["persistence"])

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetEnforcedPowerLimit")["power_limit_mw"])

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetPowerManagementDefaultLimit")
        return int(gpu["power_default_mw"])

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        return list(self._gpu(handle, "nvmlDeviceGetEccMode")["ecc"])

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        return list(self._gpu(handle, "nvmlDeviceGetMigMode")["mig"])

    def nvmlDeviceGetComputeMode(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetComputeMode")["compute_mode"])

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetCurrPcieLinkGeneration")["pcie"][0])

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetCurrPcieLinkWidth")["pcie"][1])

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetMaxPcieLinkGeneration")["pcie"][2])

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetMaxPcieLinkWidth")["pcie"][3])

    def nvmlDeviceGetClock(self, handle: Any, clock: int, clock_id: int) -> int:
        assert clock_id == NVML_CLOCK_ID_APP_CLOCK_TARGET, f"clock id {clock_id} not expected"
        sm, mem = self._gpu(handle, "nvmlDeviceGetClock")["app_clocks"]
        return int({NVML_CLOCK_SM: sm, NVML_CLOCK_MEM: mem}[clock])

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        return int(self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons")["clock_events"])

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any) -> int:
        return len(self._gpu(handle, "nvmlDeviceGetMaxMigDeviceCount").get("mig_devices", ()))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, slot: int) -> tuple[str, int, int]:
        devices = self._gpu(handle, "nvmlDeviceGetMigDeviceHandleByIndex").get("mig_devices", ())
        if not 0 <= slot < len(devices):
            raise NVMLError_NotFound("Not Found")
        return ("mig", handle[1], slot)


if os.environ.get("FAKE_NVML") == "forbidden":
    # A test that expects NVML never to be loaded.
    raise AssertionError("pynvml was imported: NVML loaded without a [gpu] section")
if os.environ.get("FAKE_NVML"):
    # A subprocess under test: this module *is* pynvml, answering from the spec file.
    with open(os.environ["FAKE_NVML"]) as _spec:  # noqa: PTH123
        sys.modules[__name__] = FakeNvml(json.load(_spec))
