"""envguard watch end to end: real stand-in servers, a real HTTP receiver on 127.0.0.1, a
real alert command, real state files. One alert per change, none while unchanged, retried
after a failed delivery, and never past --timeout."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from tests.builders import TUNED_NCCL, free_port, http_server
from tests.conftest import PROFILES, StandIn, envguard_process

DEMO = str(PROFILES / "demo.toml")


class Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, object]]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if Receiver.status == 200:
            Receiver.received.append(json.loads(body))
        self.send_response(Receiver.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.received, Receiver.status = [], 200
    with http_server(Receiver) as url:
        yield url


def watch(
    tmp_path: Path, pid: int, *extra: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return envguard_process(
        tmp_path, "watch", "-p", DEMO, "--pid", str(pid), "--state", str(tmp_path / "state"),
        *extra, timeout=timeout,
    )  # fmt: skip


def test_one_alert_per_change_none_while_unchanged(
    tmp_path: Path, standin: Callable[..., StandIn], receiver: str
) -> None:
    """The cron case: the server is found by its port, restarted under it three times."""
    port = free_port()
    lost = {k: v for k, v in TUNED_NCCL.items() if k != "NCCL_PROTO"}

    def by_port() -> int:
        return envguard_process(
            tmp_path, "watch", "-p", DEMO, "--port", str(port), "--state", str(tmp_path / "s"),
            "--webhook", receiver,
        ).returncode  # fmt: skip

    def restart(env: dict[str, str]) -> None:
        for server in list(started):
            server.process.terminate()
            server.process.wait()
            started.remove(server)
        started.append(standin(env, "--port", str(port)))

    started: list[StandIn] = []
    restart(dict(TUNED_NCCL))
    assert by_port() == 0 and Receiver.received == []  # compliant: nothing to say
    restart(lost)
    assert [by_port(), by_port()] == [1, 1]  # appears once, then stays: one alert
    assert [e["event"]["kind"] for e in Receiver.received] == ["drift_appeared"]  # type: ignore[index]
    event = Receiver.received[0]
    assert "missing NCCL_PROTO" in str(event["text"]) and event["event"]["schema"] == 1  # type: ignore[index]
    restart(lost)  # the same drift on a restarted server is the same drift
    assert by_port() == 1 and len(Receiver.received) == 1
    restart({k: v for k, v in TUNED_NCCL.items() if k != "NCCL_ALGO"})  # another drift: one
    assert [by_port(), by_port()] == [1, 1]
    restart(dict(TUNED_NCCL))  # fixed: one resolve
    assert by_port() == 0
    assert [e["event"]["kind"] for e in Receiver.received] == [  # type: ignore[index]
        "drift_appeared", "drift_changed", "drift_resolved",
    ]  # fmt: skip


def test_an_undelivered_alert_is_retried_on_the_next_run(
    tmp_path: Path, standin: Callable[..., StandIn], receiver: str
) -> None:
    drifted = standin({})
    Receiver.status = 503
    first = watch(tmp_path, drifted.pid, "--webhook", receiver)
    assert first.returncode == 1  # the verdict, not the sink, decides the exit code
    assert "could not deliver an alert" in first.stderr and "HTTP 503" in first.stderr
    Receiver.status = 200
    watch(tmp_path, drifted.pid, "--webhook", receiver)
    assert [e["event"]["kind"] for e in Receiver.received] == ["drift_appeared"]  # type: ignore[index]
    assert watch(tmp_path, drifted.pid, "--webhook", receiver, "--strict-sinks").returncode == 1


def test_a_receiver_that_never_answers_cannot_hold_the_run(
    tmp_path: Path, standin: Callable[..., StandIn]
) -> None:
    import socket
    from http.server import ThreadingHTTPServer

    silent = socket.socket()
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections, never answers
    port = silent.getsockname()[1]
    drifted = standin({})
    started = time.monotonic()
    result = watch(
        tmp_path, drifted.pid, "--webhook", f"http://127.0.0.1:{port}/", "--timeout", "3",
        "--strict-sinks",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    silent.close()
    assert result.returncode == 3 and "could not deliver" in result.stderr
    assert elapsed < 30  # bounded by --timeout (3 s), not by the receiver
    # The receiver answers again on the same address: the owed alert arrives.
    Receiver.received = []
    ThreadingHTTPServer.allow_reuse_address = True
    answering = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    threading.Thread(target=answering.serve_forever, daemon=True).start()
    try:
        assert (
            watch(tmp_path, drifted.pid, "--webhook", f"http://127.0.0.1:{port}/").returncode == 1
        )
    finally:
        answering.shutdown()
        answering.server_close()
    assert [e["event"]["kind"] for e in Receiver.received] == ["drift_appeared"]  # type: ignore[index]


def test_the_alert_command_gets_the_event_and_overlapping_runs_send_one(
    tmp_path: Path, standin: Callable[..., StandIn]
) -> None:
    drifted = standin({})
    log = tmp_path / "alerts.jsonl"
    command = f"cat >> {log}; echo >> {log}"
    runs = [
        threading.Thread(target=watch, args=(tmp_path, drifted.pid, "--alert-cmd", command))
        for _ in range(8)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [e["kind"] for e in events] == ["drift_appeared"]
    assert events[0]["severity"] == "critical" and events[0]["profile"] == "demo@1"


def test_a_server_that_goes_away(tmp_path: Path, receiver: str) -> None:
    port = free_port()
    result = envguard_process(
        tmp_path, "watch", "-p", DEMO, "--port", str(port), "--state", str(tmp_path / "s"),
        "--webhook", receiver,
    )  # fmt: skip
    assert result.returncode == 3
    assert [e["event"]["kind"] for e in Receiver.received] == ["server_gone"]  # type: ignore[index]


def test_textfile_metrics_parse_as_prometheus_exposition(
    tmp_path: Path, standin: Callable[..., StandIn]
) -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    drifted = standin(
        {"NCCL_PROTO": "Simple", **{k: v for k, v in TUNED_NCCL.items() if k != "NCCL_PROTO"}}
    )
    directory = tmp_path / "textfile"
    directory.mkdir()
    assert watch(tmp_path, drifted.pid, "--textfile-dir", str(directory)).returncode == 1
    [path] = directory.glob("*.prom")
    families = {f.name: f for f in parser.text_string_to_metric_families(path.read_text())}
    value = {name: [s.value for s in family.samples] for name, family in families.items()}
    assert value["envguard_drift"] == [1.0] and value["envguard_up"] == [1.0]
    assert value["envguard_findings"] == [5.0]  # one mismatch in each of the 5 processes
    [info] = families["envguard_setup_info"].samples
    assert info.labels["fingerprint"].startswith("sha256:") and info.labels["profile"] == "demo@1"


def test_alertmanager_gets_firing_alerts_and_their_resolution(
    tmp_path: Path, standin: Callable[..., StandIn], receiver: str
) -> None:
    """Alertmanager's v2 API: active alerts are re-sent every run (it resolves what it
    stops hearing about), a fixed one is sent with endsAt."""
    port = free_port()

    def by_port() -> None:
        envguard_process(
            tmp_path, "watch", "-p", DEMO, "--port", str(port), "--state", str(tmp_path / "s"),
            "--alertmanager", receiver,
        )  # fmt: skip

    drifted = standin({}, "--port", str(port))
    by_port()
    by_port()
    assert len(Receiver.received) == 2  # re-sent while it fires
    [alert] = Receiver.received[0]  # type: ignore[misc]
    assert alert["labels"]["alertname"] == "EnvguardDrift"
    assert alert["labels"]["severity"] == "critical" and alert["labels"]["profile"] == "demo@1"
    assert "missing NCCL_PROTO" in alert["annotations"]["findings"]
    assert "endsAt" not in alert
    drifted.process.terminate()
    drifted.process.wait()
    standin(dict(TUNED_NCCL), "--port", str(port))
    by_port()
    [resolution] = Receiver.received[-1]  # type: ignore[misc]
    assert resolution["labels"]["alertname"] == "EnvguardDrift" and "endsAt" in resolution
    by_port()
    assert len(Receiver.received) == 3  # resolved and nothing fires: nothing more to send


def test_a_pause_for_maintenance_sends_nothing_then_compares_with_before(
    tmp_path: Path, standin: Callable[..., StandIn], receiver: str
) -> None:
    port = free_port()

    def by_port(*extra: str) -> subprocess.CompletedProcess[str]:
        return envguard_process(
            tmp_path, "watch", "-p", DEMO, "--port", str(port), "--state", str(tmp_path / "s"),
            "--webhook", receiver, *extra,
        )  # fmt: skip

    tuned = standin(dict(TUNED_NCCL), "--port", str(port))
    assert by_port().returncode == 0
    soon = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 4))
    paused = by_port("--pause-until", soon)
    assert f"paused until {soon[:16]}" in paused.stdout
    tuned.process.terminate()
    tuned.process.wait()
    standin({}, "--port", str(port))  # maintenance: restarted without its tuning
    assert by_port().returncode == 1 and Receiver.received == []  # paused: nothing sent
    time.sleep(4.5)  # the pause ends (a wall-clock time: nothing else to wait on)
    assert by_port().returncode == 1
    assert [e["event"]["kind"] for e in Receiver.received] == ["drift_appeared"]  # type: ignore[index]
