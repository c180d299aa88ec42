"""With --json, every outcome is one JSON document on stdout, errors included."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import PROFILES, StandIn, envguard_process

DEMO = str(PROFILES / "demo.toml")


def document(result: object) -> dict[str, object]:
    out = result.stdout  # type: ignore[attr-defined]
    parsed = json.loads(out)
    assert isinstance(parsed, dict)
    return parsed


def test_check_errors_are_json_too(tmp_path: Path) -> None:
    result = envguard_process(tmp_path, "check", "-p", DEMO, "--pid", "4000000", "--json")
    assert result.returncode == 3
    error = document(result)
    assert error["exit_code"] == 3 and "no process with pid 4000000" in str(error["error"])
    assert error["hint"]


def test_stop_and_profile_validate(tmp_path: Path) -> None:
    stopped = envguard_process(tmp_path, "stop", "--pid-file", "none.pid", "--json")
    assert document(stopped) == {
        "pid": None, "outcome": "not running: no pid file at none.pid (nothing to stop)", "exit_code": 0,
    }  # fmt: skip
    (tmp_path / "bad.toml").write_text('schema_version = 1\nname = "b"\n')
    validated = envguard_process(tmp_path, "profile", "validate", DEMO, "bad.toml", "--json")
    files = document(validated)["files"]
    assert validated.returncode == 3
    assert files[0] == {"path": DEMO, "label": "demo@1", "problems": []}  # type: ignore[index]
    assert "version: required key is missing" in files[1]["problems"][0]  # type: ignore[index]


def test_bench_prints_its_record_and_the_benchmarks_output_goes_to_stderr(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    server = fake_sglang("--model-path", "m")
    script = 'print("bench says hi"); print(\'{"tok_s": 88.8}\')'
    result = envguard_process(
        tmp_path, "bench", "-p", DEMO, "--pid", str(server.pid), "--ledger", "l.db", "--json",
        "--", sys.executable, "-c", script,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = document(result)
    assert record["verdict"] == "valid" and record["metrics"] == {"tok_s": 88.8}
    assert record["id"] == 1 and record["exit_code"] == 0
    assert "bench says hi" in result.stderr


def test_launch_prints_the_manifest(tmp_path: Path) -> None:
    result = envguard_process(
        tmp_path, "launch", "-p", DEMO, "--pid-file", "s.pid", "--json",
        "--", sys.executable, "-c", "print('server output')",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    launched = document(result)
    assert launched["exit_code"] == 0 and launched["pid_file"] == "s.pid"
    assert launched["manifest"]["profile"]["name"] == "demo"  # type: ignore[index]
    assert "server output" in result.stderr


def test_no_color_is_decided_once_for_every_command(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    """Styles reach a terminal (here forced), unless NO_COLOR is set - for launch's
    refusal as for check's verdict."""
    from click.testing import CliRunner

    from envguard.cli import cli

    server = fake_sglang("--model-path", "m", env={"NCCL_PROTO": "Simple"})
    unmeetable = tmp_path / "p.toml"  # launch refuses: a pattern alone names no value
    unmeetable.write_text(
        'schema_version = 1\nname = "p"\nversion = 1\n[env.required]\nX = { pattern = "a.*" }\n'
    )
    runner = CliRunner()
    for args in (["check", "-p", DEMO, "--pid", str(server.pid)],
                 ["launch", "-p", str(unmeetable), "--", "true"]):  # fmt: skip
        styled = runner.invoke(cli, args, color=True)
        plain = runner.invoke(cli, args, color=True, env={"NO_COLOR": "1"})
        assert "\x1b[" in styled.output, args
        assert "\x1b[" not in plain.output and plain.output, args
