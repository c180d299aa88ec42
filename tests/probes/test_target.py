"""Finding the server: by listening port, by command-line regex (and not finding ourselves)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from envguard.errors import TargetError
from envguard.probes.target import Target, resolve
from tests.builders import free_port
from tests.conftest import StandIn


def test_by_port_finds_the_launcher_not_a_worker(standin: Callable[..., StandIn]) -> None:
    port = free_port()
    server = standin({}, "--port", str(port))
    assert resolve(Target(port=port)) == [server.pid]


def test_nothing_on_the_port() -> None:
    port = free_port()
    with pytest.raises(TargetError, match=f"nothing is listening on TCP port {port}"):
        resolve(Target(port=port))


def test_match_takes_the_top_of_the_tree(standin: Callable[..., StandIn]) -> None:
    server = standin({}, "--schedulers", "2", "--title-prefix", "marker-7f3a::")
    # The workers' titles match too; only the launcher is the server.
    assert resolve(Target(match="marker-7f3a|envguard.testing.standin")) == [server.pid]


def test_several_servers_are_listed_unless_all(standin: Callable[..., StandIn]) -> None:
    one = standin({}, "--schedulers", "1", "--title-prefix", "twin-91c2::")
    two = standin({}, "--schedulers", "1", "--title-prefix", "twin-91c2::")
    with pytest.raises(TargetError) as caught:
        resolve(Target(match="standin.*twin-91c2"))
    message = caught.value.message
    assert message.startswith(f"--match 'standin.*twin-91c2' matches 2 servers: {one.pid}: ")
    assert f"; {two.pid}: " in message
    assert resolve(Target(match="standin.*twin-91c2"), every_match=True) == [one.pid, two.pid]


def test_match_does_not_find_the_shell_that_started_envguard() -> None:
    script = (
        "from envguard.probes.target import Target, resolve\n"
        "try:\n    resolve(Target(match='self-marker-5d1e'))\n"
        "except Exception as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "{script}" self-marker-5d1e'],
        capture_output=True,
        text=True,
    )
    assert result.stdout == "no process command line matches 'self-marker-5d1e'\n"


def test_bad_regex() -> None:
    with pytest.raises(TargetError, match="is not a valid regular expression"):
        resolve(Target(match="(unclosed"))
