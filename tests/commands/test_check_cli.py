"""`envguard check` end to end: real stand-in servers, exact output, exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from envguard.testing.tuned import TUNED_LAUNCH
from tests.conftest import FAKE_SITE, PROFILES, TUNED, StandIn, run_cli

DEMO = str(PROFILES / "demo.toml")
SEED = str(PROFILES / "kimi-k2.5-int4-tp8.toml")


def tree(pid: int) -> list[tuple[str, int]]:
    """(role, pid) in the order envguard lists them, from psutil as an independent oracle."""
    children = sorted(psutil.Process(pid).children(), key=lambda p: p.pid)
    roles = []
    for child in children:
        title = " ".join(child.cmdline())
        if "resource_tracker" in title:
            roles.append(("resource_tracker", child.pid))
        else:
            roles.append((title.split("::", 1)[1].strip(), child.pid))
    return [("launcher", pid), *roles]


def labels(entries: list[tuple[str, int]]) -> str:
    return ", ".join(f"{role} ({pid})" for role, pid in entries)


def test_compliant_server_passes(runner: CliRunner, standin: Callable[..., StandIn]) -> None:
    server = standin(TUNED)
    code, out, err = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid))
    assert (code, err) == (0, "")
    assert out == (
        f"envguard check: profile demo@1 ({DEMO}), pid {server.pid}, 5 processes\n"
        "\n"
        f"ok: {labels(tree(server.pid))}\n"
        "\n"
        "verdict: ok - 5 processes match demo@1 (exit 0)\n"
    )


def test_the_seed_story_lost_tuning_is_drift(
    runner: CliRunner, standin: Callable[..., StandIn]
) -> None:
    # The tuned launch line, restarted without the NCCL variables.
    server = standin(
        {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "PYTHONPATH": str(FAKE_SITE)},
        *TUNED_LAUNCH,
        module="sglang.launch_server",
    )
    code, out, _ = run_cli(runner, "check", "-p", SEED, "--pid", str(server.pid))
    assert code == 1
    block = [
        f"  missing      {name}: expected {value}, not set [environ]\n"
        f"               hint: set {name}={value} in the server's environment (envguard launch "
        "injects the profile's values)\n"
        for name, value in TUNED.items()
    ]
    assert out == (
        f"envguard check: profile kimi-k2.5-int4-tp8@4 ({SEED}), pid {server.pid}, 5 processes\n"
        f"launch: python -m sglang.launch_server (pid {server.pid}), installed sglang 0.5.23 "
        f"({FAKE_SITE}/sglang-0.5.23.dist-info/METADATA), flags read with sglang 0.5.23; "
        "/server_info unreachable\n"
        "\n"
        f"{labels(tree(server.pid))}:\n" + "".join(block) + "\n"
        "verdict: drift - 30 findings in 5 processes differ from kimi-k2.5-int4-tp8@4 (exit 1)\n"
    )


def findings(out: str) -> set[tuple[str, str, str | None, str | None, str | None]]:
    report = json.loads(out)
    return {
        (f["kind"], f["subject"], f["expected"], f["actual"], f["source"])
        for f in report["findings"]
        if f["role"] == "launcher"
    }


def test_values_nccl_misreads_and_names_it_ignores(
    runner: CliRunner, standin: Callable[..., StandIn]
) -> None:
    env = {
        **TUNED,
        "NCCL_BUFFSIZE": "16M",
        "NCCL_P2P_LEVEL": "sys",
        "NCCL_PRTO": "LL",
        "NCCL_DEBUG": "INFO",
        "NCCL_IB_HCA": "mlx5",
        "CUDA_LAUNCH_BLOCKING": "1",
        "NCCL_NTHREADS": "512x",
        "NCCL_VERSION": "2.28.3-1",
    }
    del env["NCCL_PROTO"]
    server = standin(env)
    code, out, _ = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid), "--json")
    assert code == 1
    assert findings(out) == {
        ("missing", "NCCL_PROTO", "LL", None, "environ"),
        ("mismatch", "NCCL_BUFFSIZE", "16777216", "16M", "environ"),
        ("mismatch", "NCCL_P2P_LEVEL", "SYS", "sys", "environ"),
        ("misspelled", "NCCL_PRTO", None, "LL", "environ"),
        ("mismatch", "NCCL_DEBUG", "one of VERSION, WARN or unset", "INFO", "environ"),
        ("unexpected", "NCCL_IB_HCA", "unset", "mlx5", "environ"),
        ("forbidden", "CUDA_LAUNCH_BLOCKING", "unset", "1", "environ"),
        ("misread", "NCCL_NTHREADS", None, "512x", "environ"),
    }
    hints = {f["subject"]: f["hint"] for f in json.loads(out)["findings"]}
    assert hints["NCCL_BUFFSIZE"].startswith("NCCL reads '16M' as 16 (trailing 'M' is dropped); ")
    assert hints["NCCL_PRTO"] == "NCCL ignores NCCL_PRTO without a word; did you mean NCCL_PROTO?"
    assert hints["NCCL_NTHREADS"] == "NCCL reads '512x' as 512 (trailing 'x' is dropped)"


def test_equivalent_spellings_are_not_drift(
    runner: CliRunner, standin: Callable[..., StandIn]
) -> None:
    env = {**TUNED, "NCCL_BUFFSIZE": "0x1000000", "NCCL_PROTO": "ll", "NCCL_P2P_LEVEL": "4"}
    server = standin(env)
    code, _, _ = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid), "-q")
    assert code == 0


def test_ranks_that_disagree(runner: CliRunner, standin: Callable[..., StandIn]) -> None:
    server = standin(TUNED, "--rank-env", "1:NCCL_ALGO=Tree", "--schedulers", "3")
    code, out, _ = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid), "--json")
    assert code == 1
    report = json.loads(out)
    assert [(f["kind"], f["role"], f["actual"]) for f in report["findings"]] == [
        ("mismatch", "scheduler_TP1", "Tree"),
        ("inconsistent", None, "scheduler_TP0=Ring, scheduler_TP1=Tree, scheduler_TP2=Ring"),
    ]


def test_setproctitle_without_spt_noenv_is_unverifiable(
    runner: CliRunner, standin: Callable[..., StandIn]
) -> None:
    server = standin(TUNED, "--schedulers", "1", "--no-detokenizer", spt_noenv=False)
    worker = tree(server.pid)[-1][1]
    code, out, _ = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid))
    assert code == 3
    assert (
        f"scheduler_TP0 ({worker}):\n"
        f"  unverifiable environment: overwritten by setproctitle [/proc/{worker}/environ]\n"
        "               hint: start the server with SPT_NOENV=1 in its environment so "
        "setproctitle leaves the environment readable (envguard launch sets it), then check "
        "again\n"
    ) in out
    assert out.endswith(
        "verdict: unverifiable - part of the setup could not be verified; nothing found "
        "differs (exit 3)\n"
    )


def test_forbidden_value_from_etc_nccl_conf(
    runner: CliRunner, standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "nccl.conf").write_text("NCCL_GRAPH_FILE=/opt/vendor/graph.xml\n")
    server = standin(TUNED, "--schedulers", "1", "--no-detokenizer")
    code, out, _ = run_cli(
        runner,
        "check",
        "-p",
        DEMO,
        "--pid",
        str(server.pid),
        "--json",
        "--config-root",
        str(tmp_path),
    )
    assert code == 1
    assert findings(out) == {
        ("forbidden", "NCCL_GRAPH_FILE", "unset", "/opt/vendor/graph.xml", "/etc/nccl.conf")
    }
    launcher = json.loads(out)["processes"][0]
    assert launcher["nccl_settings"]["NCCL_GRAPH_FILE"] == {
        "value": "/opt/vendor/graph.xml",
        "source": "/etc/nccl.conf",
    }


def test_required_value_supplied_by_a_config_file_passes(
    runner: CliRunner, standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    conf = tmp_path / "tuned.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in TUNED.items()))
    server = standin({"NCCL_CONF_FILE": str(conf), "NCCL_PROTO": "LL"}, "--schedulers", "1")
    profile = tmp_path / "p.toml"
    profile.write_text(
        PROFILES.joinpath("demo.toml")
        .read_text()
        .replace('extends = ["base/', f'extends = ["{PROFILES}/base/')
        + '\n[env.optional]\nNCCL_CONF_FILE = { pattern = ".*" }\n'
    )
    code, out, _ = run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid), "-q")
    assert (code, out) == (0, "verdict: ok - 4 processes match demo@1 (exit 0)\n")


SECRETS = {
    "HF_TOKEN": "hf_abcdefghijklmnop",
    "OPENAI_API_KEY": "sk-proj-0123456789",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEJr",
    "GITHUB_TOKEN": "ghp_1234567890abcdef",
    "WANDB_API_KEY": "0123456789abcdef0123",
    "DB_PASSWORD": "hunter2-but-longer",
    "REDIS_PASSWD": "redis-pass-9",
    "SSH_PRIVATE_KEY": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "QyNTUxOQAAACD7\n-----END OPENSSH PRIVATE KEY-----\n",
    "GCP_CREDENTIALS": '{"type": "service_account", "private_key_id": "abc123"}',
    "SLACK_AUTH": "xoxb-111-222-333",
    "NGC_API_KEY": "nvapi-abcdef123456",
    "VLLM_API_KEY": "vllm-secret-777",
    "SGLANG_API_KEY": "sglang-secret-888",
    "NCCL_SECRET_SAUCE": "nccl-secret-999",
    "TORCH_AUTH_TOKEN": "torch-secret-000",
    "MY_SECRET": "my-secret-value-1",
    "MY_COOKIE": "session=abcdef",
    "MY_PASSPHRASE": "correct horse battery staple",
    "ANTHROPIC_API_KEY": "sk-ant-api03-secret",
    "HUGGING_FACE_HUB_TOKEN": "hf_zyxwvutsrqponm",
    "MY_API_TOKEN": "token-that-is-wrong",
}


def test_secrets_never_leave_the_process(
    runner: CliRunner, standin: Callable[..., StandIn], write_profile: Callable[..., Path]
) -> None:
    profile = write_profile(
        """\
        schema_version = 1
        name = "secrets"
        version = 1
        [env]
        strict_prefixes = ["NCCL_", "AWS_", "HF_", "MY_", "SGLANG_", "VLLM_", "TORCH_"]
        forbidden = ["GITHUB_TOKEN", "SSH_PRIVATE_KEY", "WANDB_API_KEY"]
        [env.required]
        MY_API_TOKEN = "the-right-token"
        OPENAI_API_KEY = { pattern = "sk-live-.*" }
        """
    )
    server = standin({**SECRETS, "HOSTNAME_HINT": "box-17"}, "--schedulers", "1")
    outputs = [
        run_cli(runner, "check", "-p", str(profile), "--pid", str(server.pid), *flags)
        for flags in ((), ("--json",))
    ]
    for code, out, err in outputs:
        assert code == 1
        everything = out + err
        for name, value in SECRETS.items():
            for fragment in value.splitlines():
                assert fragment not in everything, f"{name} leaked"
        assert "the-right-token" not in everything
        assert "sk-live-" not in everything
        assert "<redacted>" in everything
    kinds = {(f["kind"], f["subject"]) for f in json.loads(outputs[1][1])["findings"]}
    assert ("forbidden", "SSH_PRIVATE_KEY") in kinds
    assert ("mismatch", "MY_API_TOKEN") in kinds
    assert ("unexpected", "AWS_SECRET_ACCESS_KEY") in kinds


def test_json_document(runner: CliRunner, standin: Callable[..., StandIn]) -> None:
    server = standin(TUNED, "--schedulers", "1", "--no-detokenizer")
    code, out, _ = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid), "--json")
    report = json.loads(out)
    assert code == 0
    assert set(report) == {
        "envguard",
        "verdict",
        "exit_code",
        "profile",
        "target",
        "servers",
        "zombies",
        "processes",
        "findings",
        "launches",
        "gpus",
        "nccl_log",
    }
    assert report["gpus"] == {"skipped": False, "servers": []}  # no [gpu]: NVML not loaded
    assert report["verdict"] == "ok"
    assert report["profile"]["name"] == "demo" and report["profile"]["version"] == 1
    assert [(p["pid"], p["role"], p["environ"]) for p in report["processes"]] == [
        (pid, role, "ok") for role, pid in tree(server.pid)
    ]
    assert report["processes"][0]["nccl_settings"] == {
        name: {"value": value, "source": "environ"} for name, value in sorted(TUNED.items())
    }


def test_colour_only_on_a_terminal_and_never_with_no_color(
    runner: CliRunner, standin: Callable[..., StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    from envguard.cli import cli

    server = standin({}, "--schedulers", "1")
    args = ["check", "-p", DEMO, "--pid", str(server.pid)]
    assert "\x1b[" not in runner.invoke(cli, args).stdout  # not a terminal
    assert "\x1b[" in runner.invoke(cli, args, color=True).stdout  # a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in runner.invoke(cli, args, color=True).stdout


def test_exactly_one_target(runner: CliRunner) -> None:
    code, _, err = run_cli(runner, "check", "-p", DEMO, "--pid", "1", "--port", "80")
    assert code == 2
    assert err.endswith("Error: give exactly one of --pid, --port or --match (got --pid, --port)\n")


def test_server_dies_while_being_read(
    runner: CliRunner, standin: Callable[..., StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    from envguard.probes import process

    server = standin(TUNED, "--schedulers", "1")
    real = process.descendants

    def descendants_then_kill(pid: int, children: object = None) -> list[int]:
        found = real(pid, children)  # type: ignore[arg-type]
        server.process.kill()
        server.process.wait()
        return found

    monkeypatch.setattr(process, "descendants", descendants_then_kill)
    code, out, err = run_cli(runner, "check", "-p", DEMO, "--pid", str(server.pid))
    assert (code, out) == (3, "")
    assert err == (
        f"envguard: process {server.pid} exited while it was being read\n"
        "hint: check that the server is running, then run the check again\n"
    )
