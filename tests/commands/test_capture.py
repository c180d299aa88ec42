"""`envguard capture`: a profile from a live server, checked (exit 0) and launched (same
fingerprint) again; --extends; ranks that disagree; GPUs through the strict fake NVML."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

from envguard.checking import check
from envguard.fingerprint import fingerprint, observed_setup
from envguard.probes.target import Target
from tests.builders import free_port, tuned_launch
from tests.conftest import FAKE_SITE, PROFILES, TUNED, StandIn, envguard_process
from tests.gpu_fakes import fake_nvml_env, h200_host

SGLANG_ENV = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "OMP_NUM_THREADS": "4"}


def captured(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = tmp_path / "captured.toml"
    result = envguard_process(
        tmp_path, "capture", *args, "--name", "captured", "-o", str(out), env=env
    )
    assert result.returncode == 0, result.stderr
    return tomllib.loads(out.read_text())


def test_round_trip_check_then_launch_with_the_same_fingerprint(
    fake_sglang: Callable[..., StandIn], tmp_path: Path
) -> None:
    port = free_port()
    line = tuned_launch(port=port)
    original = fake_sglang(*line, env={**SGLANG_ENV, "STANDIN_HTTP": "1"})
    document = captured(tmp_path, "--port", str(port))
    assert document["env"]["required"] == {**TUNED, **SGLANG_ENV}  # type: ignore[index]
    assert document["env"]["optional"] == {"CUDA_DEVICE_MAX_CONNECTIONS": "8"}  # type: ignore[index]
    assert document["env"]["strict_prefixes"] == ["NCCL_"]  # type: ignore[index]
    flags = document["server"]["flags"]  # type: ignore[index]
    assert flags == {
        "model-path": "/models/kimi-k2.5-int4", "trust-remote-code": True, "tp-size": 8,
        "mem-fraction-static": 0.88, "host": "0.0.0.0", "port": port,
        "num-continuous-decode-steps": 4, "disable-custom-all-reduce": True,
    }  # fmt: skip
    profile = tmp_path / "captured.toml"
    assert "# set by the server itself in its workers" in profile.read_text()
    checked = envguard_process(tmp_path, "check", "-p", str(profile), "--port", str(port))
    assert checked.returncode == 0, checked.stdout

    before = fingerprint(observed_setup(check(profile, Target(pid=original.pid), read_launch=True)))
    original.process.terminate()
    original.process.wait()
    # Launch from the captured profile alone: its [server] command, environment and port.
    launched = envguard_process(
        tmp_path, "launch", "-p", str(profile), "--detach",
        env={"PYTHONPATH": str(FAKE_SITE), "STANDIN_HTTP": "1"},
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    pid = int((tmp_path / "envguard-captured.pid").read_text().split()[0])
    try:
        after = fingerprint(observed_setup(check(profile, Target(pid=pid), read_launch=True)))
    finally:
        envguard_process(tmp_path, "stop", "--pid-file", "envguard-captured.pid")
    assert after == before


def test_extends_writes_only_what_differs(
    fake_sglang: Callable[..., StandIn], tmp_path: Path
) -> None:
    port = free_port()
    server = fake_sglang(*tuned_launch(port=port), env=SGLANG_ENV)
    seed = PROFILES / "kimi-k2.5-int4-tp8.toml"
    document = captured(tmp_path, "--pid", str(server.pid), "--extends", str(seed))
    assert document["extends"] == [str(seed)]
    assert document["env"] == {
        "required": {"OMP_NUM_THREADS": "4"},  # the rest the seed requires already
        "optional": {"CUDA_DEVICE_MAX_CONNECTIONS": "8"},
    }
    assert document["server"]["flags"] == {
        "port": int(tuned_launch(port=1)[0] and 0) or document["server"]["flags"]["port"]
    }  # type: ignore[index]
    checked = envguard_process(
        tmp_path, "check", "-p", str(tmp_path / "captured.toml"), "--pid", str(server.pid)
    )
    assert checked.returncode == 0, checked.stdout


def test_a_value_from_an_nccl_config_file_says_so(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_IGNORE_CPU_AFFINITY=1\n")
    server = standin({**TUNED, "NCCL_CONF_FILE": str(conf)})
    captured(tmp_path, "--pid", str(server.pid))
    text = (tmp_path / "captured.toml").read_text()
    assert f'NCCL_IGNORE_CPU_AFFINITY = "1"  # from {conf}\n' in text


def test_ranks_that_disagree_are_not_captured(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    server = standin(TUNED, "--rank-env", "1:NCCL_ALGO=Tree")
    out = tmp_path / "x.toml"
    result = envguard_process(
        tmp_path, "capture", "--pid", str(server.pid), "--name", "x", "-o", str(out)
    )
    assert result.returncode == 1
    assert "disagree on NCCL_ALGO ('Ring', 'Tree')" in result.stderr
    assert not out.exists()


def test_an_existing_file_is_kept_unless_force(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    server = standin(TUNED)
    out = tmp_path / "mine.toml"
    out.write_text("precious\n")
    args = ("capture", "--pid", str(server.pid), "--name", "x", "-o", str(out))
    refused = envguard_process(tmp_path, *args)
    assert refused.returncode == 3 and out.read_text() == "precious\n"
    assert envguard_process(tmp_path, *args, "--force").returncode == 0
    assert out.read_text().startswith("schema_version = 2\n")


def test_gpu_facts_where_nvml_answers(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    server = standin(TUNED)
    env = fake_nvml_env(tmp_path, h200_host())
    out = tmp_path / "gpu.toml"
    result = envguard_process(
        tmp_path,
        "capture",
        "--pid",
        str(server.pid),
        "--name",
        "g",
        "-o",
        str(out),
        "--json",
        env=env,
    )
    assert json.loads(result.stdout)["gpu"] is True
    assert tomllib.loads(out.read_text())["gpu"] == {
        "count": 2, "driver": "580\\.159\\.04", "name": "NVIDIA\\ H200", "persistence": True,
        "power_limit_min": 700.0, "ecc": True, "mig": False, "compute_mode": "default",
        "pcie_gen_min": 5, "pcie_width_min": 16,
    }  # fmt: skip
    checked = envguard_process(tmp_path, "check", "-p", str(out), "--pid", str(server.pid), env=env)
    assert checked.returncode == 0, checked.stdout


def test_extends_keeps_an_optional_rule_that_differs_from_the_bases(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    """The server sets CUDA_DEVICE_MAX_CONNECTIONS=8 in its workers; a base that allows 4
    only must be overridden, or the check of the same server fails."""
    base = tmp_path / "base.toml"
    base.write_text(
        'schema_version = 2\nname = "b"\nversion = 1\n'
        '[env.optional]\nCUDA_DEVICE_MAX_CONNECTIONS = "4"\n'
    )
    server = standin(TUNED)
    document = captured(tmp_path, "--pid", str(server.pid), "--extends", str(base))
    assert document["env"]["optional"] == {"CUDA_DEVICE_MAX_CONNECTIONS": "8"}  # type: ignore[index]
    checked = envguard_process(
        tmp_path, "check", "-p", str(tmp_path / "captured.toml"), "--pid", str(server.pid)
    )
    assert checked.returncode == 0, checked.stdout
