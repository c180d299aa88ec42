"""`envguard bench` end to end: a real server tree, real commands, a real SQLite ledger."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envguard.ledger.store import Ledger
from tests.benchmarking.test_throughput import FakeInference
from tests.builders import http_server
from tests.conftest import PROFILES, StandIn, envguard_process

DEMO = str(PROFILES / "demo.toml")
PRINT_METRICS = [
    sys.executable,
    "-c",
    'import json; print("warming up"); print(json.dumps({"tok_s": 88.8}))',
]


def bench(
    tmp_path: Path, *args: str, ledger: str | None = None
) -> subprocess.CompletedProcess[str]:
    ledger = ledger or str(tmp_path / "ledger.db")
    return envguard_process(tmp_path, "bench", "-p", DEMO, "--ledger", ledger, *args)


def records(tmp_path: Path) -> list[object]:
    if not (tmp_path / "ledger.db").exists():
        return []
    return list(Ledger.open(tmp_path / "ledger.db").select())


def test_a_clean_run_is_recorded_with_its_fingerprint(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    server = fake_sglang("--model-path", "m", "--tp", "2")
    result = bench(tmp_path, "--pid", str(server.pid), "--", *PRINT_METRICS)
    assert result.returncode == 0, result.stderr
    assert result.stdout == 'warming up\n{"tok_s": 88.8}\n'  # streamed through
    [record] = records(tmp_path)
    assert record.verdict == "valid" and record.metrics == {"tok_s": 88.8}  # type: ignore[attr-defined]
    assert record.setup["flags"] == {"model_path": "m", "tp_size": 2}  # type: ignore[attr-defined]
    assert f"recorded #1: tok_s=88.8 (fingerprint {record.fingerprint[:19]})" in result.stderr  # type: ignore[attr-defined]


def test_drift_before_the_run_refuses_without_running_it(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    server = fake_sglang("--model-path", "m", env={"NCCL_PROTO": "Simple"})
    marker = tmp_path / "ran"
    result = bench(tmp_path, "--pid", str(server.pid), "--", "touch", str(marker))
    assert result.returncode == 1
    assert "mismatch     NCCL_PROTO: expected LL, found 'Simple'" in result.stderr
    assert "envguard: the server does not match demo@1: the benchmark was not run" in result.stderr
    assert not marker.exists()
    assert records(tmp_path) == []


def test_a_server_that_changes_during_the_run_is_recorded_as_refused(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    server = fake_sglang("--model-path", "m")
    worker = sorted(
        int(p) for p in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    )[-1]
    # The "benchmark" kills a worker: what a crash-and-restart looks like from outside.
    result = bench(
        tmp_path,
        "--pid",
        str(server.pid),
        "--",
        sys.executable,
        "-c",
        f'import os, json; os.kill({worker}, 9); print(json.dumps({{"tok_s": 62.9}}))',
    )
    assert result.returncode == 1
    [record] = records(tmp_path)
    assert record.verdict == "refused"  # type: ignore[attr-defined]
    assert record.metrics == {"tok_s": 62.9}  # type: ignore[attr-defined]
    assert record.reasons[0].startswith(
        "the server's processes changed during the run (restarted?): gone: "
    )  # type: ignore[attr-defined]
    assert "refused: recorded #1 as refused, not as a result:" in result.stderr


def test_a_failing_command_or_no_metrics_is_not_a_result(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    server = fake_sglang("--model-path", "m")
    failed = bench(
        tmp_path, "--pid", str(server.pid), "--", "sh", "-c", "echo '{\"tok_s\": 1}'; exit 4"
    )
    silent = bench(tmp_path, "--pid", str(server.pid), "--", "true")
    assert (failed.returncode, silent.returncode) == (1, 1)
    reasons = [r.reasons for r in records(tmp_path)]  # type: ignore[attr-defined]
    assert reasons == [
        ("no metrics: print a JSON object last, or give --metric NAME=REGEX",),
        ("the benchmark command exited with status 4",),
    ]


def test_an_unwritable_ledger_keeps_the_result_in_a_file(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    server = fake_sglang("--model-path", "m")
    result = bench(
        tmp_path, "--pid", str(server.pid), "--", *PRINT_METRICS, ledger="/proc/self/ledger.db"
    )
    assert result.returncode == 3
    assert result.stdout == 'warming up\n{"tok_s": 88.8}\n'  # printed all the same
    [kept] = tmp_path.glob("envguard-bench-*.json")
    assert f"the result and the benchmark's output are saved in {kept}" in result.stderr
    saved = json.loads(kept.read_text())
    assert saved["metrics"] == {"tok_s": 88.8} and "warming up" in saved["output"]


@pytest.fixture
def inference() -> Iterator[int]:
    with http_server(FakeInference) as url:
        yield int(url.rsplit(":", 1)[1])


def test_throughput_probe_is_recorded(
    tmp_path: Path, fake_sglang: Callable[..., StandIn], inference: int
) -> None:
    server = fake_sglang("--model-path", "m")
    result = bench(
        tmp_path,
        "--pid",
        str(server.pid),
        "--throughput",
        "--url",
        f"http://127.0.0.1:{inference}",
        "--max-tokens",
        "20",
        "--runs",
        "2",
        "--warmup",
        "0",
    )
    assert result.returncode == 0, result.stderr
    assert "  Run 2/2: 20 tokens in " in result.stdout
    [record] = records(tmp_path)
    assert record.metrics["tokens"] == 40 and record.metrics["runs"] == 2  # type: ignore[attr-defined]
    assert record.command[0] == "envguard-throughput"  # type: ignore[attr-defined]


def test_usage_errors(tmp_path: Path) -> None:
    assert bench(tmp_path, "--pid", "1").returncode == 2  # neither a command nor --throughput
    assert bench(tmp_path, "--", "true").returncode == 2  # no target


def test_a_setup_change_during_the_run_names_what_changed(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    """The benchmark itself writes an NCCL config file the server's ranks would read."""
    conf = tmp_path / "nccl.conf"
    conf.write_text("")
    server = fake_sglang("--model-path", "m", env={"NCCL_CONF_FILE": str(conf)})
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'schema_version = 1\nname = "p"\nversion = 1\nextends = ["{DEMO}"]\n'
        '[env.optional]\nNCCL_CONF_FILE = { pattern = ".*" }\n'
        'NCCL_IB_HCA = { pattern = ".*" }\n'
    )
    script = f'open({str(conf)!r}, "w").write("NCCL_IB_HCA=mlx5_0\\n"); print(\'{{"tok_s": 1}}\')'
    result = envguard_process(
        tmp_path,
        "bench",
        "-p",
        str(profile),
        "--ledger",
        str(tmp_path / "ledger.db"),
        "--pid",
        str(server.pid),
        "--",
        sys.executable,
        "-c",
        script,
    )
    assert result.returncode == 1, result.stderr
    [record] = records(tmp_path)
    assert record.reasons == ("the setup changed during the run: env.NCCL_IB_HCA",)  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_metric_that_is_not_a_number_is_not_a_result(
    tmp_path: Path, fake_sglang: Callable[..., StandIn], value: str
) -> None:
    server = fake_sglang("--model-path", "m")
    script = f'print(\'{{"tok_s": {value}, "runs": 3}}\')'
    result = bench(tmp_path, "--pid", str(server.pid), "--", sys.executable, "-c", script)
    assert result.returncode == 1, result.stderr
    assert "(not a finite number)" in result.stderr
    [record] = records(tmp_path)
    assert record.verdict == "refused" and record.metrics == {"runs": 3.0}  # type: ignore[attr-defined]
    exported = envguard_process(tmp_path, "ledger", "export", "--ledger", "ledger.db")
    assert json.loads(exported.stdout)[0]["metrics"] == {"runs": 3.0}


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    bad_metric = bench(tmp_path, "--pid", "1", "--metric", "x=(", "--", "true")
    assert bad_metric.returncode == 2, bad_metric.stderr
    assert "--metric x: not a valid regular expression" in bad_metric.stderr
    for args in (["ledger", "show", str(2**64)], ["ledger", "list", "--limit", str(2**64)]):
        result = envguard_process(tmp_path, *args)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    nan = envguard_process(tmp_path, "launch", "-p", DEMO, "--timeout", "nan", "--", "true")
    assert nan.returncode == 2 and "not a finite number of seconds" in nan.stderr
