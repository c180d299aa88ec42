"""/server_info from a real HTTP server on 127.0.0.1, with the /get_server_info fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from envguard.probes.server_info import fetch, local_host
from tests.builders import http_server, static_handler


def serving(paths: dict[str, bytes]) -> Iterator[int]:
    with http_server(static_handler(paths)) as url:
        yield int(url.rsplit(":", 1)[1])


@pytest.fixture
def old_sglang() -> Iterator[int]:
    """SGLang before 0.5.10: only /get_server_info."""
    yield from serving({"/get_server_info": json.dumps({"tp_size": 8, "api_key": "k"}).encode()})


@pytest.fixture
def not_json() -> Iterator[int]:
    yield from serving({"/server_info": b"<html>not here</html>", "/get_server_info": b"[1, 2]"})


def test_falls_back_to_get_server_info(old_sglang: int) -> None:
    assert fetch("0.0.0.0", old_sglang) == {"tp_size": 8, "api_key": "k"}


def test_answers_that_are_not_a_json_object_are_no_answer(not_json: int) -> None:
    assert fetch("127.0.0.1", not_json) is None


def test_nothing_listening_is_no_answer_quickly() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: refused at once
        assert fetch("127.0.0.1", port, timeout=1) is None


def test_wildcard_hosts_are_reached_on_loopback() -> None:
    assert [local_host(h) for h in (None, "0.0.0.0", "::", "10.1.2.3")] == [
        "127.0.0.1",
        "127.0.0.1",
        "127.0.0.1",
        "10.1.2.3",
    ]


def test_a_name_and_an_address_reach_the_same_server(old_sglang: int) -> None:
    # 127.0.0.1 is connected to directly; a name goes through the resolver.
    from envguard.probes.http import get

    by_address = get("127.0.0.1", old_sglang, "/get_server_info", 2.0)
    by_name = get("localhost", old_sglang, "/get_server_info", 2.0)
    assert by_address[0] == 200 and by_address == by_name
    assert get("[::1]", free_port_v6(), "/", 0.5) == (0, b"")  # an IPv6 literal, nothing there


def free_port_v6() -> int:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
            return int(sock.getsockname()[1])
    except OSError:
        pytest.skip("no IPv6 loopback here")
