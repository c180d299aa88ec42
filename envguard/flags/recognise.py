"""Recognise a server launch in a process command line, and find the server's arguments.

Forms (docs/servers.md): `python -m sglang.launch_server ARGS`, `sglang serve
ARGS`, `vllm serve [MODEL] ARGS`, `python -m vllm.entrypoints.openai.api_server ARGS`.
Console scripts run through their interpreter, so the kernel shows `python .../bin/vllm serve`.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import NamedTuple

from envguard.knowledge.servers import ServerKind

_PYTHON = re.compile(r"python[0-9.]*$")
# Interpreter options that take a separate value.
_OPTIONS_WITH_VALUE = {"-X", "-W", "--check-hash-based-pycs"}

_MODULES: dict[str, tuple[ServerKind, bool]] = {
    "sglang.launch_server": ("sglang", False),
    "vllm.entrypoints.openai.api_server": ("vllm", False),
}
_SUBCOMMAND_MODULES: dict[str, ServerKind] = {
    "sglang.cli.main": "sglang",
    "vllm.entrypoints.cli.main": "vllm",
}
_SCRIPTS: dict[str, ServerKind] = {"sglang": "sglang", "vllm": "vllm"}


class LaunchCommand(NamedTuple):
    server: ServerKind
    args: tuple[str, ...]  # what the server's argument parser gets
    subcommand: bool  # `vllm serve` (its argv preprocessing differs from api_server's)
    interpreter: str | None  # the Python that runs it, for finding the installed version
    program: str  # how it was started, for messages: "python -m sglang.launch_server"


def recognise(cmdline: tuple[str, ...] | list[str]) -> LaunchCommand | None:
    argv = list(cmdline)
    if not argv:
        return None
    interpreter = None
    index = 0
    if _PYTHON.match(PurePosixPath(argv[0]).name):
        interpreter = argv[0]
        index = 1
        while index < len(argv) and argv[index].startswith("-"):
            option = argv[index]
            if option == "-m" or (option.startswith("-m") and len(option) > 2):
                module = argv[index + 1] if option == "-m" and index + 1 < len(argv) else option[2:]
                rest = argv[index + 2 :] if option == "-m" else argv[index + 1 :]
                return _from_module(module, rest, interpreter)
            if option == "-c":
                return None
            index += 2 if option in _OPTIONS_WITH_VALUE else 1
    if index >= len(argv):
        return None
    script = PurePosixPath(argv[index]).name
    rest = argv[index + 1 :]
    server = _SCRIPTS.get(script)
    if server is not None and rest[:1] == ["serve"]:
        return LaunchCommand(
            server, tuple(rest[1:]), server == "vllm", interpreter or argv[index], f"{script} serve"
        )
    return None


def _from_module(module: str, rest: list[str], interpreter: str) -> LaunchCommand | None:
    if module in _MODULES:
        server, subcommand = _MODULES[module]
        return LaunchCommand(server, tuple(rest), subcommand, interpreter, f"python -m {module}")
    if module in _SUBCOMMAND_MODULES and rest[:1] == ["serve"]:
        server = _SUBCOMMAND_MODULES[module]
        return LaunchCommand(
            server, tuple(rest[1:]), server == "vllm", interpreter, f"python -m {module} serve"
        )
    return None


def split_user_argv(server: ServerKind, argv: list[str]) -> tuple[list[str], bool]:
    """For `envguard args -- ARGV`: accept either the server's arguments or a whole launch
    line; return the arguments and whether vLLM's `serve` preprocessing applies."""
    launch = recognise(argv)
    if launch is not None and launch.server == server:
        return list(launch.args), launch.subcommand
    return argv, server == "vllm"
