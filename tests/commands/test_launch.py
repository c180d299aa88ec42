"""`envguard launch` / `stop` with real processes: detaching, health, refusals, signals,
exit codes, no orphans, the concurrent-launch race, and the systemd unit."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envguard.testing.tuned import TUNED_NCCL
from tests.builders import free_port, tuned_launch
from tests.commands.conftest import with_marker
from tests.conftest import FAKE_SITE, PROFILES, envguard_process, envguard_started

DEMO = str(PROFILES / "demo.toml")
SEED = str(PROFILES / "kimi-k2.5-int4-tp8.toml")


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def envguard(tmp_path: Path) -> Run:
    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return envguard_process(tmp_path, *args, env=env)

    return run


def standin(marker: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "envguard.testing.standin",
        "--title-prefix",
        f"{marker}::",
        *args,
    ]


def detached_demo(
    envguard: Run,
    marker: str,
    *standin_args: str,
    options: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`envguard launch -p demo --detach` of a stand-in serving /health on a free port."""
    port = free_port()
    return envguard(
        "launch",
        "-p",
        DEMO,
        "--detach",
        *options,
        "--health-url",
        f"http://127.0.0.1:{port}/health",
        "--",
        *standin(marker, "--port", str(port), *standin_args),
        env=env,
    )


def test_detached_launch_waits_for_health_checks_and_writes_a_manifest(
    envguard: Run, marker: str, tmp_path: Path
) -> None:
    caller = {"NCCL_IB_HCA": "mlx5", "NCCL_ALGO": "Tree", "HF_TOKEN": "hf_secret", "KEEP_ME": "1"}
    result = detached_demo(envguard, marker, "--healthy-after", "1.5", env=caller)
    assert result.returncode == 0, result.stderr
    pid = int((tmp_path / "envguard-demo.pid").read_text().split()[0])
    assert os.getsid(pid) == pid  # its own session: the terminal going away does not kill it
    manifest = json.loads((tmp_path / "envguard-demo.manifest.json").read_text())
    assert manifest["pid"] == pid
    assert manifest["check"] == {"verdict": "ok", "findings": 0}
    assert manifest["health"]["outcome"] == "healthy"
    assert manifest["injected"] == {**TUNED_NCCL, "SPT_NOENV": "1"}
    assert manifest["dropped"] == ["NCCL_IB_HCA"]
    assert manifest["profile"]["name"] == "demo" and manifest["forced"] is False
    environ = dict(
        line.split("=", 1)
        for line in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
        if "=" in line
    )
    assert environ["NCCL_ALGO"] == "Ring"  # the profile's value overrides the caller's
    assert "NCCL_IB_HCA" not in environ and environ["KEEP_ME"] == "1"
    assert environ["SPT_NOENV"] == "1"
    log = (tmp_path / "envguard-demo.log").read_text().splitlines()
    assert log[0].startswith("==== ") and "envguard launch demo@1 (sha256:" in log[0]
    assert "hf_secret" not in result.stderr + json.dumps(manifest)
    assert "healthy after" in result.stderr and "verdict: ok" in result.stderr

    stopped = envguard("stop", "--pid-file", "envguard-demo.pid")
    assert stopped.stdout == f"pid {pid}: stopped (SIGTERM)\n"
    assert with_marker(marker) == []
    assert not (tmp_path / "envguard-demo.pid").exists()


def test_a_server_that_crashes_while_starting(envguard: Run, marker: str, tmp_path: Path) -> None:
    result = detached_demo(envguard, marker, "--crash-after", "1")
    assert result.returncode == 1
    assert "the server exited with code 3 while starting" in result.stderr
    assert "  | standin: crashing while starting, as asked" in result.stderr  # the log's tail
    assert not (tmp_path / "envguard-demo.pid").exists()
    manifest = json.loads((tmp_path / "envguard-demo.manifest.json").read_text())
    assert manifest["health"]["outcome"] == "exited"


def test_not_healthy_in_time_leaves_it_running_and_says_how_to_stop(
    envguard: Run, marker: str, tmp_path: Path
) -> None:
    result = detached_demo(envguard, marker, "--healthy-after", "600", options=("--timeout", "1"))
    assert result.returncode == 1
    assert "last answer: 503); still running as pid" in result.stderr
    assert "envguard stop --pid-file envguard-demo.pid" in result.stderr
    assert envguard("stop", "--pid-file", "envguard-demo.pid").returncode == 0
    assert with_marker(marker) == []


