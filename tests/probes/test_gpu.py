"""GPU facts through NVML: the strict fake where no GPU exists, and the real pynvml on this
machine for "NVML not available"."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from envguard.evaluation.gpu import facts_needed
from envguard.probes import gpu as gpu_probe
from envguard.probes.gpu import (
    ALL_FACTS,
    APP_CLOCKS,
    GpuReading,
    GpuUnavailable,
    load_nvml,
    observe_gpus,
)
from envguard.profile.schema import GpuSection
from tests.gpu_fakes import H200_UUIDS, fake_nvml, h200_host


def observed(
    visible: str | None, spec: dict[str, Any] | None = None, wanted: frozenset[str] = ALL_FACTS
) -> Any:
    nvml = fake_nvml(spec or h200_host())
    nvml.nvmlInit()
    result = observe_gpus(visible, nvml, wanted=wanted)
    nvml.nvmlShutdown()
    assert nvml.live == 0
    return result


def test_every_fact_of_every_gpu() -> None:
    seen = observed(None)
    assert (seen.driver, seen.cuda_driver, seen.host_count) == ("580.159.04", "13.0", 2)
    assert [g.uuid for g in seen.gpus] == list(H200_UUIDS)
    gpu = seen.gpus[0]
    assert gpu._replace(uuid="", bus_id="") == gpu._replace(
        nvml_index=0, uuid="", bus_id="", name="NVIDIA H200", persistence=True,
        power_limit_w=700.0, power_default_w=700.0, ecc=True, ecc_pending=True, mig=False,
        mig_pending=False, compute_mode="default", pcie_gen=5, pcie_width=16, pcie_gen_max=5,
        pcie_width_max=16, app_clock_sm_mhz=None, app_clock_mem_mhz=None,
        clock_events=("gpu_idle",), errors=(),
    )  # fmt: skip
    assert seen.notes == ()
    # The application clock targets only when asked (no check needs them; each costs the
    # driver 1-6 ms a GPU on an H200).
    clocked = observed(None, wanted=ALL_FACTS | {APP_CLOCKS}).gpus[1]
    assert (clocked.app_clock_sm_mhz, clocked.app_clock_mem_mhz) == (1980, 3201)


def test_a_gpu_that_fails_to_answer_fails_the_whole_reading() -> None:
    spec = h200_host(count=4)
    spec["gpus"][2]["failing"] = ["nvmlDeviceGetUUID"]
    with pytest.raises(GpuUnavailable, match=r"NVML failed \(GPU is lost\)"):
        observed(None, spec)


@pytest.mark.parametrize(
    ("visible", "indices", "note"),
    [
        ("1", [1], None),
        ("1,0", [1, 0], None),
        ("0,-1,1", [0], "before its first invalid entry"),
        ("0,7,1", [0], "entry '7' names no GPU here"),
        ("", [], "before its first invalid entry"),
        ("0,0", [0], "entry '0' repeats a GPU"),
        ("GPU-606b", [1], None),
        ("GPU-", [], "entry 'GPU-' names no GPU here"),  # a prefix of both: ambiguous
        (f"MIG-{H200_UUIDS[1]}/1/0", [1], None),  # before driver 470: the parent's UUID
        ("MIG-GPU-ffffffff/1/0", [], "names no GPU here"),
        ("MIG-4f1e6b35-aaaa-bbbb-cccc-000000000001,0", [1], "a single MIG device"),
        (" 1", [], "before its first invalid entry"),
    ],
)
def test_the_gpus_cuda_shows(visible: str, indices: list[int], note: str | None) -> None:
    spec = h200_host()
    spec["gpus"][1]["mig"] = [1, 1]  # in MIG mode: its MIG devices are listed
    spec["gpus"][1]["mig_devices"] = ["MIG-4f1e6b35-aaaa-bbbb-cccc-000000000001"]
    seen = observed(visible, spec)
    assert [g.nvml_index for g in seen.gpus] == indices
    if note is None:
        assert seen.notes == ()
    else:
        assert len(seen.notes) == 1 and note in seen.notes[0]


def test_unlike_gpus_by_index_warn_of_cuda_order() -> None:
    spec = h200_host()
    spec["gpus"][1]["name"] = "NVIDIA H100 80GB HBM3"
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in observed("0,1", spec).notes[0]


def test_unsupported_is_none_and_a_failure_is_kept() -> None:
    spec = h200_host(unsupported=["nvmlDeviceGetEccMode"], failing=["nvmlDeviceGetPersistenceMode"])
    gpu = observed(None, spec).gpus[0]
    assert (gpu.ecc, gpu.ecc_pending) == (None, None)
    assert gpu.persistence is None
    assert gpu.errors == (("persistence", "GPU is lost"),)


def test_the_fake_refuses_calls_nobody_expected() -> None:
    nvml = fake_nvml(h200_host())
    with pytest.raises(AssertionError, match="without nvmlInit"):
        nvml.nvmlDeviceGetCount()
    nvml.nvmlInit()
    with pytest.raises(
        AssertionError, match=r"unexpected NVML call: pynvml\.nvmlDeviceGetFanSpeed"
    ):
        nvml.nvmlDeviceGetFanSpeed(nvml.nvmlDeviceGetHandleByIndex(0))


def test_an_nvml_that_cannot_start_is_unavailable(
    fake_pynvml: Callable[[dict[str, Any]], Any],
) -> None:
    """A driver that is not loaded: one line with NVML's words, a hint, never a traceback;
    and nothing is kept as started."""
    fake_pynvml({**h200_host(), "init_error": "DriverNotLoaded"})
    with pytest.raises(GpuUnavailable) as caught:
        load_nvml()
    assert caught.value.message == "cannot verify GPUs: NVML not available (DriverNotLoaded)"
    assert "--skip-gpu" in caught.value.hint
    assert gpu_probe.nvml._started == []


def test_this_machine_has_no_nvml_and_says_so() -> None:
    """The real nvidia-ml-py, on a machine without the NVIDIA driver."""
    pytest.importorskip("pynvml")
    try:
        nvml = load_nvml()
    except GpuUnavailable as exc:
        assert exc.message.startswith("cannot verify GPUs: NVML not available (")
        assert "--skip-gpu" in exc.hint
    else:
        nvml.nvmlShutdown()
        pytest.skip("this machine has NVML (a GPU host)")


def test_a_check_reads_only_what_its_profile_needs() -> None:
    """Each kind of query costs the driver milliseconds a GPU the first time."""
    nvml = fake_nvml(h200_host())
    nvml.nvmlInit()
    spec = GpuSection(count=2, mig=False, forbidden_clock_events=("hw_slowdown",))
    gpu = observe_gpus(None, nvml, wanted=facts_needed(spec)).gpus[0]
    assert (gpu.mig, gpu.clock_events) == (False, ("gpu_idle",))
    assert (gpu.persistence, gpu.power_limit_w, gpu.ecc, gpu.pcie_gen) == (None, None, None, None)
    asked = {call for call in nvml.calls if call.startswith("nvmlDevice")}
    assert asked == {
        "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUUID",
        "nvmlDeviceGetName", "nvmlDeviceGetMigMode", "nvmlDeviceGetCurrentClocksEventReasons",
    }  # fmt: skip


@pytest.fixture
def fake_pynvml(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, Any]], Any]:
    """`import pynvml` gets the strict fake, here and in a forked child (which inherits
    this process's modules)."""

    def install(spec: dict[str, Any]) -> Any:
        nvml = fake_nvml(spec)
        monkeypatch.setitem(sys.modules, "pynvml", nvml)
        monkeypatch.setattr(gpu_probe.nvml, "_started", [])
        return nvml

    return install


def test_the_reading_runs_in_a_child_process(fake_pynvml: Callable[[dict[str, Any]], Any]) -> None:
    nvml = fake_pynvml(h200_host())
    reading = GpuReading(fork=True)  # as when no other thread runs (pytest's may)
    seen = reading.observe("1")
    assert [g.uuid for g in seen.gpus] == [H200_UUIDS[1]]
    assert seen.gpus[0].clock_events == ("gpu_idle",) and seen.gpus[0].errors == ()
    assert nvml.calls == []  # every NVML call happened in the child
    reading.close()  # reaped already: a no-op


def test_with_other_threads_running_it_reads_in_a_thread(
    fake_pynvml: Callable[[dict[str, Any]], Any],
) -> None:
    nvml = fake_pynvml(h200_host())
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        seen = GpuReading().observe(None)
    finally:
        stop.set()
        other.join()
    assert len(seen.gpus) == 2 and "nvmlInit" in nvml.calls  # here, not in a child


def test_the_child_reports_what_went_wrong(fake_pynvml: Callable[[dict[str, Any]], Any]) -> None:
    fake_pynvml({**h200_host(), "init_error": "DriverNotLoaded"})
    with pytest.raises(GpuUnavailable, match=r"NVML not available \(DriverNotLoaded\)"):
        GpuReading(fork=True).observe(None)
    # Anything else that breaks in the child (here the fake itself) is still one line.
    fake_pynvml({**h200_host(), "gpus": "not a list"})
    with pytest.raises(GpuUnavailable, match="cannot verify GPUs: AttributeError: "):
        GpuReading(fork=True).observe(None)


def test_every_gpu_key_of_the_schema_names_its_facts() -> None:
    assert set(GpuSection._fields) == set(gpu_probe.KEY_FACTS)
    assert facts_needed(GpuSection(pcie_gen_min=5)) == {"pcie", "pcie_max", "clock_events"}
    assert gpu_probe.facts_for({"no_such_key"}) == ALL_FACTS


def test_the_cron_line_starts_nvml_from_the_profile_file(
    fake_pynvml: Callable[[dict[str, Any]], Any], tmp_path: Any
) -> None:
    from envguard.commands.check_argv import early_gpu_reading

    fake_pynvml(h200_host())
    plain = tmp_path / "plain.toml"
    plain.write_text('schema_version = 1\nname = "p"\nversion = 1\n# [gpu] would go here\n')
    assert early_gpu_reading(str(plain)) is None
    own = tmp_path / "own.toml"
    own.write_text('schema_version = 2\nname = "p"\nversion = 1\n[gpu]\nmig = false\n')
    reading = early_gpu_reading(str(own))
    assert reading is not None and reading.wanted == {"mig"}  # exactly what it asks
    reading.close()
    extending = tmp_path / "ext.toml"
    extending.write_text(
        own.read_text().replace("version = 1\n", 'version = 1\nextends = ["b.toml"]\n')
    )
    reading = early_gpu_reading(str(extending))
    assert reading is not None and reading.wanted == {"mig"}  # the file's keys: a hint
    assert len(reading.observe(None).gpus) == 2


def test_launch_releases_nvml_after_its_preflight(
    fake_pynvml: Callable[[dict[str, Any]], Any],
) -> None:
    """A foreground launch lives on beside its server: it keeps no NVML handles open."""
    from envguard.launching.preflight import preflight
    from envguard.profile.schema import Profile

    nvml = fake_pynvml(h200_host())
    profile = Profile(schema_version=2, name="g", version=1, gpu=GpuSection(count=2))
    pre = preflight(profile, ["/bin/true"], {"PATH": "/usr/bin:/bin"})
    assert pre.gpu_note == "gpus: 2 of 2 (NVIDIA H200); driver 580.159.04, CUDA 13.0"
    assert pre.findings == () and "nvmlShutdown" in nvml.calls and nvml.live == 0


def test_a_child_that_breaks_while_reporting_still_ends(
    fake_pynvml: Callable[[dict[str, Any]], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever happens in the child, it exits there: it never goes on with the check."""
    from envguard.probes.gpu import reading as reading_module

    fake_pynvml(h200_host())

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("no JSON today")

    monkeypatch.setattr(reading_module.json, "dumps", broken)
    with pytest.raises(GpuUnavailable, match="cannot verify GPUs: the NVML reader died"):
        GpuReading(fork=True).observe(None)
