"""Shared fixtures: real stand-in servers, profile files, a per-test profile cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
PROFILES = REPO / "profiles"

from envguard.testing.standin import wait_ready  # noqa: E402
from envguard.testing.tuned import TUNED_NCCL as TUNED  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own profile cache and no colour."""
    monkeypatch.setenv("ENVGUARD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("NO_COLOR", raising=False)


@dataclass
class StandIn:
    """A running stand-in server (envguard.testing.standin)."""

    process: subprocess.Popen[str]
    pid: int


@pytest.fixture
def standin() -> Iterator[Callable[..., StandIn]]:
    """Start stand-in servers with exactly the environment given; stop them afterwards."""
    started: list[subprocess.Popen[str]] = []

    def start(
        env: dict[str, str],
        *args: str,
        spt_noenv: bool = True,
        module: str = "envguard.testing.standin",
    ) -> StandIn:
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
        if spt_noenv:
            full["SPT_NOENV"] = "1"
        process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=full,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        pid = wait_ready(process.stdout)
        assert pid, "the stand-in exited before it was ready"
        return StandIn(process, pid)

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=10)


FAKE_SITE = REPO / "tests" / "data" / "fake_site"


@pytest.fixture
def fake_sglang(standin: Callable[..., StandIn]) -> Callable[..., StandIn]:
    """Start `python -m sglang.launch_server ARGS` from tests/data/fake_site: a real process
    with a real SGLang command line (and sglang 0.5.23 metadata) running the stand-in tree."""

    def start(*args: str, env: dict[str, str] | None = None, site: Path = FAKE_SITE) -> StandIn:
        full = {**TUNED, "PYTHONPATH": str(site), **(env or {})}
        return standin(full, *args, module="sglang.launch_server")

    return start


@pytest.fixture
def write_profile(tmp_path: Path) -> Callable[..., Path]:
    """Write a profile file from TOML text (dedented); return its path."""

    def write(text: str, name: str = "profile.toml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start `python -c CODE` processes with crafted environments (tests/builders.py);
    kill them afterwards."""
    from tests.builders import python_process

    started: list[subprocess.Popen[str]] = []

    def start(code: str, env: dict[str, str], **popen: object) -> subprocess.Popen[str]:
        process = python_process(code, env, **popen)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def run_cli(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    """Run `envguard ARGS` in-process through the real entry point (its error handler too)."""
    from envguard.cli import cli

    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _envguard_env(cwd: Path, env: dict[str, str] | None) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "ENVGUARD_CACHE_DIR": str(cwd / ".envguard-cache"),
            **(env or {})}  # fmt: skip


def envguard_process(
    cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `python -m envguard ARGS` as a real process in `cwd`, with a minimal environment
    and a profile cache of its own (for signals, detaching and exit codes)."""
    return subprocess.run(
        [sys.executable, "-m", "envguard", *args],
        cwd=cwd,
        env=_envguard_env(cwd, env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def envguard_started(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """The same, started and not waited for (races, signals): stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "envguard", *args],
        cwd=cwd,
        env=_envguard_env(cwd, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
