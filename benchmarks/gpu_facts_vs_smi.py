"""envguard's GPU facts (NVML through nvidia-ml-py) against `nvidia-smi -q`, on a GPU host.

    python3 benchmarks/gpu_facts_vs_smi.py

Prints both sides' key lines per GPU (driver, name, UUID, persistence, enforced power limit,
ECC and MIG current/pending, compute mode, PCIe generation and width, max and current,
application clocks) and
exits 1 on any disagreement. Part of benchmarks/gpu_acceptance.sh.
"""

from __future__ import annotations

import re
import subprocess
import sys

from envguard.probes.gpu import ALL_FACTS, APP_CLOCKS, GpuFacts, observe_gpus


def smi_sections() -> tuple[str, list[dict[str, str]]]:
    """nvidia-smi -q as (driver, one {"Section/Key": value} per GPU), by indentation."""
    text = subprocess.run(["nvidia-smi", "-q"], capture_output=True, text=True, check=True).stdout
    driver = re.search(r"^Driver Version\s*:\s*(\S+)", text, re.M)
    gpus: list[dict[str, str]] = []
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpus.append({})
            stack = []
            continue
        if not gpus or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key, sep, value = line.strip().partition(":")
        if not sep or not value.strip():
            stack.append((indent, key.strip()))
            continue
        path = "/".join([*(name for _, name in stack), key.strip()])
        gpus[-1].setdefault(path, value.strip())
    return (driver.group(1) if driver else "?"), gpus


def on(value: bool | None) -> str:
    return {True: "Enabled", False: "Disabled", None: "N/A"}[value]


LINK = "PCI/GPU Link Info"
MODES = {"default": "Default", "prohibited": "Prohibited", "exclusive_process": "Exclusive_Process"}


def pairs(gpu: GpuFacts, smi: dict[str, str]) -> list[tuple[str, str, str]]:
    """(fact, envguard's reading, nvidia-smi's) for one GPU."""
    watts = f"{gpu.power_limit_w:.2f} W" if gpu.power_limit_w is not None else "N/A"
    ours = [
        ("name", gpu.name, "Product Name"),
        ("uuid", gpu.uuid, "GPU UUID"),
        ("persistence", on(gpu.persistence), "Persistence Mode"),
        ("power limit (enforced)", watts, "GPU Power Readings/Current Power Limit"),
        ("ECC current", on(gpu.ecc), "ECC Mode/Current"),
        ("ECC pending", on(gpu.ecc_pending), "ECC Mode/Pending"),
        ("MIG current", on(gpu.mig), "MIG Mode/Current"),
        ("MIG pending", on(gpu.mig_pending), "MIG Mode/Pending"),
        ("compute mode", MODES.get(gpu.compute_mode or "", "?"), "Compute Mode"),
        ("PCIe gen max", str(gpu.pcie_gen_max), f"{LINK}/PCIe Generation/Max"),
        ("PCIe gen current", str(gpu.pcie_gen), f"{LINK}/PCIe Generation/Current"),
        ("PCIe width max", f"{gpu.pcie_width_max}x", f"{LINK}/Link Width/Max"),
        ("PCIe width current", f"{gpu.pcie_width}x", f"{LINK}/Link Width/Current"),
        # nvidia-smi names the SM clock domain "Graphics"; they are one on these GPUs.
        ("app clock SM", f"{gpu.app_clock_sm_mhz} MHz", "Applications Clocks/Graphics"),
        ("app clock memory", f"{gpu.app_clock_mem_mhz} MHz", "Applications Clocks/Memory"),
    ]
    return [(fact, value, smi.get(key, "?")) for fact, value, key in ours]


def main() -> int:
    seen = observe_gpus(None, wanted=ALL_FACTS | {APP_CLOCKS})
    driver, smi = smi_sections()
    rows = [("driver", seen.driver, driver)]
    for gpu, section in zip(seen.gpus, smi, strict=True):
        rows += [(f"GPU {gpu.nvml_index} {fact}", a, b) for fact, a, b in pairs(gpu, section)]
    width = max(len(r[0]) for r in rows)
    print(f"{'fact':<{width}}  {'envguard (NVML)':<42}  nvidia-smi -q")
    bad = 0
    for fact, ours, theirs in rows:
        # nvidia-smi spells ECC "Ecc Mode" on some drivers; compare case-insensitively.
        same = ours.casefold() == theirs.casefold()
        bad += not same
        print(f"{fact:<{width}}  {ours:<42}  {theirs}{'' if same else '   <-- differs'}")
    print(f"{len(rows) - bad} of {len(rows)} facts agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
