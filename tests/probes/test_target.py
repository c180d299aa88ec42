"""Finding the server: by listening port, by command-line regex (and not finding ourselves)."""

from __future__ import annotations

import subprocess
import sys
import uuid
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


def unique(word: str) -> str:
    """A marker only this test's processes carry (another checkout's tests may run beside)."""
    return f"{word}-{uuid.uuid4().hex[:10]}"


def test_match_takes_the_top_of_the_tree(standin: Callable[..., StandIn]) -> None:
    marker = unique("marker")
    server = standin({}, "--schedulers", "2", "--title-prefix", f"{marker}::")
    # The workers' titles match too; only the launcher is the server.
    assert resolve(Target(match=f"{marker}")) == [server.pid]


def test_several_servers_are_listed_unless_all(standin: Callable[..., StandIn]) -> None:
    twin = unique("twin")
    one = standin({}, "--schedulers", "1", "--title-prefix", f"{twin}::")
    two = standin({}, "--schedulers", "1", "--title-prefix", f"{twin}::")
    with pytest.raises(TargetError) as caught:
        resolve(Target(match=f"standin.*{twin}"))
    message = caught.value.message
    assert message.startswith(f"--match 'standin.*{twin}' matches 2 servers: {one.pid}: ")
    assert f"; {two.pid}: " in message
    assert resolve(Target(match=f"standin.*{twin}"), every_match=True) == [one.pid, two.pid]


def test_match_does_not_find_the_shell_that_started_envguard() -> None:
    marker = unique("self")
    script = (
        "from envguard.probes.target import Target, resolve\n"
        f"try:\n    resolve(Target(match='{marker}'))\n"
        "except Exception as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "{script}" {marker}'],
        capture_output=True,
        text=True,
    )
    assert result.stdout == f"no process command line matches '{marker}'\n"


def test_bad_regex() -> None:
    with pytest.raises(TargetError, match="is not a valid regular expression"):
        resolve(Target(match="(unclosed"))
