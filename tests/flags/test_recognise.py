"""Recognising a server launch in a process command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from envguard.flags.recognise import LaunchCommand, recognise, split_user_argv
from envguard.probes.server_version import installed_version


@pytest.mark.parametrize(
    ("cmdline", "expected"),
    [
        (
            ["/root/ml-env/bin/python3", "-m", "sglang.launch_server", "--tp", "8"],
            LaunchCommand(
                "sglang",
                ("--tp", "8"),
                False,
                "/root/ml-env/bin/python3",
                "python -m sglang.launch_server",
            ),
        ),
        (
            [
                "python3",
                "-u",
                "-X",
                "faulthandler",
                "-m",
                "sglang.launch_server",
                "--model-path",
                "m",
            ],
            LaunchCommand(
                "sglang", ("--model-path", "m"), False, "python3", "python -m sglang.launch_server"
            ),
        ),
        (
            ["/venv/bin/python", "/venv/bin/sglang", "serve", "--model-path", "m"],
            LaunchCommand(
                "sglang", ("--model-path", "m"), False, "/venv/bin/python", "sglang serve"
            ),
        ),
        (
            ["/venv/bin/python3.12", "/venv/bin/vllm", "serve", "meta/llama", "-tp", "8"],
            LaunchCommand(
                "vllm", ("meta/llama", "-tp", "8"), True, "/venv/bin/python3.12", "vllm serve"
            ),
        ),
        (
            ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"],
            LaunchCommand(
                "vllm",
                ("--model", "m"),
                False,
                "python",
                "python -m vllm.entrypoints.openai.api_server",
            ),
        ),
        (
            ["python", "-m", "vllm.entrypoints.cli.main", "serve", "m"],
            LaunchCommand(
                "vllm", ("m",), True, "python", "python -m vllm.entrypoints.cli.main serve"
            ),
        ),
    ],
)
def test_launch_forms(cmdline: list[str], expected: LaunchCommand) -> None:
    assert recognise(cmdline) == expected


@pytest.mark.parametrize(
    "cmdline",
    [
        [],
        ["python", "-c", "import sglang"],
        ["python", "-m", "http.server"],
        ["sglang::scheduler_TP0"],
        ["/venv/bin/python", "/venv/bin/vllm", "bench", "throughput"],
        ["nginx", "-g", "daemon off;"],
    ],
)
def test_not_a_server_launch(cmdline: list[str]) -> None:
    assert recognise(cmdline) is None


def test_args_takes_a_whole_launch_line_or_just_arguments() -> None:
    assert split_user_argv("vllm", ["vllm", "serve", "m", "-tp", "2"]) == (["m", "-tp", "2"], True)
    assert split_user_argv("sglang", ["--tp", "2"]) == (["--tp", "2"], False)


def test_installed_version_from_the_interpreters_venv(tmp_path: Path) -> None:
    site = tmp_path / "home/u/ml-env/lib/python3.11/site-packages"
    (site / "sglang-0.5.10.dist-info").mkdir(parents=True)
    (site / "sglang-0.5.10.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.10\n\nbody\n"
    )
    found = installed_version("sglang", None, tmp_path, "ml-env/bin/python3", "/home/u", {})
    assert found is not None
    assert (found.version, found.where) == (
        "0.5.10",
        "/home/u/ml-env/lib/python3.11/site-packages/sglang-0.5.10.dist-info/METADATA",
    )
    assert installed_version("vllm", None, tmp_path, "ml-env/bin/python3", "/home/u", {}) is None
