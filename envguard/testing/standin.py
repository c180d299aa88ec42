"""A CPU-only stand-in for an SGLang server, for tests, benchmarks and `envguard demo`.

Shaped like the real thing (docs/servers.md): the launcher changes its own
os.environ (SGLang 0.5.10+ sets CUDA_DEVICE_MAX_CONNECTIONS=8) and then starts workers with
multiprocessing *spawn*; each worker calls the real `setproctitle` (sglang::scheduler_TP0,
..., sglang::detokenizer), which clobbers its /proc/PID/environ unless SPT_NOENV=1.
With --port it serves HTTP on 127.0.0.1 from the start, like SGLang: GET /health answers
503 while starting and 200 once up (after --healthy-after seconds).

    python -m envguard.testing.standin --schedulers 2 [--port 8000] [--rank-env 1:NCCL_ALGO=Tree]

Prints `ready <pid>` once every worker is up; SIGTERM stops the tree (unless --ignore-term).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import IO

from envguard.knowledge.servers import is_rank
from envguard.probes.process import process_tree
from envguard.testing.tuned import TUNED_NCCL

_state = {"healthy": False}


def wait_ready(stdout: IO[str]) -> int:
    """Read a stand-in's output until `ready PID`; return PID (0 if it exited first)."""
    for line in stdout:
        if line.startswith("ready "):
            return int(line.split()[1])
    return 0


def worker(title: str, parent_pid: int, ready: Connection) -> None:
    try:
        from setproctitle import setproctitle
    except ImportError:  # pragma: no cover - the test and demo extras install it
        pass
    else:
        setproctitle(title)
    ready.send(os.getpid())
    ready.close()
    # Exit with the launcher, like SGLang's workers: no orphans left behind.
    while os.getppid() == parent_pid:
        time.sleep(0.1)


def _serve(port: int, server_info: str | None) -> None:
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/server_info" and server_info is not None:
                self._reply(200, server_info.encode())
            elif self.path in ("/health", "/health_generate"):
                self._reply(200 if _state["healthy"] else 503, b"")
            else:
                self._reply(404, b"")

        def _reply(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def report_speed(pid: int) -> None:
    """The stand-in's "benchmark": print as JSON the tok/s that the real 8-GPU server
    measured in the setup the stand-in tree at `pid` now has (88.8 with the six tuned NCCL
    variables on every rank, 62.9 without them). A CPU cannot measure it; it can tell which
    of the two setups it is looking at, from the workers' environments."""
    snapshots, _, _ = process_tree(pid)
    ranks = [s for s in snapshots if is_rank(s.role)]
    tuned = bool(ranks) and all(
        all((s.environ or {}).get(k) == v for k, v in TUNED_NCCL.items()) for s in ranks
    )
    print(json.dumps({"tok_s": 88.8 if tuned else 62.9}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedulers", type=int, default=2)
    parser.add_argument("--no-detokenizer", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument(
        "--rank-env",
        action="append",
        default=[],
        metavar="RANK:NAME=VALUE",
        help="set NAME=VALUE in the environment of one scheduler only",
    )
    parser.add_argument("--title-prefix", default="sglang::")
    parser.add_argument("--server-info", metavar="JSON", help="serve this at GET /server_info")
    parser.add_argument("--healthy-after", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument(
        "--listen-after", type=float, default=0.0, metavar="SECONDS",
        help="bind --port only this long after start (a model that loads first)",
    )  # fmt: skip
    parser.add_argument(
        "--crash-after",
        type=float,
        metavar="SECONDS",
        help="exit with status 3 this long after start, before becoming healthy",
    )
    parser.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM (the launcher)")
    parser.add_argument(
        "--report-speed", type=int, metavar="PID", help="print the tok/s of the tree at PID, exit"
    )
    args = parser.parse_args(argv)
    if args.report_speed:
        report_speed(args.report_speed)
        return
    started = time.monotonic()
    print(f"standin {os.getpid()} starting", flush=True)
    if args.port and not args.listen_after:
        _serve(args.port, args.server_info)
    if args.port and args.listen_after:
        threading.Timer(args.listen_after, _serve, (args.port, args.server_info)).start()

    # What SGLang's _set_envs_and_config does before starting workers (0.5.10+).
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "8"
    per_rank: dict[int, dict[str, str]] = {}
    for item in args.rank_env:
        rank, _, assignment = item.partition(":")
        name, _, value = assignment.partition("=")
        per_rank.setdefault(int(rank), {})[name] = value

    context = multiprocessing.get_context("spawn")
    titles = [f"{args.title_prefix}scheduler_TP{rank}" for rank in range(args.schedulers)]
    if not args.no_detokenizer:
        titles.append(f"{args.title_prefix}detokenizer")
    children = []
    for rank, title in enumerate(titles):
        saved = dict(os.environ)
        os.environ.update(per_rank.get(rank, {}))
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=worker, args=(title, os.getpid(), send), daemon=True)
        child.start()
        os.environ.clear()
        os.environ.update(saved)
        children.append((child, receive))
    for _, receive in children:
        receive.recv()

    def stop(signum: int, frame: object) -> None:
        for child, _ in children:
            child.terminate()
        sys.exit(0)

    signal.signal(signal.SIGTERM, signal.SIG_IGN if args.ignore_term else stop)
    print(f"ready {os.getpid()}", flush=True)
    while True:
        elapsed = time.monotonic() - started
        if args.crash_after is not None and elapsed >= args.crash_after:
            print("standin: crashing while starting, as asked", flush=True)
            for child, _ in children:
                child.terminate()
            sys.exit(3)
        if elapsed >= args.healthy_after and args.crash_after is None:
            _state["healthy"] = True
        time.sleep(0.05)


if __name__ == "__main__":
    main()
