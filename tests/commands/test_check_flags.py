"""`envguard check` on server flags: a real process whose command line is an SGLang launch."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from tests.builders import free_port, tuned_launch
from tests.conftest import FAKE_SITE, PROFILES, StandIn, run_cli

SEED = PROFILES / "kimi-k2.5-int4-tp8.toml"
SEED_ARGS = tuned_launch(without=("--tp-size", "--mem-fraction-static", "--port"))


def seed_on(port: int, write_profile: Callable[..., Path], extra: str = "") -> Path:
    """The seed profile, on a port free on this machine (8000 may be taken)."""
    return write_profile(
        f'schema_version = 1\nname = "seed-here"\nversion = 1\nextends = ["{SEED}"]\n'
        f"[server.flags]\nport = {port}\n{extra}"
    )


def sglang_profile(write_profile: Callable[..., Path], server_toml: str) -> Path:
    """A profile for kind sglang; `server_toml` continues its [server] table."""
    return write_profile(
        f'schema_version = 1\nname = "p"\nversion = 1\n[server]\nkind = "sglang"\n{server_toml}'
    )


def flag_findings(out: str) -> list[tuple[str, str, str | None, str | None, str | None]]:
    return [
        (f["kind"], f["subject"], f["expected"], f["actual"], f["source"])
        for f in json.loads(out)["findings"]
    ]


def test_abbreviated_flags_satisfy_the_seed_profile(
    runner: CliRunner, fake_sglang: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    port = free_port()
    server = fake_sglang(
        *SEED_ARGS,
        "--tp",
        "8",
        "--mem-frac",
        "0.88",
        "--port",
        str(port),
        env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"},
    )
    profile = seed_on(port, write_profile)
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid))
    assert code == 0, out
    assert out.splitlines()[1] == (
        f"launch: python -m sglang.launch_server (pid {server.pid}), installed sglang 0.5.23 "
        f"({FAKE_SITE}/sglang-0.5.23.dist-info/METADATA), flags read with sglang 0.5.23; "
        "/server_info unreachable"
    )


def test_wrong_tp_size_or_memory_fraction_is_drift(
    runner: CliRunner, fake_sglang: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    port = free_port()
    env = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    tp4 = fake_sglang(
        *SEED_ARGS, "--tp-size", "4", "--mem-frac", "0.88", "--port", str(port), env=env
    )
    code, out, _ = run_cli(
        runner, "check", "-p", str(seed_on(port, write_profile)), "--pid", str(tp4.pid), "--json"
    )
    assert code == 1
    assert flag_findings(out) == [("mismatch", "--tp-size", "8", "4 (as --tp-size)", "cmdline")]
    tp4.process.terminate()
    tp4.process.wait()

    port = free_port()
    mem = fake_sglang(
        *SEED_ARGS, "--tp", "8", "--mem-fraction-static", "0.9", "--port", str(port), env=env
    )
    code, out, _ = run_cli(
        runner,
        "check",
        "-p",
        str(seed_on(port, write_profile, "")),
        "--pid",
        str(mem.pid),
        "--json",
    )
    assert code == 1
    assert flag_findings(out) == [
        ("mismatch", "--mem-fraction-static", "0.88", "0.9 (as --mem-fraction-static)", "cmdline")
    ]


def test_a_default_value_is_satisfied_by_omission_and_a_missing_one_is_not(
    runner: CliRunner, fake_sglang: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    server = fake_sglang("--model-path", "m")
    profile = sglang_profile(
        write_profile,
        '[server.flags]\nschedule-policy = "fcfs"\nport = 30000\nmem-fraction-static = 0.88\n',
    )
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid), "--json")
    assert code == 1
    assert flag_findings(out) == [
        ("missing", "--mem-fraction-static", "0.88", "not given (default None)", "default")
    ]


def test_server_info_resolves_what_the_command_line_leaves_out(
    runner: CliRunner, fake_sglang: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    port = free_port()
    info = {"mem_fraction_static": 0.88, "tp_size": 4, "api_key": "sk-live-SECRET"}
    server = fake_sglang(
        "--model-path",
        "m",
        "--tp",
        "8",
        "--port",
        str(port),
        env={"STANDIN_SERVER_INFO": json.dumps(info), "STANDIN_HTTP": "1"},
    )
    profile = sglang_profile(
        write_profile,
        f"[server.flags]\ntp-size = 8\nmem-fraction-static = 0.88\nport = {port}\n"
        'api-key = "sk-live-OTHER"\n',
    )
    code, out, err = run_cli(
        runner, "check", "-p", str(profile), "--pid", str(server.pid), "--json"
    )
    assert code == 1
    assert flag_findings(out) == [
        ("mismatch", "--tp-size", "8", "4", "/server_info"),
        ("missing", "--api-key", "<redacted>", "not given (default <redacted>)", "default"),
    ]
    assert "sk-live-SECRET" not in out + err
    assert "sk-live-OTHER" not in out + err
    assert json.loads(out)["launches"][0]["server_info"] == "reachable"


def test_forbidden_flag_from_the_config_file(
    runner: CliRunner,
    fake_sglang: Callable[..., StandIn],
    write_profile: Callable[..., Path],
    tmp_path: Path,
) -> None:
    (tmp_path / "serve.yaml").write_text("disable-radix-cache: true\ntp-size: 8\n")
    server = fake_sglang("--model-path", "m", "--config", str(tmp_path / "serve.yaml"))
    profile = sglang_profile(
        write_profile, 'forbidden_flags = ["--disable-radix-cache"]\n[server.flags]\ntp-size = 8\n'
    )
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid), "--json")
    assert code == 1
    assert flag_findings(out) == [
        (
            "forbidden",
            "--disable-radix-cache",
            "not given",
            "true (as --disable-radix-cache)",
            f"--config {tmp_path / 'serve.yaml'}",
        ),
    ]


def test_rejected_command_line_and_ignored_config(
    runner: CliRunner, fake_sglang: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    profile = sglang_profile(write_profile, "[server.flags]\ntp-size = 1\n")
    ambiguous = fake_sglang("--model-path", "m", "--pp", "2")
    code, out, _ = run_cli(
        runner, "check", "-p", str(profile), "--pid", str(ambiguous.pid), "--json"
    )
    assert code == 1
    assert flag_findings(out) == [
        (
            "rejected",
            "command line",
            None,
            "ambiguous option: --pp could match --pp-size, "
            "--pp-max-micro-batch-size, --pp-async-batch-depth",
            "sglang 0.5.23 parser",
        ),
    ]
    ignored = fake_sglang("--model-path", "m", "--config=serve.yaml")
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(ignored.pid), "--json")
    assert code == 1
    [(kind, subject, _, _, _)] = flag_findings(out)
    assert (kind, subject) == ("misread", "--config")
    assert (
        "silently ignores this form and never reads serve.yaml"
        in json.loads(out)["findings"][0]["hint"]
    )


def test_version_without_a_catalog_uses_the_nearest(
    runner: CliRunner,
    fake_sglang: Callable[..., StandIn],
    write_profile: Callable[..., Path],
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    shutil.copytree(FAKE_SITE, site)
    (site / "sglang-0.5.23.dist-info").rename(site / "sglang-0.5.12.dist-info")
    metadata = site / "sglang-0.5.12.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("0.5.23", "0.5.12"))
    server = fake_sglang("--model-path", "m", "--tp", "2", site=site)
    profile = sglang_profile(write_profile, "[server.flags]\ntp-size = 2\n")
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid))
    assert code == 0, out
    assert (
        "note: no flag catalog for sglang 0.5.12: using the nearest, 0.5.10 (have 0.5.2, 0.5.10, "
        "0.5.23; tools/extract_catalog.py makes one)"
    ) in out.splitlines()


def test_not_a_server_launch_is_unverifiable(
    runner: CliRunner, standin: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    server = standin({}, "--schedulers", "1")
    profile = sglang_profile(write_profile, "[server.flags]\ntp-size = 2\n")
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid), "--json")
    assert code == 3
    assert flag_findings(out) == [
        (
            "unverifiable",
            "command line",
            "a sglang launch",
            "not recognised",
            f"/proc/{server.pid}/cmdline",
        ),
    ]


CRON_LINE_PROBE = """
import sys
from envguard.commands.check_argv import main
code = main(["-p", {profile!r}, "--port", "{port}", "-q"])
heavy = ("click", "pydantic", "dataclasses", "inspect", "argparse", "yaml", "tomllib")
print(code, [m for m in heavy if m in sys.modules])
"""


def test_the_cron_line_answers_from_its_caches(
    fake_sglang: Callable[..., StandIn], write_profile: Callable[..., Path], tmp_path: Path
) -> None:
    """The README's cron line, run twice: the second run reads the profile and the launch
    line from the caches, and imports none of the heavy machinery (docs/speed.md)."""
    import subprocess
    import sys

    port = free_port()
    fake_sglang(
        *SEED_ARGS, "--tp-size", "8", "--mem-fraction-static", "0.88", "--port", str(port),
        env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "STANDIN_HTTP": "1"},
    )  # fmt: skip
    probe = CRON_LINE_PROBE.format(profile=str(seed_on(port, write_profile)), port=port)
    env = {"PATH": "/usr/bin:/bin", "ENVGUARD_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    first = "0 ['pydantic', 'dataclasses', 'inspect', 'argparse', 'tomllib']"  # both caches empty
    assert runs[0].stdout.splitlines()[-1] == first, runs[0].stdout + runs[0].stderr
    assert runs[1].stdout.splitlines()[-1] == "0 []", runs[1].stdout + runs[1].stderr
