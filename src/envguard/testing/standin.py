"""A CPU-only stand-in for an SGLang server, for tests and `envguard demo`.

Shaped like the real thing (shared/reference/servers.md): the launcher changes its own
os.environ (SGLang 0.5.10+ sets CUDA_DEVICE_MAX_CONNECTIONS=8) and then starts workers with
multiprocessing *spawn*; each worker calls the real `setproctitle` (sglang::scheduler_TP0,
..., sglang::detokenizer), which clobbers its /proc/PID/environ unless SPT_NOENV=1.
Optionally serves HTTP on 127.0.0.1 (GET /health -> 200) so it can be found by port.

    python -m envguard.testing.standin --schedulers 2 [--port 8000] [--rank-env 1:NCCL_ALGO=Tree]

Prints `ready <pid>` once every worker is up; SIGTERM stops the tree.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time
from multiprocessing.connection import Connection


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


def _serve_health(port: int, server_info: str | None) -> None:
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/server_info" and server_info is not None:
                body = server_info.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            code = 200 if self.path in ("/health", "/health_generate") else 404
            self.send_response(code)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()


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
    args = parser.parse_args(argv)

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
    if args.port:
        _serve_health(args.port, args.server_info)

    def stop(signum: int, frame: object) -> None:
        for child, _ in children:
            child.terminate()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"ready {os.getpid()}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
