"""The cron line's click-free reading of `envguard check` agrees with click's, and declines
whatever it does not read exactly as click does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
import pytest

from envguard.commands.check import check_command
from envguard.commands.check_argv import DEFAULTS, SWITCHES, VALUED, read_argv
from tests.builders import free_port
from tests.conftest import PROFILES, TUNED, StandIn, envguard_process

DEMO = str(PROFILES / "demo.toml")

READ_HERE = [
    ["-p", DEMO, "--pid", "42"],
    ["--profile", DEMO, "--port", "8000", "-q"],
    ["--match", "sglang", "-p", "kimi", "--all", "--json"],
    ["--quiet", "--port", "65535", "--profile", "x.toml"],
    ["-p", "x", "--pid", "4194304"],
]
LEFT_TO_CLICK = [
    [],
    ["--help"],
    ["-h"],
    ["-p", DEMO],  # no target: click's usage error
    ["-p", DEMO, "--pid", "1", "--port", "2"],  # two targets
    ["--pid", "42"],  # no profile
    ["-p", DEMO, "--port=8000"],
    ["-p" + DEMO, "--pid", "42"],
    ["-p", DEMO, "--pid", "0"],
    ["-p", DEMO, "--pid", "4194305"],
    ["-p", DEMO, "--port", "65536"],
    ["-p", DEMO, "--port", "80_00"],
    ["-p", DEMO, "--port", "+80"],
    ["-p", DEMO, "--port", " 80"],
    ["-p", DEMO, "--port", "\u0668\u0660"],  # Arabic-Indic digits: int() takes them
    ["-p", DEMO, "--port", "8000", "--port", "8001"],  # repeated: click keeps the last
    ["-p", DEMO, "--pid", "42", "-q", "-q"],
    ["-p", DEMO, "--pid", "42", "-qq"],
    ["-p", DEMO, "--pid", "42", "--js"],  # click has no prefix matching, but decide there
    ["-p", DEMO, "--pid", "42", "--config-root", "/tmp"],
    ["-p", DEMO, "--pid", "42", "extra"],
    ["-p", DEMO, "--pid", "42", "--"],
    ["-p", "-q", "--pid", "42"],
    ["-p", "", "--pid", "42"],
    ["-p", DEMO, "--pid"],
]


def clicks_reading(argv: list[str]) -> dict[str, object] | None:
    """The parameters click passes check_command, or None where it refuses the line."""
    try:
        ctx = check_command.make_context("check", list(argv))
    except click.exceptions.Exit:
        return None  # --help
    except click.UsageError:
        return None
    from envguard.commands.options import target_from

    try:
        target_from(ctx.params["pid"], ctx.params["port"], ctx.params["pattern"])
    except click.UsageError:
        return None
    return dict(ctx.params)


@pytest.mark.parametrize("argv", READ_HERE, ids=" ".join)
def test_what_is_read_here_is_what_click_reads(argv: list[str]) -> None:
    here = read_argv(argv)
    assert here is not None
    assert here == clicks_reading(argv)


@pytest.mark.parametrize("argv", LEFT_TO_CLICK, ids=repr)
def test_anything_else_is_left_to_click(argv: list[str]) -> None:
    assert read_argv(argv) is None


def test_every_option_read_here_is_declared_alike_in_click() -> None:
    declared = {opt: param for param in check_command.params for opt in param.opts}
    for string, (name, bounds) in VALUED.items():
        param = declared[string]
        assert param.name == name and not getattr(param, "is_flag", False)
        if bounds is not None:
            assert isinstance(param.type, click.IntRange)
            assert (param.type.min, param.type.max) == bounds
    for string, name in SWITCHES.items():
        assert declared[string].name == name and getattr(declared[string], "is_flag", False)
    assert set(DEFAULTS) == {p.name for p in check_command.params}


def test_both_readings_print_the_same(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    """The same checks through the fast path and, spelled `--port=N`, through click."""
    port = free_port()
    server = standin(TUNED, "--port", str(port))
    drifted = standin({}, "--port", str(free_port()))
    cases = [
        (["-p", DEMO], ["--port", str(port)], ["--port=" + str(port)]),
        (["-p", DEMO, "-q"], ["--pid", str(drifted.pid)], ["--pid=" + str(drifted.pid)]),
        (["-p", DEMO, "--json"], ["--pid", str(server.pid)], ["--pid=" + str(server.pid)]),
        (["-p", "nope.toml", "--json"], ["--pid", "1"], ["--pid=1"]),
        (["-p", DEMO], ["--port", str(free_port())], ["--port=" + str(free_port())]),
    ]
    codes = []
    for common, fast, slow in cases:
        one = envguard_process(tmp_path, "check", *common, *fast)
        two = envguard_process(tmp_path, "check", *common, *slow)
        assert (one.returncode, one.stdout) == (two.returncode, two.stdout)
        if "nothing is listening" not in one.stderr:
            assert one.stderr == two.stderr
        codes.append(one.returncode)
    assert codes == [0, 1, 0, 3, 3]
