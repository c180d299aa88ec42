"""Hostile input never hangs envguard, never exhausts its memory, never prints a traceback:
FIFOs and devices where files are expected, a YAML alias bomb, deep nesting, symlink loops."""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.builders import profile_toml
from tests.conftest import StandIn, envguard_process

SGLANG_PROFILE = profile_toml(body='[server]\nkind = "sglang"\n[server.flags]\ntp-size = 1\n')

BILLION_LAUGHS = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
    )
    + "tp-size: *j\n"
)


def check(
    tmp_path: Path, pid: int, profile: str = SGLANG_PROFILE, *extra: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "p.toml").write_text(profile)
    return envguard_process(
        tmp_path, "check", "-p", "p.toml", "--pid", str(pid), *extra, timeout=60
    )


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


def test_nccl_conf_file_that_is_a_fifo_or_a_device(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    os.mkfifo(tmp_path / "nccl.fifo")
    for conf in (str(tmp_path / "nccl.fifo"), "/dev/zero"):
        server = fake_sglang("--model-path", "m", env={"NCCL_CONF_FILE": conf})
        result = check(tmp_path, server.pid, profile_toml())
        no_traceback(result)
        assert result.returncode == 3, result.stdout + result.stderr
        assert f"unverifiable {conf}: unreadable" in result.stdout


def test_the_users_nccl_conf_as_a_fifo(tmp_path: Path, fake_sglang: Callable[..., StandIn]) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "home" / "u").mkdir(parents=True)
    (root / "etc" / "passwd").write_text(f"u:x:{os.getuid()}:0::/home/u:/bin/sh\n")
    os.mkfifo(root / "home" / "u" / ".nccl.conf")
    server = fake_sglang("--model-path", "m")
    result = check(tmp_path, server.pid, profile_toml(), "--config-root", str(root))
    no_traceback(result)
    assert "unverifiable /home/u/.nccl.conf: unreadable" in result.stdout


@pytest.mark.parametrize("kind", ["fifo", "device", "bomb"])
def test_a_server_config_that_is_a_fifo_a_device_or_an_alias_bomb(
    tmp_path: Path, fake_sglang: Callable[..., StandIn], kind: str
) -> None:
    config = tmp_path / "server.yaml"
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "device":
        config.symlink_to("/dev/zero")
    else:
        config.write_text(BILLION_LAUGHS)
    server = fake_sglang("--model-path", "m", "--config", str(config))
    result = check(tmp_path, server.pid)
    no_traceback(result)
    assert result.returncode == 1, result.stdout + result.stderr  # the server would refuse it
    assert "rejected     command line" in result.stdout
    expected = {
        "fifo": "not a regular file (a FIFO)",
        "device": "not a regular file (a device)",
        "bomb": "more than 100000 values once its aliases are expanded",
    }[kind]
    assert expected in result.stdout


def test_an_alias_bomb_costs_no_memory() -> None:
    """In process, so the peak is this test's own: loading the 1 KB bomb stays small."""
    from envguard.flags.catalog import load
    from envguard.flags.preprocess import parse

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    parsed = parse(load("sglang", "0.5.23"), ["--config", "c.yaml"], lambda _: BILLION_LAUGHS)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert parsed.error is not None and "alias" in parsed.error
    assert grown_mb < 100


@pytest.mark.parametrize("kind", ["fifo", "device", "loop", "deep", "extends"])
def test_profiles_that_are_not_files_or_too_deep(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "p.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "deep":
        path.write_text("a = " + "[" * 500 + "]" * 500 + "\n")
    else:
        for i in range(1100):
            (tmp_path / f"c{i}.toml").write_text(
                profile_toml(body=f'extends = ["c{i + 1}.toml"]\n')
            )
        (tmp_path / "c1100.toml").write_text(profile_toml())
        path = tmp_path / "c0.toml"
    for command in (["profile", "validate", str(path)], ["check", "-p", str(path), "--pid", "1"]):
        result = envguard_process(tmp_path, *command, timeout=60)
        no_traceback(result)
        assert result.returncode == 3, result.stderr
    assert {
        "fifo": "not a regular file (a FIFO)",
        "device": "not a regular file (a device)",
        "loop": "cannot resolve the path",
        "deep": "nested too deeply",
        "extends": "extends is more than 32 files deep",
    }[kind] in result.stderr


def test_a_pid_file_that_is_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.pid")
    result = envguard_process(tmp_path, "stop", "--pid-file", "s.pid", timeout=30)
    no_traceback(result)
    assert (result.returncode, "not a regular file" in result.stderr) == (3, True)
