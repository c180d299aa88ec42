"""The strict fake NVML (tests/data/fake_nvml/pynvml.py) and GPU descriptions for it, with
the values NVML gave on a real H200 host (driver 580.159.04, CUDA 13.0)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

FAKE_NVML_DIR = Path(__file__).resolve().parent / "data" / "fake_nvml"

H200_UUIDS = (
    "GPU-58b002be-8e8b-c879-32cd-2bb288837f04",
    "GPU-606b7d42-d306-fbed-4c48-308a70a87b16",
)

H200: dict[str, Any] = {
    "name": "NVIDIA H200",
    "persistence": 1,
    "power_limit_mw": 700000,
    "power_default_mw": 700000,
    "ecc": [1, 1],
    "mig": [0, 0],
    "compute_mode": 0,
    "pcie": [5, 16, 5, 16],
    "app_clocks": [1980, 3201],
    "clock_events": 0x1,  # idle
}


def h200_host(count: int = 2, **changes: Any) -> dict[str, Any]:
    """A host of `count` H200s; `changes` apply to every GPU (gpus=[...] replaces them)."""
    gpus = [
        {**copy.deepcopy(H200), "uuid": _uuid(i), "bus_id": f"00000000:00:{6 + i:02X}.0", **changes}
        for i in range(count)
    ]
    return {"driver": "580.159.04", "cuda": 13000, "init_error": None, "gpus": gpus}


def _uuid(index: int) -> str:
    return (
        H200_UUIDS[index]
        if index < len(H200_UUIDS)
        else f"GPU-{index:08x}-0000-0000-0000-000000000000"
    )


def fake_nvml(spec: dict[str, Any]) -> Any:
    """A FakeNvml over `spec`, as a module object (a fresh load each time)."""
    loader = importlib.util.spec_from_file_location("fake_pynvml", FAKE_NVML_DIR / "pynvml.py")
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module.FakeNvml(spec)


def fake_nvml_env(tmp_path: Path, spec: dict[str, Any], pythonpath: str = "") -> dict[str, str]:
    """Environment for a subprocess whose `import pynvml` gets the fake over `spec`."""
    path = tmp_path / "nvml.json"
    path.write_text(json.dumps(spec))
    parts = [str(FAKE_NVML_DIR), *filter(None, [pythonpath])]
    return {"PYTHONPATH": ":".join(parts), "FAKE_NVML": str(path)}
