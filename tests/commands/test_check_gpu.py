"""`envguard check` of a profile with [gpu]: real processes, the strict fake NVML in the
envguard process (no GPU here), and the real pynvml for "NVML not available"."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envguard.evaluation.results import compare
from envguard.fingerprint import gpu_setup
from envguard.probes.gpu import observe_gpus
from tests.conftest import PROFILES, TUNED, StandIn, envguard_process
from tests.gpu_fakes import H200_UUIDS, fake_nvml, fake_nvml_env, h200_host
from tests.ledger.builders import record

GPU = """
[gpu]
count = 2
name = "NVIDIA H200"
driver_min = "570.86"
persistence = true
power_limit_min = 700
ecc = true
mig = false
compute_mode = "default"
pcie_gen_min = 5
pcie_width_min = 16
forbidden_clock_events = ["hw_slowdown", "sw_thermal_slowdown"]
"""


def gpu_profile(tmp_path: Path, body: str = GPU) -> str:
    path = tmp_path / "gpu.toml"
    path.write_text(
        f'schema_version = 2\nname = "demo-gpu"\nversion = 1\n'
        f'extends = ["{PROFILES / "demo.toml"}"]\n{body}'
    )
    return str(path)


def run(tmp_path: Path, spec: dict[str, Any] | str | None, *args: str) -> Any:
    env = {}
    if isinstance(spec, dict):
        env = fake_nvml_env(tmp_path, spec)
    elif spec == "forbidden":
        env = {"PYTHONPATH": str(Path(__file__).parent.parent / "data" / "fake_nvml"),
               "FAKE_NVML": "forbidden"}  # fmt: skip
    return envguard_process(tmp_path, "check", *args, env=env)


def test_gpus_as_tuned_pass(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    server = standin(TUNED)
    result = run(tmp_path, h200_host(), "-p", gpu_profile(tmp_path), "--pid", str(server.pid))
    assert (result.returncode, result.stderr) == (0, "")
    assert "gpus: 2 of 2 (NVIDIA H200); driver 580.159.04, CUDA 13.0\n" in result.stdout
    assert result.stdout.endswith("verdict: ok - 5 processes match demo-gpu@1 (exit 0)\n")


def test_every_kind_of_gpu_drift_is_named(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    spec = h200_host()
    second = spec["gpus"][1]
    second.update(persistence=0, power_limit_mw=500000, ecc=[1, 0], pcie=[5, 8, 5, 16],
                  clock_events=0x8)  # fmt: skip
    spec["driver"] = "550.54.15"
    server = standin(TUNED)
    result = run(tmp_path, spec, "-p", gpu_profile(tmp_path), "--pid", str(server.pid))
    assert result.returncode == 1
    gpu = f"GPU 1 ({H200_UUIDS[1]})"
    block = result.stdout.split("\nGPUs:\n", 1)[1].split("\n\n", 1)[0].splitlines()[::2]
    assert block == [
        "  gpu          driver: expected >= 570.86, found '550.54.15' [NVML]",
        f"  gpu          {gpu} persistence: expected on, found 'off' [NVML]",
        f"  gpu          {gpu} power limit: expected >= 700 W, found '500 W' [NVML]",
        f"  gpu          {gpu} ECC pending: expected on, found 'off after the next reboot' [NVML]",
        f"  gpu          {gpu} PCIe width: expected >= x16, found 'x8' [NVML]",
        f"  gpu          {gpu} clock events: expected none of hw_slowdown, sw_thermal_slowdown, "
        "found 'hw_slowdown' [NVML]",
    ]
    assert "verdict: drift - 6 findings in 5 processes" in result.stdout


def test_the_server_sees_fewer_gpus(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    server = standin({**TUNED, "CUDA_VISIBLE_DEVICES": "1,-1,0"})
    result = run(
        tmp_path, h200_host(), "-p", gpu_profile(tmp_path), "--pid", str(server.pid), "--json"
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)
    [finding] = report["findings"]
    assert (finding["kind"], finding["subject"], finding["expected"]) == ("gpu", "GPUs", "2 GPUs")
    assert finding["actual"] == "1 of the host's 2 (CUDA_VISIBLE_DEVICES '1,-1,0')"
    [server_gpus] = report["gpus"]["servers"]
    assert [g["uuid"] for g in server_gpus["gpus"]] == [H200_UUIDS[1]]
    assert "before its first invalid entry" in server_gpus["notes"][0]


def test_an_idle_gpu_below_its_link_speed_is_unverifiable_not_drift(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    spec = h200_host(pcie=[1, 16, 5, 16])  # idle: clock_events 0x1
    server = standin(TUNED)
    result = run(tmp_path, spec, "-p", gpu_profile(tmp_path), "--pid", str(server.pid))
    assert result.returncode == 3
    assert "PCIe generation: expected >= Gen5, Gen1 while idle [NVML]" in result.stdout


def test_what_nvml_cannot_read_is_unverifiable_and_says_why(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    """A fact the GPU does not support, and a query that failed: each named, with NVML's
    own words where it had some."""
    spec = h200_host(
        unsupported=["nvmlDeviceGetEnforcedPowerLimit"], failing=["nvmlDeviceGetEccMode"]
    )
    server = standin(TUNED)
    result = run(tmp_path, spec, "-p", gpu_profile(tmp_path), "--pid", str(server.pid))
    assert (result.returncode, result.stderr) == (3, "")
    gpu = f"GPU 0 ({H200_UUIDS[0]})"
    assert (
        f"unverifiable {gpu} power limit: expected >= 700 W, NVML could not read it: not "
        "supported on this GPU [NVML]"
    ) in result.stdout
    assert (
        f"unverifiable {gpu} ECC: expected on, NVML could not read it: GPU is lost [NVML]"
    ) in result.stdout


def test_without_nvml_it_is_never_ok(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    """The real nvidia-ml-py on this machine: no driver, so NVML cannot start."""
    server = standin(TUNED)
    profile = gpu_profile(tmp_path)
    result = run(tmp_path, None, "-p", profile, "--pid", str(server.pid))
    assert result.returncode == 3
    assert "GPUs: cannot verify GPUs: NVML not available (" in result.stdout
    skipped = run(tmp_path, None, "-p", profile, "--pid", str(server.pid), "--skip-gpu")
    assert skipped.returncode == 0
    assert "note: GPUs not checked (--skip-gpu)" in skipped.stdout
    as_json = json.loads(
        run(tmp_path, None, "-p", profile, "--pid", str(server.pid), "--skip-gpu", "--json").stdout
    )
    assert as_json["gpus"] == {"skipped": True, "servers": []}


def test_without_a_gpu_section_nvml_is_never_loaded(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    server = standin(TUNED)
    result = run(tmp_path, "forbidden", "-p", str(PROFILES / "demo.toml"), "--pid", str(server.pid))
    assert (result.returncode, result.stderr) == (0, "")


def gpus(spec: dict[str, Any]) -> Any:
    nvml = fake_nvml(spec)
    nvml.nvmlInit()
    return observe_gpus(None, nvml)


def test_gpu_facts_join_the_fingerprint_and_a_driver_upgrade_is_refused() -> None:
    setup = gpu_setup(gpus(h200_host()))
    assert setup == {"driver": "580.159.04", "count": 2, "name": "NVIDIA H200",
                     "persistence": True, "power_limit_w": 700.0, "ecc": True, "mig": False,
                     "pcie_max": "Gen5 x16"}  # fmt: skip
    idle, busy = (
        h200_host(),
        h200_host(clock_events=0, app_clocks=[1500, 3201], pcie=[1, 16, 5, 16]),
    )
    assert gpu_setup(gpus(idle)) == gpu_setup(gpus(busy))  # readings of the moment stay out
    mixed = h200_host()
    mixed["gpus"][1]["power_limit_mw"] = 600000
    assert gpu_setup(gpus(mixed))["power_limit_w"] == [700.0, 600.0]
    upgraded = {**h200_host(), "driver": "590.10"}
    before = dataclasses.replace(record(setup={"env": {}, "gpu": setup}), id=1)
    after = dataclasses.replace(record(setup={"env": {}, "gpu": gpu_setup(gpus(upgraded))}), id=2)
    refused = compare(before, after)
    assert refused.refusals and "gpu.driver" in refused.refusals[0]
    assert compare(before, after, ["driver"]).comparable


def test_a_gpu_section_in_a_base_profile(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    """[gpu] only in a base (NVML then starts once the profile is loaded, not before)."""
    base = tmp_path / "base.toml"
    base.write_text(f'schema_version = 2\nname = "b"\nversion = 1\n# [gpu] below\n{GPU}')
    leaf = tmp_path / "leaf.toml"
    leaf.write_text(
        f'schema_version = 1\nname = "leaf"\nversion = 1\nextends = ["{PROFILES / "demo.toml"}", "base.toml"]\n'
    )
    server = standin(TUNED)
    result = run(tmp_path, h200_host(count=1), "-p", str(leaf), "--pid", str(server.pid))
    assert result.returncode == 1
    assert "gpus: 1 of 1 (NVIDIA H200)" in result.stdout
    assert """  gpu          GPUs: expected 2 GPUs, found "1 of the host's 1""" in result.stdout


def test_a_base_that_asks_more_than_the_files_own_gpu_keys(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    """The cron line starts NVML for the file's own [gpu] keys; a base asking for more (here
    persistence) makes it read again, so that nothing is left unverified."""
    base = tmp_path / "base.toml"
    base.write_text('schema_version = 2\nname = "b"\nversion = 1\n[gpu]\npersistence = true\n')
    leaf = tmp_path / "leaf.toml"
    leaf.write_text(
        f'schema_version = 2\nname = "leaf"\nversion = 1\n'
        f'extends = ["{PROFILES / "demo.toml"}", "base.toml"]\n[gpu]\nmig = false\n'
    )
    spec = h200_host()
    spec["gpus"][1]["persistence"] = 0
    server = standin(TUNED)
    result = run(tmp_path, spec, "-p", str(leaf), "--pid", str(server.pid))
    assert result.returncode == 1, result.stdout
    assert f"GPU 1 ({H200_UUIDS[1]}) persistence: expected on, found 'off' [NVML]" in result.stdout
    assert "unverifiable" not in result.stdout
