"""`envguard stop` signals only the process it started: real strangers, real groups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from envguard.launching import pidfile
from envguard.launching.stop import PF_KTHREAD
from envguard.probes.process import running, stat_fields
from tests.conftest import envguard_process

STRANGER = ["setsid", "bash", "-c", "sleep 600 & sleep 600"]


@pytest.fixture
def stranger() -> Iterator[int]:
    """An unrelated process group (a shell and its child), like the one that got killed."""
    process = subprocess.Popen(STRANGER)
    while pidfile.record_of(process.pid).exe in (None, "/usr/bin/setsid"):
        pass  # until setsid has exec'd bash: then it leads its own session and group
    yield process.pid
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def write_record(path: Path, record: pidfile.PidRecord) -> None:
    lines = [str(record.pid)] + [
        f"{k}={v}" for k, v in record._asdict().items() if k != "pid" and v is not None
    ]
    path.write_text("\n".join(lines) + "\n")


def stop(
    tmp_path: Path, pid_file: str = "s.pid", **kwargs: object
) -> subprocess.CompletedProcess[str]:
    return envguard_process(tmp_path, "stop", "--pid-file", pid_file, "--grace", "2", **kwargs)  # type: ignore[arg-type]


def test_a_reused_pid_is_refused_and_its_group_left_alone(tmp_path: Path, stranger: int) -> None:
    real = pidfile.record_of(stranger)
    # The crashed server's record: same pid, an earlier start.
    write_record(tmp_path / "s.pid", real._replace(start_ticks=(real.start_ticks or 1) - 1))
    result = stop(tmp_path)
    assert result.returncode == 1
    assert f"s.pid is stale: pid {stranger} is now another process (bash -c sleep 600" in (
        result.stderr
    )
    assert "left it alone" in result.stderr
    assert group_alive(stranger) and running(stranger)


def test_a_pid_file_without_a_start_time_is_not_trusted(tmp_path: Path, stranger: int) -> None:
    (tmp_path / "s.pid").write_text(f"{stranger}\n")
    result = stop(tmp_path)
    assert result.returncode == 1
    assert "records no start time (written by envguard 0.1)" in result.stderr
    assert running(stranger)


@pytest.mark.parametrize("forged", [False, True])
def test_pid_one_is_never_signalled(tmp_path: Path, forged: bool) -> None:
    record = pidfile.record_of(1) if forged else pidfile.PidRecord(1)
    write_record(tmp_path / "s.pid", record)
    result = stop(tmp_path)
    assert result.returncode == 1
    if forged:  # even with its real start time
        assert "pid 1 (init) or lower is never signalled" in result.stderr


def test_a_kernel_thread_is_never_signalled(tmp_path: Path) -> None:
    kthreads = [
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and int(e.name) > 1 and _flags(int(e.name)) & PF_KTHREAD
    ]
    if not kthreads:
        pytest.skip("no kernel thread is visible in this PID namespace")
    write_record(tmp_path / "s.pid", pidfile.record_of(kthreads[0]))
    result = stop(tmp_path)
    assert result.returncode == 1
    assert "a kernel thread, never a server" in result.stderr


def _flags(pid: int) -> int:
    try:
        return int(stat_fields(pid)[6])
    except (OSError, ValueError, IndexError):
        return 0


def test_a_group_holding_envguard_itself_is_never_signalled(tmp_path: Path) -> None:
    leader = subprocess.Popen(["sleep", "600"], process_group=0)  # same session, own group
    try:
        write_record(tmp_path / "s.pid", pidfile.record_of(leader.pid))
        result = subprocess.run(
            [sys.executable, "-m", "envguard", "stop", "--pid-file", "s.pid"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            preexec_fn=lambda: os.setpgid(0, leader.pid),  # envguard joins the server's group
            timeout=60,
        )
        assert result.returncode == 1, result.stderr
        assert "its process group is envguard's own" in result.stderr
        assert running(leader.pid)
    finally:
        leader.kill()
        leader.wait()


def test_a_process_that_leads_no_group_is_not_a_launched_server(tmp_path: Path) -> None:
    child = subprocess.Popen(["sleep", "600"])  # in the test's own group
    try:
        write_record(tmp_path / "s.pid", pidfile.record_of(child.pid))
        result = stop(tmp_path)
        assert result.returncode == 1
        assert "does not lead its own process group" in result.stderr
        assert running(child.pid)
    finally:
        child.kill()
        child.wait()


def test_stopping_a_stopped_server_is_success_and_leaves_no_lock(tmp_path: Path) -> None:
    server = subprocess.Popen(["sleep", "600"], start_new_session=True)
    pidfile.write(tmp_path / "s.pid", server.pid)
    first = stop(tmp_path)
    server.wait()
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"pid {server.pid}: stopped (SIGTERM)\n"
    second = stop(tmp_path)
    assert second.returncode == 0
    assert second.stdout == "not running: no pid file at s.pid (nothing to stop)\n"
    # A pid file whose process has exited: stale, removed, success.
    write_record(tmp_path / "s.pid", pidfile.PidRecord(server.pid, 5))
    third = stop(tmp_path)
    assert third.returncode == 0
    assert "has exited" in third.stdout and not (tmp_path / "s.pid").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == []


def test_a_fifo_as_pid_file_is_refused_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.pid")
    result = stop(tmp_path, timeout=20)
    assert result.returncode == 3
    assert "not a regular file" in result.stderr


def test_launch_replaces_a_stale_pid_file_and_says_what_it_found(
    tmp_path: Path, stranger: int
) -> None:
    real = pidfile.record_of(stranger)
    write_record(tmp_path / "envguard-demo.pid", real._replace(start_ticks=1))
    profile = tmp_path / "p.toml"
    profile.write_text('schema_version = 1\nname = "demo"\nversion = 1\n')
    result = envguard_process(
        tmp_path, "launch", "-p", str(profile), "--detach", "--", "sleep", "600"
    )
    try:
        assert result.returncode == 0, result.stderr
        assert (
            f"envguard-demo.pid was stale: pid {stranger} is now another process (bash -c"
            in result.stderr
        )
        assert running(stranger)
    finally:
        stop(tmp_path, "envguard-demo.pid")
    assert not list(tmp_path.glob("*.lock"))
