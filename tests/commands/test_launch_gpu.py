"""`envguard launch` checks the GPUs before it starts anything (strict fake NVML in the
envguard process; the real pynvml for "NVML not available")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.commands.conftest import with_marker
from tests.conftest import envguard_process
from tests.gpu_fakes import fake_nvml_env, h200_host

PROFILE = """schema_version = 2
name = "gpu"
version = 1
[gpu]
count = 2
persistence = true
"""


def launch(tmp_path: Path, marker: str, *options: str, env: dict[str, str] | None = None) -> Any:
    profile = tmp_path / "gpu.toml"
    profile.write_text(PROFILE)
    server = [sys.executable, "-c", "import time; time.sleep(30)", marker]
    return envguard_process(
        tmp_path, "launch", "-p", str(profile), "--detach", *options, "--", *server, env=env
    )


def test_a_gpu_drift_refuses_the_start(tmp_path: Path, marker: str) -> None:
    spec = h200_host()
    spec["gpus"][0]["persistence"] = 0
    result = launch(tmp_path, marker, env=fake_nvml_env(tmp_path, spec))
    assert result.returncode == 1
    assert "  gpus: 2 of 2 (NVIDIA H200); driver 580.159.04, CUDA 13.0\n" in result.stderr
    assert "persistence: expected on, found 'off' [NVML]" in result.stderr
    assert "refusing to start: 1 findings against gpu@1" in result.stderr
    assert with_marker(marker) == []
    forced = launch(tmp_path, marker, "--force", env=fake_nvml_env(tmp_path, spec))
    assert forced.returncode == 0, forced.stderr  # no health URL: not checked after start
    assert "going on to start anyway (--force)" in forced.stderr
    assert len(with_marker(marker)) == 1
    envguard_process(tmp_path, "stop", "--pid-file", "envguard-gpu.pid")


def test_gpus_as_tuned_start(tmp_path: Path, marker: str) -> None:
    result = launch(tmp_path, marker, env=fake_nvml_env(tmp_path, h200_host()))
    assert result.returncode == 0, result.stderr
    assert len(with_marker(marker)) == 1
    envguard_process(tmp_path, "stop", "--pid-file", "envguard-gpu.pid")


def test_without_nvml_nothing_starts_unless_skip_gpu(tmp_path: Path, marker: str) -> None:
    refused = launch(tmp_path, marker)
    assert refused.returncode == 3
    assert "envguard: cannot verify GPUs: NVML not available (" in refused.stderr
    assert with_marker(marker) == []
    skipped = launch(tmp_path, marker, "--skip-gpu")
    assert skipped.returncode == 0, skipped.stderr
    assert "GPUs not checked (--skip-gpu)" in skipped.stderr
    assert len(with_marker(marker)) == 1
    envguard_process(tmp_path, "stop", "--pid-file", "envguard-gpu.pid")
