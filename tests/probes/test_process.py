"""Reading real processes through /proc: environ shapes, roles, trees, vanishing, permission."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from envguard.errors import AccessDenied, TargetError
from envguard.probes import process
from envguard.probes.process import ProcessGone, parse_environ, process_tree, snapshot
from tests.conftest import StandIn

SLEEPER = "import sys"
TITLED = "import setproctitle; setproctitle.setproctitle('sglang::scheduler_TP3')"


def test_a_crafted_environment_reads_back_exactly(
    spawn: Callable[..., subprocess.Popen[str]],
) -> None:
    env = {"NCCL_PROTO": "LL", "MULTI": "line one\nline two", "EMPTY": "", "EQ": "a=b=c"}
    proc = spawn(SLEEPER, env)
    snap = snapshot(proc.pid)
    assert (snap.environ, snap.environ_state) == (env, "ok")
    assert snap.uid == os.getuid()
    assert snap.ppid == os.getpid()
    assert snap.cmdline == tuple(proc.args)  # type: ignore[arg-type]


def test_setproctitle_clobbers_the_environment(spawn: Callable[..., subprocess.Popen[str]]) -> None:
    proc = spawn(TITLED, {"NCCL_PROTO": "LL", "PATH": os.environ["PATH"]})
    snap = snapshot(proc.pid)
    assert (snap.environ, snap.environ_state) == (None, "clobbered")
    assert snap.role == "scheduler_TP3"


def test_spt_noenv_keeps_the_environment_readable(
    spawn: Callable[..., subprocess.Popen[str]],
) -> None:
    env = {"NCCL_PROTO": "LL", "SPT_NOENV": "1"}
    proc = spawn(TITLED, env)
    snap = snapshot(proc.pid)
    assert (snap.environ, snap.environ_state) == (env, "ok")
    assert snap.role.startswith("scheduler")  # the title is cut to the original argv's length


def test_an_empty_environment_is_not_an_ok_one(spawn: Callable[..., subprocess.Popen[str]]) -> None:
    proc = spawn(SLEEPER, {})
    assert snapshot(proc.pid).environ_state == "empty"


@pytest.mark.parametrize(
    ("data", "state"),
    [
        (b"A=1\0B=2\0", "ok"),
        (b"A=1\0B=2", "ok"),  # no trailing NUL
        (b"", "empty"),
        (b"P0\0\0\0\0\0\0", "clobbered"),  # what setproctitle left on this machine
        (b"\0\0\0\0", "clobbered"),
        (b"A=1\0\0\0\0", "clobbered"),
    ],
)
def test_environ_shapes(data: bytes, state: str) -> None:
    assert parse_environ(data)[1] == state


def test_first_occurrence_of_a_duplicate_name_wins() -> None:
    assert parse_environ(b"A=1\0A=2\0") == ({"A": "1"}, "ok")


def test_stand_in_tree_has_sglang_roles(standin: Callable[..., StandIn]) -> None:
    server = standin({}, "--schedulers", "3")
    snapshots, vanished, _ = process_tree(server.pid)
    roles = [s.role for s in snapshots]
    assert vanished == []
    assert roles[0] == "launcher"
    assert sorted(roles[1:]) == sorted(
        ["resource_tracker", "scheduler_TP0", "scheduler_TP1", "scheduler_TP2", "detokenizer"]
    )
    # The launcher changed its own os.environ before spawning: only the workers show it.
    by_role = {s.role: s for s in snapshots}
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in (by_role["launcher"].environ or {})
    assert (by_role["scheduler_TP0"].environ or {})["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"


def test_no_such_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(TargetError, match=f"no process with pid {proc.pid}"):
        process_tree(proc.pid)
    with pytest.raises(ProcessGone, match=f"process {proc.pid} exited while it was being read"):
        snapshot(proc.pid)


def test_a_zombie_is_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _state(proc.pid) != "Z":
        time.sleep(0.02)
    with pytest.raises(ProcessGone, match="has exited"):
        snapshot(proc.pid)
    proc.wait()


def test_a_worker_that_exits_mid_read_is_reported_not_dropped(
    standin: Callable[..., StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = standin({}, "--schedulers", "2")
    victim = process.descendants(server.pid)[-1]
    real_snapshot = process.snapshot

    def kill_then_read(pid: int, *, is_target: bool = False) -> process.ProcessSnapshot:
        if pid == victim:  # the worker dies right between listing and reading
            os.kill(victim, signal.SIGKILL)
            while _state(victim) not in ("Z", "gone"):
                time.sleep(0.01)
        return real_snapshot(pid, is_target=is_target)

    monkeypatch.setattr(process, "snapshot", kill_then_read)
    snapshots, vanished, zombies = process_tree(server.pid)
    # Gone, or a zombie its parent has not reaped yet: reported either way, never read.
    assert vanished + zombies == [victim]
    assert victim not in [s.pid for s in snapshots]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another uid")
def test_another_users_process_is_access_denied(
    spawn: Callable[..., subprocess.Popen[str]],
) -> None:
    proc = spawn(SLEEPER, {"NCCL_PROTO": "LL"})
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        os.close(read_end)
        os.setgid(65534)
        os.setuid(65534)
        try:
            process_tree(proc.pid)
            message = "read it"
        except AccessDenied as exc:
            message = f"{exc.message}|{exc.hint}"
        os.write(write_end, message.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as handle:
        message = handle.read()
    os.waitpid(child, 0)
    assert message == (
        f"process {proc.pid} belongs to uid 0; /proc/{proc.pid}/environ is not readable"
        "|run as root or as uid 0"
    )


def test_one_entry_without_equals_is_skipped_not_a_clobbered_environ() -> None:
    environ, state = parse_environ(b"NCCL_PROTO=LL\0ODD-ENTRY\0NCCL_ALGO=Tree\0")
    assert state == "ok" and environ == {"NCCL_PROTO": "LL", "NCCL_ALGO": "Tree"}
    # What setproctitle leaves: the title's tail and NUL padding.
    assert parse_environ(b"heduler_TP0\0\0\0\0\0\0")[1] == "clobbered"
    assert parse_environ(b"tail-of-a-title\0more\0")[1] == "clobbered"


def test_a_zombie_worker_is_noted_not_a_failure(
    spawn: Callable[..., subprocess.Popen[str]],
) -> None:
    # A parent that never reaps its exited child: the child stays a zombie.
    parent = spawn(
        "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'pass'])",
        {"NCCL_PROTO": "LL"},
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        snapshots, vanished, zombies = process_tree(parent.pid)
        if zombies:
            break
    assert len(zombies) == 1 and vanished == [] and [s.pid for s in snapshots] == [parent.pid]
