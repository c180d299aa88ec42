"""`envguard launch --detach --nccl-log`: the check after health reads NCCL's own lines in
the server's log. The server here prints what NCCL prints for each NCCL variable it reads
(the format recorded on an H200: tests/data/nccl), from its own environment."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.builders import free_port
from tests.conftest import PROFILES, envguard_process

NCCL_LIKE_SERVER = """
import http.server, os, sys
bend = dict(arg.split("=", 1) for arg in sys.argv[2:])  # what this "NCCL" reads instead
for name in sorted(os.environ):
    if name.startswith("NCCL_"):
        value = bend.get(name, os.environ[name])
        shown = value + "." if value.lstrip("-").isdigit() else value  # %lld. for integers
        print(f"vm:{os.getpid()}:{os.getpid()} [0] NCCL INFO {name} set by environment to {shown}")
sys.stdout.flush()

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def launch(tmp_path: Path, *bend: str) -> tuple[int, str]:
    port = free_port()
    result = envguard_process(
        tmp_path, "launch", "-p", str(PROFILES / "demo.toml"), "--detach", "--nccl-log",
        "--log", "server.log", "--health-url", f"http://127.0.0.1:{port}/health",
        "--", sys.executable, "-c", NCCL_LIKE_SERVER, str(port), *bend,
    )  # fmt: skip
    envguard_process(tmp_path, "stop", "--pid-file", "envguard-demo.pid")
    return result.returncode, result.stderr


def test_nccl_read_what_the_profile_says(tmp_path: Path) -> None:
    code, out = launch(tmp_path)
    assert code == 0, out
    assert "nccl log: server.log: 1 processes, 6 settings reported" in out


def test_nccl_read_something_else(tmp_path: Path) -> None:
    code, out = launch(tmp_path, "NCCL_BUFFSIZE=16")
    assert code == 1, out
    assert "nccl-log     NCCL_BUFFSIZE: expected 16777216, found '16 (NCCL used it in pid" in out
    assert (
        "unverifiable NCCL_BUFFSIZE: expected 16 (what NCCL used), envguard read '16777216' (environ)"
        in out
    )


def test_it_needs_the_detached_servers_log(tmp_path: Path) -> None:
    result = envguard_process(tmp_path, "launch", "-p", "demo", "--nccl-log", "--", "true")
    assert result.returncode == 2
    assert "--nccl-log reads the server's log: give --detach" in result.stderr