def test_refuses_a_command_that_contradicts_the_profile(envguard: Run, marker: str) -> None:
    # The tuned line, but --tp 4 against the profile's tp-size 8 (and an abbreviation).
    command = [
        sys.executable, "-m", "sglang.launch_server",
        *tuned_launch(without=("--tp-size",), extra=("--tp", "4", "--served-model-name", marker)),
    ]  # fmt: skip
    env = {"PYTHONPATH": str(FAKE_SITE), "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    result = envguard("launch", "-p", SEED, "--detach", "--", *command, env=env)
    assert result.returncode == 1
    assert "refusing to start: 1 findings against kimi-k2.5-int4-tp8@4" in result.stderr
    assert "  mismatch     --tp-size: expected 8, found '4 (as --tp)' [cmdline]" in result.stderr
    assert result.stderr.endswith(
        "envguard: the command or its environment contradicts the profile\n"
        "hint: fix the findings above, or add --force to start anyway (recorded in the manifest)\n"
    )
    assert with_marker(marker) == []


def test_force_starts_anyway_and_records_it(envguard: Run, marker: str, tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'schema_version = 1\nname = "p"\nversion = 1\n'
        '[env.required]\nMY_SETTING = { pattern = "a.*" }\n'
    )
    refused = envguard("launch", "-p", str(profile), "--detach", "--", *standin(marker))
    assert refused.returncode == 1
    assert "  missing      MY_SETTING" in refused.stderr
    assert "only a pattern (a.*) is given: no value to set" in refused.stderr
    forced = envguard("launch", "-p", str(profile), "--detach", "--force", "--", *standin(marker))
    assert forced.returncode == 0, forced.stderr
    manifest = json.loads((tmp_path / "envguard-p.manifest.json").read_text())
    assert manifest["forced"] is True
    assert manifest["findings_at_start"] == ["missing MY_SETTING"]
    assert manifest["check"]["verdict"] == "not checked"
    envguard("stop", "--pid-file", "envguard-p.pid")


def test_refuses_a_live_pid_file_and_a_taken_port(
    envguard: Run, marker: str, tmp_path: Path
) -> None:
    port = free_port()
    args = ("launch", "-p", DEMO, "--detach", "--health-url", f"http://127.0.0.1:{port}/health")
    first = envguard(*args, "--", *standin(marker, "--port", str(port)))
    assert first.returncode == 0, first.stderr
    pid = (tmp_path / "envguard-demo.pid").read_text().split()[0]
    second = envguard(*args, "--", *standin(marker, "--port", str(port)))
    assert second.returncode == 1
    assert (
        f"envguard: envguard-demo.pid: the server it names is running (pid {pid}:" in second.stderr
    )
    # Another pid file, same port: the port check stops it.
    seed_like = tmp_path / "ported.toml"
    seed_like.write_text(
        f'schema_version = 1\nname = "ported"\nversion = 1\n[server]\n'
        f'health_url = "http://127.0.0.1:{port}/health"\n'
    )
    third = envguard(
        "launch", "-p", str(seed_like), "--detach", "--", *standin(marker, "--port", str(port))
    )
    assert third.returncode == 1
    assert f"envguard: port {port} is taken: a server envguard launched serves it, pid {pid}" in (
        third.stderr
    )
    envguard("stop", "--pid-file", "envguard-demo.pid")


def test_two_launches_at_once_end_with_exactly_one_server(
    envguard: Run, marker: str, tmp_path: Path
) -> None:
    command = standin(marker, "--schedulers", "1", "--no-detokenizer")
    racers = [
        envguard_started(tmp_path, "launch", "-p", DEMO, "--detach", "--", *command)
        for _ in range(4)
    ]
    codes = sorted(p.wait(timeout=60) for p in racers)
    assert codes == [0, 1, 1, 1]
    launchers = [
        pid
        for pid in with_marker(marker)
        if b"standin" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert launchers == [(tmp_path / "envguard-demo.pid").read_text().split()[0]]
    envguard("stop", "--pid-file", "envguard-demo.pid")


def test_foreground_passes_the_exit_code_through_and_leaves_no_orphans(
    envguard: Run, marker: str
) -> None:
    script = f"sleep 300 & echo {marker} >/dev/null; exit 7"
    result = envguard("launch", "-p", DEMO, "--", "sh", "-c", script)
    assert result.returncode == 7
    assert with_marker(marker) == []  # the background `sleep` went with it
    killed = envguard("launch", "-p", DEMO, "--", "sh", "-c", "kill -KILL $$")
    assert killed.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize(
    "signum",
    [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2],
)
def test_foreground_forwards_signals_to_the_group(marker: str, tmp_path: Path, signum: int) -> None:
    # The shell says "ready" only once its trap is installed: no sleeping, no guessing.
    script = (
        f": {marker}; trap 'echo got-{signum}; exit 42' {signum.name[3:]}; echo ready; "
        "sleep 300 & wait"
    )
    launcher = envguard_started(tmp_path, "launch", "-p", DEMO, "--", "sh", "-c", script)
    assert launcher.stdout is not None
    assert launcher.stdout.readline() == "ready\n"
    launcher.send_signal(signum)
    out, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 42, err
    assert out == f"got-{signum}\n"
    assert with_marker(marker) == []


def test_foreground_kills_a_server_that_ignores_sigterm_after_the_grace(
    marker: str, tmp_path: Path
) -> None:
    script = f": {marker}; trap '' TERM; echo ready; while :; do sleep 0.1; done"
    launcher = envguard_started(
        tmp_path, "launch", "-p", DEMO, "--grace", "1", "--", "sh", "-c", script
    )
    assert launcher.stdout is not None and launcher.stdout.readline() == "ready\n"
    launcher.send_signal(signal.SIGTERM)
    _, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 128 + signal.SIGKILL, err
    assert with_marker(marker) == []


def test_stop_kills_a_server_that_ignores_sigterm(envguard: Run, marker: str) -> None:
    # Healthy means its SIGTERM handler is installed.
    started = detached_demo(envguard, marker, "--ignore-term")
    assert started.returncode == 0, started.stderr
    stopped = envguard("stop", "--pid-file", "envguard-demo.pid", "--grace", "1")
    assert stopped.stdout.endswith(": killed (SIGKILL after SIGTERM was ignored)\n")
    assert with_marker(marker) == []


def test_clean_env_starts_from_an_allowlist(envguard: Run, marker: str, tmp_path: Path) -> None:
    result = envguard(
        "launch",
        "-p",
        DEMO,
        "--detach",
        "--clean-env",
        "--",
        *standin(marker),
        env={"SOME_SHELL_VAR": "x", "LC_ALL": "C.UTF-8"},
    )
    assert result.returncode == 0, result.stderr
    pid = (tmp_path / "envguard-demo.pid").read_text().split()[0]
    names = {
        e.split(b"=", 1)[0].decode()
        for e in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        if e
    }
    assert names == {"PATH", "LC_ALL", "SPT_NOENV", *TUNED_NCCL}
    envguard("stop", "--pid-file", "envguard-demo.pid")


def test_forbidden_line_in_an_nccl_config_file_is_neutralised(
    envguard: Run, marker: str, tmp_path: Path
) -> None:
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_GRAPH_FILE=/opt/vendor/graph.xml\n")
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'schema_version = 1\nname = "p"\nversion = 1\nextends = ["{DEMO}"]\n'
        '[env.optional]\nNCCL_CONF_FILE = { pattern = ".*" }\n'
    )
    result = envguard(
        "launch",
        "-p",
        str(profile),
        "--detach",
        "--",
        *standin(marker),
        env={"NCCL_CONF_FILE": str(conf)},
    )
    assert result.returncode == 0, result.stderr
    assert "set NCCL_GRAPH_FILE empty, so no NCCL config file can set them" in result.stderr
    pid = int((tmp_path / "envguard-p.pid").read_text().split()[0])
    check = envguard("check", "-p", str(profile), "--pid", str(pid), "-q")
    assert check.returncode == 0, check.stdout + check.stderr
    envguard("stop", "--pid-file", "envguard-p.pid")


def verify_unit(unit: str, tmp_path: Path, name: str = "envguard-demo.service") -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd): unit not verified")
    path = tmp_path / name
    path.write_text(unit)
    verified = subprocess.run(
        [analyze, "verify", "--man=no", str(path)], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stderr


def test_print_systemd_runs_the_server_through_envguard_launch(
    envguard: Run, tmp_path: Path
) -> None:
    result = envguard(
        "launch", "-p", DEMO, "--print-systemd",
        "--", sys.executable, "-m", "envguard.testing.standin", "--title-prefix", "a b%c::",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    unit = result.stdout
    envguard_script = Path(sys.executable).with_name("envguard")
    assert (
        f"ExecStart={envguard_script} launch -p {PROFILES / 'demo.toml'} --pid-file "
        f"/run/envguard/demo.pid -- {sys.executable} -m envguard.testing.standin "
        '--title-prefix "a b%%c::"\n'
    ) in unit
    # The profile's values are injected by envguard launch; the unit does not repeat them.
    assert "NCCL_" not in unit.split("[Service]")[1]
    assert "KillMode=control-group\nRestart=on-failure\n" in unit
    verify_unit(unit, tmp_path)


def test_the_servers_interpreter_is_found_on_the_servers_path(
    envguard: Run, tmp_path: Path
) -> None:
    server_bin = tmp_path / "server-venv" / "bin"
    server_bin.mkdir(parents=True)
    (server_bin / "python3").symlink_to(sys.executable)
    path = f"{server_bin}:{os.environ['PATH']}"
    result = envguard(
        "launch", "-p", DEMO, "--print-systemd", "--", "python3", "-m", "envguard.testing.standin",
        env={"PATH": path},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"-- {server_bin / 'python3'} -m envguard.testing.standin" in result.stdout
    assert f'Environment="PATH={path}"' in result.stdout
    verify_unit(result.stdout, tmp_path)


def test_a_unit_with_newlines_in_its_values_is_still_valid(envguard: Run, tmp_path: Path) -> None:
    profile = tmp_path / "multi.toml"
    profile.write_text(
        'schema_version = 1\nname = "multi"\nversion = 1\n'
        'description = """two\nlines % and $HOME"""\n'
    )
    template = "{% for m in messages %}\n{{ m.content }}\n{% endfor %}"
    result = envguard(
        "launch", "-p", str(profile), "--print-systemd",
        "--", sys.executable, "-c", "pass", "--chat-template", template,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Description=multi@1: two lines %% and $HOME\n" in result.stdout
    assert '"{%% for m in messages %%}\\n{{ m.content }}\\n{%% endfor %%}"' in result.stdout
    verify_unit(result.stdout, tmp_path, "envguard-multi.service")


def test_a_command_that_does_not_exist(envguard: Run, tmp_path: Path) -> None:
    result = envguard("launch", "-p", DEMO, "--detach", "--", "no-such-server-x1")
    assert result.returncode == 3
    assert result.stderr.splitlines()[-2:] == [
        "envguard: no-such-server-x1: command not found (or not executable)",
        "hint: check the command after --, or give its absolute path",
    ]
    assert not (tmp_path / "envguard-demo.pid").exists()


def test_no_unit_for_a_command_the_profile_contradicts(envguard: Run) -> None:
    command = [sys.executable, "-m", "sglang.launch_server", "--model-path", "m", "--tp", "4"]
    result = envguard("launch", "-p", SEED, "--print-systemd", "--", *command)
    assert (result.returncode, result.stdout) == (1, "")
    assert "  mismatch     --tp-size: expected 8, found '4 (as --tp)' [cmdline]" in result.stderr


def test_an_sglang_launch_that_matches_its_profile(
    envguard: Run, marker: str, tmp_path: Path
) -> None:
    """The seed profile's own flags, on a free port: preflight reads the flags with the
    installed sglang's catalog, health comes from --port, check passes, manifest says ok."""
    port = free_port()
    profile = tmp_path / "seed-here.toml"
    profile.write_text(
        f'schema_version = 1\nname = "seed-here"\nversion = 1\nextends = ["{SEED}"]\n'
        f"[server]\ncommand = []\n[server.flags]\nport = {port}\n"
    )
    command = [
        sys.executable, "-m", "sglang.launch_server",
        *tuned_launch(port=port, extra=("--served-model-name", marker)),
    ]  # fmt: skip
    env = {
        "PYTHONPATH": str(FAKE_SITE),
        "STANDIN_HTTP": "1",
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
    }
    result = envguard("launch", "-p", str(profile), "--detach", "--", *command, env=env)
    assert result.returncode == 0, result.stderr
    assert "healthy after" in result.stderr
    assert "launch: python -m sglang.launch_server (pid " in result.stderr
    manifest = json.loads((tmp_path / "envguard-seed-here.manifest.json").read_text())
    assert manifest["check"] == {"verdict": "ok", "findings": 0}
    assert manifest["health"]["url"] == f"http://127.0.0.1:{port}/health"
    envguard("stop", "--pid-file", "envguard-seed-here.pid")
    assert with_marker(marker) == []
