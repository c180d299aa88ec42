"""Finding the server: by listening port, by command-line regex (and not finding ourselves)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable

import pytest

from envguard.errors import TargetError, UsageError
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


def test_bad_regex_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="is not a valid regular expression"):
        resolve(Target(match="(unclosed"))


def test_the_port_lookup_agrees_with_psutil(standin: Callable[..., StandIn]) -> None:
    """psutil is the oracle: envguard reads /proc/net/tcp{,6} and fds itself (~40 ms less)."""
    psutil = pytest.importorskip("psutil")
    port = free_port()
    server = standin({}, "--port", str(port))
    holders = {
        c.pid for c in psutil.net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    }  # fmt: skip
    assert holders == {server.pid} == set(resolve(Target(port=port)))


def test_several_listeners_on_one_port_are_an_ambiguity(spawn: Callable[..., object]) -> None:
    port = free_port()
    listen = (
        "import socket; s = socket.socket(); "
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1); "
        f"s.bind(('127.0.0.1', {port})); s.listen()"
    )
    one = spawn(listen, {}, start_new_session=True)
    two = spawn(listen, {}, start_new_session=True)
    with pytest.raises(TargetError) as caught:
        resolve(Target(port=port))
    message = caught.value.message
    assert message.startswith(f"port {port} has 2 servers listening (SO_REUSEPORT): ")
    assert f"{one.pid}: " in message and f"{two.pid}: " in message  # type: ignore[attr-defined]
    assert sorted(resolve(Target(port=port), every_match=True)) == sorted([one.pid, two.pid])  # type: ignore[attr-defined]


def test_thousands_of_matches_are_summarised(spawn: Callable[..., object]) -> None:
    marker = unique("many")
    for _ in range(12):
        spawn(f"'{marker}'", {}, start_new_session=True)
    with pytest.raises(TargetError) as caught:
        resolve(Target(match=marker))
    assert caught.value.message.endswith("; ... and 2 more")
    assert caught.value.message.count(marker) == 1 + 10  # the pattern, then ten servers
