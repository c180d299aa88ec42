"""NCCL's log held against the profile and against envguard's own reading, with real lines
recorded on a 2xH200 host; where a live tree is needed, the recorded lines get the pids of
real stand-in ranks (NCCL prints each process's own pid)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from envguard.checking import check
from envguard.evaluation.nccl_log import evaluate_nccl_log
from envguard.probes.nccl_log import read_nccl_log
from envguard.probes.process import descendants
from envguard.probes.target import Target
from envguard.profile.loader import load_profile
from tests.conftest import PROFILES, TUNED, StandIn, envguard_process
from tests.probes.test_nccl_log import CONF_16M_LOG, TUNED_LOG

DEMO = PROFILES / "demo.toml"


def profile() -> object:
    return load_profile(DEMO).profile


def h200(tmp_path: Path) -> Path:
    """The demo profile on the recorded host, which sets NCCL_NVLS_ENABLE=0 for everyone."""
    path = tmp_path / "h200.toml"
    path.write_text(
        f'schema_version = 1\nname = "h200"\nversion = 1\nextends = ["{DEMO}"]\n'
        '[env.optional]\nNCCL_NVLS_ENABLE = "0"\n'
    )
    return path


def relabelled(log: Path, pids: list[int], out: Path) -> Path:
    """The recorded log with its two ranks' pids replaced by live ones."""
    text = log.read_text()
    originals = sorted(
        {int(line.split(":")[1]) for line in text.splitlines() if " NCCL INFO " in line}
    )
    for old, new in zip(originals, pids, strict=True):
        text = text.replace(f"vm:{old}:", f"vm:{new}:")
    out.write_text(text)
    return out


def ranks(server: StandIn) -> list[int]:
    return [
        pid
        for pid in descendants(server.pid)
        if b"scheduler_TP" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def test_the_tuned_run_agrees_with_the_profile() -> None:
    assert evaluate_nccl_log(profile(), read_nccl_log(TUNED_LOG)) == []  # type: ignore[arg-type]


def test_16m_and_a_config_file_are_what_nccl_used() -> None:
    findings = evaluate_nccl_log(profile(), read_nccl_log(CONF_16M_LOG))  # type: ignore[arg-type]
    rank0 = [
        (f.kind, f.subject, f.expected, f.actual)
        for f in findings
        if f.role == "pid 734 (rank 0/2)"
    ]
    assert rank0 == [
        ("nccl-log", "NCCL_PROTO", "LL", "never reported by NCCL in pid 734 (rank 0/2)"),
        ("nccl-log", "NCCL_ALGO", "Ring", "never reported by NCCL in pid 734 (rank 0/2)"),
        ("nccl-log", "NCCL_MAX_NCHANNELS", "16", "8 (NCCL used it in pid 734 (rank 0/2))"),
        ("nccl-log", "NCCL_BUFFSIZE", "16777216", "16 (NCCL used it in pid 734 (rank 0/2))"),
        ("nccl-log", "NCCL_NTHREADS", "512", "never reported by NCCL in pid 734 (rank 0/2)"),
    ]
    assert len(findings) == 10 and all(f.pid is None for f in findings)


def test_a_live_tree_whose_log_agrees(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    server = standin({**TUNED, "NCCL_NVLS_ENABLE": "0"}, "--schedulers", "2")
    log = relabelled(TUNED_LOG, ranks(server), tmp_path / "server.log")
    report = check(h200(tmp_path), Target(pid=server.pid), nccl_log=log)
    assert report.findings == ()
    assert report.verdict == "ok"


def test_nccl_used_other_values_than_envguard_read(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    """The tree's environment holds the six; NCCL's log says 8 channels and 16 bytes: the
    profile is not met, and envguard's own reading is contradicted (a plugin, or a bug)."""
    server = standin({**TUNED, "NCCL_NVLS_ENABLE": "0"}, "--schedulers", "2")
    scheduler = ranks(server)
    log = relabelled(CONF_16M_LOG, scheduler, tmp_path / "server.log")
    report = check(h200(tmp_path), Target(pid=server.pid), nccl_log=log)
    mine = [(f.kind, f.subject, f.actual) for f in report.findings if f.pid == scheduler[0]]
    assert (
        "nccl-log",
        "NCCL_BUFFSIZE",
        f"16 (NCCL used it in pid {scheduler[0]} (rank 0/2))",
    ) in mine
    assert ("unverifiable", "NCCL_BUFFSIZE", "envguard read '16777216' (environ)") in mine
    assert ("unverifiable", "NCCL_MAX_NCHANNELS", "envguard read '16' (environ)") in mine
    assert report.verdict == "drift"


def test_a_log_of_other_processes_proves_nothing(
    standin: Callable[..., StandIn], tmp_path: Path
) -> None:
    server = standin(TUNED, "--schedulers", "2")
    report = check(DEMO, Target(pid=server.pid), nccl_log=CONF_16M_LOG)
    [finding] = report.findings
    assert (finding.kind, finding.subject) == ("unverifiable", "NCCL log")
    assert finding.actual == "lines of other processes only (pids 734, 735)"
    assert report.verdict == "unverifiable"


def test_a_log_without_env_lines(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    server = standin(TUNED, "--schedulers", "1")
    quiet = tmp_path / "quiet.log"
    quiet.write_text("vm:1:1 [0] NCCL INFO Using network Socket\n")
    [finding] = check(DEMO, Target(pid=server.pid), nccl_log=quiet).findings
    assert (finding.subject, finding.actual) == ("NCCL log", "no 'set by environment' lines")
    assert "NCCL_DEBUG=INFO" in finding.hint


def test_the_command_line(standin: Callable[..., StandIn], tmp_path: Path) -> None:
    server = standin({**TUNED, "NCCL_NVLS_ENABLE": "0"}, "--schedulers", "2")
    log = relabelled(CONF_16M_LOG, ranks(server), tmp_path / "server.log")
    text = envguard_process(
        tmp_path, "check", "-p", str(DEMO), "--pid", str(server.pid), "--nccl-log", str(log)
    )
    assert text.returncode == 1
    assert (
        f"nccl log: {log}: 2 processes, 8 settings reported (NCCL 2.28.9+cuda13.0)\n" in text.stdout
    )
    assert (
        "  nccl-log     NCCL_BUFFSIZE: expected 16777216, found '16 (NCCL used it in pid"
        in text.stdout
    )
    as_json = envguard_process(
        tmp_path,
        "check",
        "-p",
        str(DEMO),
        "--pid",
        str(server.pid),
        "--nccl-log",
        str(log),
        "--json",
    )
    document = json.loads(as_json.stdout)
    assert [p["settings"]["NCCL_BUFFSIZE"] for p in document["nccl_log"]["processes"]] == [
        "16",
        "16",
    ]
    missing = envguard_process(
        tmp_path, "check", "-p", str(DEMO), "--pid", str(server.pid), "--nccl-log", "nope.log"
    )
    assert missing.returncode == 3
    assert missing.stderr.startswith(
        "envguard: nope.log: cannot read the NCCL log (No such file or directory)\n"
    )
