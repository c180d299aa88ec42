"""End to end through the real engines: envguard watch writes its textfile, node_exporter
serves it, Prometheus scrapes it every second with hooks/prometheus/envguard.rules.yml
loaded, and Alertmanager routes to this test's receiver. A drift on a stand-in server becomes
an EnvguardDrift notification; the fix becomes its resolution. The rules' `for:` durations
are shortened in the copy Prometheus loads (their timing is promtool's test)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from tests.builders import TUNED_NCCL, free_port, http_server
from tests.conftest import PROFILES, REPO, StandIn, envguard_process

pytestmark = pytest.mark.slow
DEMO = str(PROFILES / "demo.toml")


class Notifications(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        Notifications.received.append(
            json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        )
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def need(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install {package})")
    return found


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[Path]:
    """node_exporter, Prometheus and Alertmanager on 127.0.0.1; yields the textfile dir."""
    exporter = need("prometheus-node-exporter", "prometheus-node-exporter")
    prometheus = need("prometheus", "prometheus")
    alertmanager = need("prometheus-alertmanager", "prometheus-alertmanager")
    Notifications.received = []
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    ports = {name: free_port() for name in ("exporter", "prometheus", "alertmanager")}
    rules = (REPO / "hooks" / "prometheus" / "envguard.rules.yml").read_text()
    (tmp_path / "rules.yml").write_text(re.sub(r"for: \d+m", "for: 1s", rules))
    with http_server(Notifications) as receiver:
        (tmp_path / "am.yml").write_text(
            "route:\n  receiver: test\n  group_by: [alertname]\n  group_wait: 1s\n"
            "  group_interval: 1s\n  repeat_interval: 1h\n"
            f"receivers:\n  - name: test\n    webhook_configs:\n      - url: {receiver}/\n"
            "        send_resolved: true\n"
        )
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: [{tmp_path / 'rules.yml'}]\n"
            "alerting:\n  alertmanagers:\n    - static_configs:\n"
            f"        - targets: ['127.0.0.1:{ports['alertmanager']}']\n"
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{ports['exporter']}']\n"
        )
        commands = [
            [exporter, f"--web.listen-address=127.0.0.1:{ports['exporter']}",
             "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={textfile}"],
            [alertmanager, f"--config.file={tmp_path / 'am.yml'}",
             f"--storage.path={tmp_path / 'am-data'}",
             f"--web.listen-address=127.0.0.1:{ports['alertmanager']}",
             "--cluster.listen-address="],
            [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{ports['prometheus']}"],
        ]  # fmt: skip
        processes = [
            subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for c in commands
        ]
        try:
            yield textfile
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=20)


def wait_for(status: str, deadline: float) -> dict[str, object]:
    while time.monotonic() < deadline:
        for notification in Notifications.received:
            alerts = notification.get("alerts", [])
            for alert in alerts:  # type: ignore[attr-defined]
                if alert["labels"]["alertname"] == "EnvguardDrift" and alert["status"] == status:
                    return alert  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError(f"no {status} EnvguardDrift notification; got {Notifications.received}")


def test_a_drift_pages_through_prometheus_and_alertmanager_and_its_fix_resolves(
    tmp_path: Path, engines: Path, standin: Callable[..., StandIn]
) -> None:
    port = free_port()
    deadline = time.monotonic() + 50

    def watch() -> None:
        envguard_process(
            tmp_path, "watch", "-p", DEMO, "--port", str(port), "--state", str(tmp_path / "s"),
            "--textfile-dir", str(engines),
        )  # fmt: skip

    drifted = standin({}, "--port", str(port))
    watch()
    firing = wait_for("firing", deadline)
    assert firing["labels"]["profile"] == "demo@1"  # type: ignore[index]
    assert firing["labels"]["severity"] == "critical"  # type: ignore[index]
    assert "differs from its profile" in firing["annotations"]["summary"]  # type: ignore[index]
    drifted.process.terminate()
    drifted.process.wait()
    standin(dict(TUNED_NCCL), "--port", str(port))
    watch()
    resolved = wait_for("resolved", deadline)
    assert resolved["labels"]["profile"] == "demo@1"  # type: ignore[index]
