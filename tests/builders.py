"""What tests build, in one place (pre-commit's testing/ is the model): a free port, a
Python process with a crafted environment, an HTTP server on 127.0.0.1, profiles (as files
and as objects), and observations of processes for the pure evaluation core.

Fixtures wrapping these live in tests/conftest.py."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from envguard.probes.observe import ENVIRON, Observation, ProcessObservation, Setting
from envguard.probes.process import ProcessSnapshot
from envguard.profile.schema import EnvSection, Profile, RequiredValue, ServerSection
from envguard.testing.tuned import TUNED_LAUNCH, TUNED_NCCL

__all__ = ["TUNED_LAUNCH", "TUNED_NCCL"]

READY = "up"


def free_port() -> int:
    """A TCP port nobody listens on now (bound once by the kernel's choice, then freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def python_process(code: str, env: dict[str, str], **popen: Any) -> subprocess.Popen[str]:
    """`python -c CODE` with exactly `env`, returned once it has printed its ready line (so
    its /proc entries are complete). It then sleeps until killed."""
    script = f"{code}; " if code else ""
    script += f"import time; print({READY!r}, flush=True); time.sleep(600)"
    process = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True, **popen
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line == f"{READY}\n", f"the process did not start: {line!r}"
    return process


@contextlib.contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on 127.0.0.1 (a free port); yield the base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def static_handler(paths: dict[str, bytes]) -> type[BaseHTTPRequestHandler]:
    """A handler answering GET PATH with its bytes (200), anything else 404."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = paths.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def profile_toml(name: str = "p", version: int = 1, body: str = "") -> str:
    """A profile file's text: the header every profile needs, then `body` (TOML)."""
    return f'schema_version = 1\nname = "{name}"\nversion = {version}\n{body}'


def profile(
    *,
    required: dict[str, RequiredValue] | None = None,
    optional: dict[str, RequiredValue] | None = None,
    forbidden: tuple[str, ...] = (),
    strict: tuple[str, ...] = (),
    server: ServerSection | None = None,
    name: str = "p",
) -> Profile:
    """A validated-shaped Profile object for the pure core's unit tests."""
    return Profile(
        schema_version=1,
        name=name,
        version=1,
        server=server or ServerSection(),
        env=EnvSection(
            required=required or {},
            optional=optional or {},
            forbidden=forbidden,
            strict_prefixes=strict,
        ),
    )


def snapshot(
    pid: int = 100,
    role: str = "launcher",
    environ: dict[str, str] | None = None,
    *,
    state: str = "ok",
    ppid: int = 1,
) -> ProcessSnapshot:
    """A process as /proc would show it (without a real process)."""
    return ProcessSnapshot(
        pid=pid,
        ppid=ppid,
        uid=0,
        start_ticks=1000 + pid,
        role=role,
        cmdline=("python3", "-m", "sglang.launch_server") if role == "launcher" else (role,),
        environ=environ if state == "ok" else None,
        environ_state=state,  # type: ignore[arg-type]
        cwd="/",
    )


def observation(*processes: tuple[str, dict[str, str] | None]) -> Observation:
    """A tree from (role, environ) pairs: the first is the launcher; None: clobbered."""
    observed = []
    for index, (role, environ) in enumerate(processes):
        snap = snapshot(
            100 + index, role, environ, state="ok" if environ is not None else "clobbered"
        )
        effective = (
            {k: Setting(v, ENVIRON) for k, v in environ.items()} if environ is not None else None
        )
        observed.append(ProcessObservation(snap, effective, (), None))
    return Observation(100, tuple(observed), ())


def tuned_launch(
    *, port: int | None = None, without: tuple[str, ...] = (), extra: tuple[str, ...] = ()
) -> list[str]:
    """The tuned launch line (one constant: envguard.testing.tuned.TUNED_LAUNCH) on another
    `port`, `without` some of its options (each with its value, if it takes one), plus
    `extra` arguments."""
    line: list[str] = []
    tokens = iter(TUNED_LAUNCH)
    for token in tokens:
        takes_value = token in ("--model-path", "--tp-size", "--mem-fraction-static", "--host",
                                "--port", "--num-continuous-decode-steps")  # fmt: skip
        value = next(tokens) if takes_value else None
        if token in without:
            continue
        if token == "--port" and port is not None:
            value = str(port)
        line += [token] if value is None else [token, value]
    return [*line, *extra]
