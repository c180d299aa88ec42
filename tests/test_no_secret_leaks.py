"""No secret in any byte envguard writes: console, JSON, ledger, manifest, pid file, log
header, systemd unit, profile errors. Real processes hold 46 secret shapes
(tests/secret_shapes.py) in their environment, their flags and a benchmark's command; every
output of every path is grepped for the marker they all carry."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import secret_shapes
from tests.conftest import FAKE_SITE, StandIn, envguard_process
from tests.secret_shapes import MARKER

SECRET_ENV = {**secret_shapes.ENV_BY_NAME, **secret_shapes.ENV_BY_VALUE}

PROFILE = f"""\
schema_version = 1
name = "leaks"
version = 1

[server]
kind = "sglang"
health_url = "http://user:pw-{MARKER}47@127.0.0.1:9/health"

[server.flags]
api-key = "expected-{MARKER}48"
tp-size = 4

[env]
strict_prefixes = ["NCCL_", "SGLANG_", "VLLM_", "UCX_"]

[env.required]
HF_TOKEN = "other-{MARKER}49"
DECLARED_URL = "postgres://svc:pw-{MARKER}50@db.internal:5432/other"
NCCL_PROTO = "LL"
"""

SGLANG = [sys.executable, "-m", "sglang.launch_server", "--model-path", "m", "--tp-size", "2"]


def assert_clean(*texts: str | bytes) -> None:
    for text in texts:
        data = text.encode() if isinstance(text, str) else text
        assert MARKER.encode() not in data, data[
            max(0, data.find(MARKER.encode()) - 200) : data.find(MARKER.encode()) + 60
        ]


INPUTS = {"p.toml", "nccl.conf"}  # the test's own files, which hold the secrets on purpose


def written_files(root: Path) -> list[Path]:
    """Every file envguard wrote: ledger and its WAL, manifest, pid file, log, the parse
    cache's entries. (Not the profile cache: a copy of the profile itself, private to its
    user, 0600 in a 0700 directory: tests/profile/test_cache.py.)"""
    profiles = root / ".envguard-cache" / "profiles"
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and p.name not in INPUTS and profiles not in p.parents
    ]


@pytest.fixture
def leaky_server(tmp_path: Path, fake_sglang: Callable[..., StandIn]) -> StandIn:
    conf = tmp_path / "nccl.conf"
    conf.write_text(f"NCCL_SECRET_TOKEN= {MARKER}51 \nNCCL_PROTO=LL\n")
    env = {**SECRET_ENV, "NCCL_CONF_FILE": str(conf)}
    return fake_sglang(
        "--model-path", "m", "--tp-size", "2", *secret_shapes.SERVER_ARGS_SGLANG, env=env
    )


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = envguard_process(tmp_path, *args, env=env)
    return result.stdout + result.stderr


def test_check_text_and_json(tmp_path: Path, leaky_server: StandIn) -> None:
    (tmp_path / "p.toml").write_text(PROFILE)
    text = run(tmp_path, "check", "-p", "p.toml", "--pid", str(leaky_server.pid))
    assert "HF_TOKEN: expected <redacted>, found '<redacted>'" in text
    assert "postgres://<redacted>@db.internal:5432/" in text  # declared: shown, redacted
    assert "--api-key" in text and "--tp-size" in text  # the findings are there
    as_json = run(tmp_path, "check", "-p", "p.toml", "--pid", str(leaky_server.pid), "--json")
    assert '"kind": "mismatch"' in as_json
    entries = list((tmp_path / ".envguard-cache" / "launch-lines").glob("*.json"))
    assert len(entries) == 1  # the launch line, parsed once, with --api-key's place redacted
    assert_clean(text, as_json, *(p.read_bytes() for p in written_files(tmp_path)))


def test_capture_writes_no_secret(tmp_path: Path, leaky_server: StandIn) -> None:
    """The server holds every shape (environment, a config file, --api-key and
    --admin-api): the captured profile and everything printed hold none, and say what
    was left out."""
    out = tmp_path / "captured.toml"
    args = ("capture", "--pid", str(leaky_server.pid), "--name", "c", "-o", str(out))
    text = run(tmp_path, *args)
    as_json = run(tmp_path, *args, "--force", "--json")
    assert "note: --api-key left out: a secret" in text
    assert "note: [server] command left out: the command line holds a secret" in text
    assert "note: NCCL_SECRET_TOKEN left out: it looks like a credential" in text
    captured = out.read_text()
    assert 'NCCL_PROTO = "LL"' in captured and "tp-size = 2" in captured
    assert_clean(text, as_json, captured)


def test_bench_ledger_and_every_ledger_view(
    tmp_path: Path, fake_sglang: Callable[..., StandIn]
) -> None:
    env = {**SECRET_ENV, "NCCL_PROTO": "LL"}
    server = fake_sglang("--model-path", "m", *secret_shapes.SERVER_ARGS_SGLANG, env=env)
    (tmp_path / "p.toml").write_text(
        'schema_version = 1\nname = "b"\nversion = 1\n[server]\nkind = "sglang"\n'
        f'[env.required]\nNCCL_PROTO = "LL"\nDECLARED_URL = "{SECRET_ENV["DECLARED_URL"]}"\n'
    )
    script = "import json; print(json.dumps({'tok_s': 1.5}))"
    ledger = str(tmp_path / "ledger.db")
    outputs = []
    for _ in range(2):
        outputs.append(
            run(
                tmp_path, "bench", "-p", "p.toml", "--pid", str(server.pid), "--ledger", ledger,
                "--", sys.executable, "-c", script, *secret_shapes.BENCH_ARGS,
            )
        )  # fmt: skip
    assert "recorded #1: tok_s=1.5" in outputs[0]
    outputs.append(
        run(
            tmp_path, "bench", "-p", "p.toml", "--pid", str(server.pid), "--ledger", ledger,
            "--throughput", "--url", f"http://user:pw-{MARKER}52@127.0.0.1:9", "--runs", "1",
        )
    )  # fmt: skip
    assert "refused" in outputs[-1]
    for view in (
        ["list", "--json"],
        ["list"],
        ["show", "1"],
        ["show", "3"],
        ["export"],
        ["compare", "1", "2", "--json"],
        ["compare", "1", "2"],
    ):
        outputs.append(run(tmp_path, "ledger", view[0], "--ledger", ledger, *view[1:]))
    assert '"fingerprint": "sha256:' in outputs[3]
    # The secrets are present in the setup (so a changed key is a changed setup) ...
    assert '"SGLANG_API_KEY": "<redacted>"' in outputs[5]
    assert '"api_key": "<redacted>"' in outputs[5]
    # ... and every tuning value is still there.
    assert '"model_path": "m"' in outputs[5]
    assert_clean(*outputs, *(p.read_bytes() for p in written_files(tmp_path)))


def test_launch_detached_manifest_pid_file_log_header_and_stop(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(PROFILE)
    env = {**SECRET_ENV, "PYTHONPATH": str(FAKE_SITE)}
    output = run(
        tmp_path, "launch", "-p", "p.toml", "--detach", "--force", "--timeout", "1",
        "--pid-file", "s.pid", "--log", "s.log",
        "--", *SGLANG, *secret_shapes.SERVER_ARGS_SGLANG,
        env=env,
    )  # fmt: skip
    assert "started pid" in output
    output += run(tmp_path, "stop", "--pid-file", "s.pid", "--grace", "5")
    assert (tmp_path / "s.manifest.json").exists()
    header = (tmp_path / "s.log").read_text().splitlines()[0]
    assert header.startswith("==== ") and "--api-key '<redacted>'" in header
    assert_clean(output, header, *(p.read_bytes() for p in written_files(tmp_path)))


def test_systemd_unit_keeps_secrets_in_an_environment_file(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(PROFILE)
    result = envguard_process(
        tmp_path, "launch", "-p", "p.toml", "--print-systemd", "--force",
        "--", *SGLANG, *secret_shapes.SERVER_ARGS_SGLANG,
        env={"PYTHONPATH": str(FAKE_SITE)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    unit = result.stdout
    assert "EnvironmentFile=/etc/envguard/leaks.env" in unit
    assert "--api-key ${ENVGUARD_SECRET_API_KEY}" in unit
    assert "--admin-api=${ENVGUARD_SECRET_ADMIN_API}" in unit
    assert "HF_TOKEN" in unit and 'Environment="HF_TOKEN' not in unit
    assert_clean(unit, result.stderr)


@pytest.mark.parametrize(
    ("server", "argv"),
    [
        ("vllm", ["serve", "m", *secret_shapes.SERVER_ARGS_VLLM]),
        ("sglang", ["--model-path", "m", *secret_shapes.SERVER_ARGS_SGLANG]),
        # sglang 0.5.2 has no --admin-api-key: its parser quotes the rejected argument.
        ("sglang", ["--version", "0.5.2", "--", "--model-path", "m", "--hf-token", MARKER]),
    ],
)
def test_args_shows_how_a_line_is_read_without_its_secrets(
    tmp_path: Path, server: str, argv: list[str]
) -> None:
    version = argv[1:2] if argv[0] == "--version" else []
    rest = argv[3:] if version else argv
    for extra in ([], ["--json"], ["--all"]):
        args = ["args", "--server", server, *(["--version", *version] if version else [])]
        out = run(tmp_path, *args, *extra, "--", *rest)
        assert out
        assert_clean(out)


def test_profile_errors_do_not_echo_secret_values(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(
        textwrap.dedent(f"""\
        schema_version = 1
        name = "bad"
        version = 1
        [server]
        health_url = "ftp://user:pw-{MARKER}53@host/"
        [env.required]
        HF_TOKEN = ["hf_{MARKER}54abcdefghijklmnopqrstu"]
        VLLM_API_KEY = {{ one_of = "{MARKER}55" }}
        """)
    )
    result = envguard_process(tmp_path, "profile", "validate", "bad.toml")
    assert result.returncode == 3
    assert "env.required.HF_TOKEN" in result.stderr
    assert_clean(result.stdout, result.stderr)


def test_watch_events_textfile_and_state(tmp_path: Path, leaky_server: StandIn) -> None:
    (tmp_path / "p.toml").write_text(PROFILE)
    (tmp_path / "metrics").mkdir()
    output = run(
        tmp_path, "watch", "-p", "p.toml", "--pid", str(leaky_server.pid),
        "--state", str(tmp_path / "state"), "--textfile-dir", str(tmp_path / "metrics"),
        "--alert-cmd", f"cat > {tmp_path / 'event.json'}",
    )  # fmt: skip
    assert "critical: drift" in output
    assert "HF_TOKEN" in (tmp_path / "event.json").read_text()  # the finding is there ...
    assert_clean(output, *(p.read_bytes() for p in written_files(tmp_path)))  # ... not its value
