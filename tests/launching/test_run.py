"""launch validates everything before it starts anything; the server's arguments are its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROFILES, envguard_process, envguard_started

DEMO = str(PROFILES / "demo.toml")
MARKED = [
    sys.executable,
    "-c",
    "import sys, pathlib; pathlib.Path('ran').write_text(repr(sys.argv[1:]))",
]


def test_arguments_after_the_command_belong_to_it_with_or_without_dashes(tmp_path: Path) -> None:
    for dashes in ([], ["--"]):
        result = envguard_process(
            tmp_path, "launch", "-p", DEMO, *dashes, *MARKED, "--force", "--detach"
        )
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "ran").read_text() == "['--force', '--detach']"
        assert "started pid" in result.stderr and "in the foreground" in result.stderr


@pytest.mark.parametrize(
    ("url", "code", "message"),
    [
        ("http://127.0.0.1:99999/health", 2, "not a usable health URL (Port out of range 0-65535)"),
        ("https://127.0.0.1:8000/health", 2, "https health URLs are not polled"),
        ("ftp://127.0.0.1/health", 2, "not a usable health URL"),
    ],
)
def test_a_health_url_that_cannot_answer_is_refused_before_the_start(
    tmp_path: Path, url: str, code: int, message: str
) -> None:
    result = envguard_process(
        tmp_path, "launch", "-p", DEMO, "--detach", "--health-url", url, "--", *MARKED
    )
    assert result.returncode == code and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "ran").exists() and not (tmp_path / "envguard-demo.pid").exists()


def test_a_log_that_cannot_be_written_is_refused_before_the_start(tmp_path: Path) -> None:
    result = envguard_process(
        tmp_path, "launch", "-p", DEMO, "--detach", "--log", "/nonexistent/x.log", "--", *MARKED
    )
    assert result.returncode == 3, result.stderr
    assert (
        "/nonexistent/x.log: cannot write the log file: No such file or directory" in result.stderr
    )
    assert not (tmp_path / "ran").exists()


def test_an_argument_that_is_not_utf8_is_written_escaped(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "envguard", "launch", "-p", DEMO, "--detach", "--",
         "/bin/echo", os.fsdecode(b"caf\xe9")],
        cwd=tmp_path, capture_output=True, timeout=60,
        env={"PATH": os.environ["PATH"], "ENVGUARD_CACHE_DIR": str(tmp_path / "c")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    header = (tmp_path / "envguard-demo.log").read_bytes().splitlines()[0]
    assert header.decode("ascii").endswith("/bin/echo 'caf\\udce9'")


def test_a_closed_stderr_does_not_stop_a_launch_half_way(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # nobody will ever read what envguard prints
    result = subprocess.run(
        [sys.executable, "-m", "envguard", "launch", "-p", DEMO, "--detach", "--pid-file", "s.pid",
         "--", "sleep", "60"],
        cwd=tmp_path, stderr=write, stdout=write, timeout=60,
        env={"PATH": os.environ["PATH"], "ENVGUARD_CACHE_DIR": str(tmp_path / "c")},
    )  # fmt: skip
    os.close(write)
    try:
        assert result.returncode == 0
        assert (tmp_path / "s.manifest.json").exists()  # the launch finished its work
    finally:
        envguard_process(tmp_path, "stop", "--pid-file", "s.pid", "--grace", "1")


CTRL_C_DURING_IMPORTS = """
import sys
class CtrlC:  # the Ctrl-C lands while click is being imported, as a fast typist's would
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            raise KeyboardInterrupt
sys.meta_path.insert(0, CtrlC())
sys.argv = ["envguard", "launch", "-p", {demo!r}, "--", "true"]
from envguard.__main__ import main
main()
"""


def test_ctrl_c_while_envguard_starts_is_quiet(tmp_path: Path) -> None:
    """Ctrl-C during the slow imports: exit 130, no traceback, nothing started."""
    result = subprocess.run(
        [sys.executable, "-c", CTRL_C_DURING_IMPORTS.format(demo=DEMO)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (130, "")


def test_one_server_per_port_even_when_it_binds_late(tmp_path: Path) -> None:
    """Four detached launches, four pid files, one port that the server binds only after
    loading: exactly one starts; the others are refused while it is still starting."""
    from tests.builders import free_port

    port = free_port()
    command = [sys.executable, "-m", "envguard.testing.standin", "--port", str(port),
               "--listen-after", "3"]  # fmt: skip
    launches = [
        envguard_started(
            tmp_path,
            "launch",
            "-p",
            DEMO,
            "--detach",
            "--pid-file",
            f"s{i}.pid",
            "--health-url",
            f"http://127.0.0.1:{port}/health",
            "--timeout",
            "30",
            "--",
            *command,
            env={"XDG_RUNTIME_DIR": str(tmp_path / "run")},
        )
        for i in range(4)
    ]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in launches]  # type: ignore[union-attr]
    try:
        assert sorted(code for code, _ in results) == [0, 1, 1, 1], results
        refused = [err for code, err in results if code == 1]
        assert all(f"port {port} is taken: a server envguard launched" in e for e in refused)
    finally:
        for i in range(4):
            envguard_process(tmp_path, "stop", "--pid-file", f"s{i}.pid", "--grace", "1")


def test_a_foreground_launch_on_a_busy_port_is_refused_before_it_starts(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = envguard_process(
            tmp_path, "launch", "-p", DEMO, "--health-url", f"http://127.0.0.1:{port}/health",
            "--", *MARKED,
        )  # fmt: skip
    assert result.returncode == 1 and f"port {port} is already in use" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_health_counts_only_from_the_launched_tree(spawn: object) -> None:
    from envguard.launching.ports import listener_is_within
    from tests.builders import free_port

    port = free_port()
    listen = f"import socket; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen()"
    other = spawn(listen, {})  # type: ignore[operator]
    bystander = spawn("", {})  # type: ignore[operator]
    url = f"http://127.0.0.1:{port}/health"
    assert listener_is_within(url, other.pid)
    assert not listener_is_within(url, bystander.pid)
