"""The files in hooks/ are what people deploy: each is checked by the real tool that reads
it (promtool, amtool, systemd-analyze, node_exporter, pre-commit's format, cron's line),
and skips, saying why, where that tool cannot be had (.ci/run installs them)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.builders import TUNED_NCCL, free_port
from tests.conftest import PROFILES, REPO, StandIn, envguard_process

HOOKS = REPO / "hooks"
DEMO = str(PROFILES / "demo.toml")


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install {package})")
    return found


def test_prometheus_rules_pass_their_promtool_tests() -> None:
    promtool = tool("promtool", "prometheus")
    directory = HOOKS / "prometheus"
    for args in (
        ["check", "rules", "envguard.rules.yml"],
        ["test", "rules", "envguard.rules.test.yml"],
    ):
        result = subprocess.run([promtool, *args], cwd=directory, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
    names = [
        r["alert"]
        for g in yaml.safe_load((directory / "envguard.rules.yml").read_text())["groups"]
        for r in g["rules"]
    ]
    assert names == [
        "EnvguardDrift",
        "EnvguardUnverifiable",
        "EnvguardServerDown",
        "EnvguardWatchStale",
        "EnvguardFleetInconsistent",
    ]


def test_the_alertmanager_example_is_valid() -> None:
    amtool = tool("amtool", "prometheus-alertmanager")
    result = subprocess.run(
        [amtool, "check-config", str(HOOKS / "alertmanager" / "alertmanager.yml")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_systemd_service_and_timer_verify(tmp_path: Path) -> None:
    analyze = tool("systemd-analyze", "systemd")
    envguard = Path(sys.executable).with_name("envguard")
    units = []
    for name in ("envguard-watch@.service", "envguard-watch@.timer"):
        text = (
            (HOOKS / "systemd" / name).read_text().replace("/usr/local/bin/envguard", str(envguard))
        )
        unit = tmp_path / name.replace("@", "@demo")
        unit.write_text(text)
        units.append(str(unit))
    result = subprocess.run([analyze, "verify", "--man=no", *units], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_cron_line_runs_a_real_watch(tmp_path: Path) -> None:
    text = (HOOKS / "cron" / "envguard-watch.cron").read_text()
    lines = [x for x in text.splitlines() if x and not x.startswith(("#", "SHELL", "PATH"))]
    [line] = lines
    fields = line.split(None, 6)
    assert fields[:5] == ["*"] * 5 and fields[5] == "root"
    words = shlex.split(fields[6].split("|")[0].replace("2>&1", ""))
    assert words[:3] == ["flock", "-n", "/run/lock/envguard-watch.lock"]
    watch = words[3:]
    assert watch[:2] == ["envguard", "watch"]
    # The same options, against a port nobody listens on: accepted, and the server is gone.
    port = free_port()
    args = list(watch[2:])
    args[args.index("--port") + 1] = str(port)
    args[args.index("-p") + 1] = DEMO
    args[args.index("--textfile-dir") + 1] = str(tmp_path)
    args[args.index("--webhook") + 1] = f"http://127.0.0.1:{free_port()}/"
    result = envguard_process(
        tmp_path, "watch", *args, "--state", str(tmp_path / "s"), "--timeout", "5"
    )
    assert result.returncode == 3, result.stderr
    assert "server is gone" in result.stdout


def test_pre_benchmark_fails_closed(tmp_path: Path, standin: Callable[..., StandIn]) -> None:
    script = str(HOOKS / "pre-benchmark")
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "ENVGUARD_CACHE_DIR": str(tmp_path / "c"),
    }
    tuned = standin(dict(TUNED_NCCL))
    ok = subprocess.run(
        [script, "-p", DEMO, "--pid", str(tuned.pid)], env=env, capture_output=True, text=True
    )
    assert ok.returncode == 0 and "verdict: ok" in ok.stdout, ok.stderr
    drifted = standin({})
    bad = subprocess.run(
        [script, "-p", DEMO, "--pid", str(drifted.pid)], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 1 and "not benchmarking" in bad.stderr
    missing = subprocess.run(
        [script, "-p", DEMO], env={"PATH": "/nonexistent"}, capture_output=True, text=True
    )
    assert missing.returncode == 3 and "refusing" in missing.stderr


def test_the_pre_commit_hook_validates_profiles(tmp_path: Path) -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "envguard-validate-profiles" and hook["language"] == "python"
    entry = shlex.split(hook["entry"])
    assert entry[0] == "envguard"
    good = envguard_process(tmp_path, *entry[1:], *map(str, sorted(PROFILES.rglob("*.toml"))))
    assert good.returncode == 0, good.stderr
    (tmp_path / "bad.toml").write_text(
        'schema_version = 1\nname = "b"\nversion = 1\n[env.required]\nNCCL_BUFFSIZE = "16M"\n'
    )
    bad = envguard_process(tmp_path, *entry[1:], "bad.toml")
    assert bad.returncode == 3 and "NCCL_BUFFSIZE" in bad.stderr


def test_node_exporter_serves_the_textfile(tmp_path: Path, standin: Callable[..., StandIn]) -> None:
    exporter = shutil.which("prometheus-node-exporter") or tool(
        "node_exporter", "prometheus-node-exporter"
    )
    directory = tmp_path / "textfile"
    directory.mkdir()
    drifted = standin({})
    envguard_process(
        tmp_path,
        "watch",
        "-p",
        DEMO,
        "--pid",
        str(drifted.pid),
        "--state",
        str(tmp_path / "s"),
        "--textfile-dir",
        str(directory),
    )
    port = free_port()
    process = subprocess.Popen(
        [exporter, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
         "--collector.textfile", f"--collector.textfile.directory={directory}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
                    metrics = reply.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, "node_exporter did not start"
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "node_textfile_scrape_error 0" in metrics
    assert 'envguard_drift{profile="demo@1",target="pid ' in metrics
