"""Time `envguard check` on a 9-process stand-in tree against `python -c pass`.

    python benchmarks/check_speed.py [--rounds 30]

Both commands run interleaved in the same run, so machine noise hits both alike; the
figure to quote is the ratio, with the absolute medians beside it. Target:
the README's cron line (`check -p kimi-k2.5-int4-tp8 --port 8000`: port lookup,
SGLang flags, /server_info) <= 6x `python -c pass`, warm cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import compile_envguard, envguard_command, start_tree, timed

from envguard.testing.tuned import TUNED_LAUNCH

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "demo.toml"
SEED = REPO / "profiles" / "kimi-k2.5-int4-tp8.toml"
FAKE_SITE = REPO / "tests" / "data" / "fake_site"


def main() -> None:
    compile_envguard()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    server, pid = start_tree("envguard.testing.standin", "--schedulers", "6")
    # The tuned launch line as a real process (tests/data/fake_site), for the flags path: a
    # 9-process tree serving HTTP on a free port (8000 may be taken here), found by --port
    # as the README's cron line finds it.
    port = _free_port()
    line = [a if a != "8000" else str(port) for a in TUNED_LAUNCH]
    launch, launch_pid = start_tree(
        "sglang.launch_server",
        *line,
        env={
            "PYTHONPATH": str(FAKE_SITE),
            "STANDIN_HTTP": "1",
            "STANDIN_SCHEDULERS": "6",
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
            "STANDIN_SERVER_INFO": _server_info(line),
        },
    )
    cache = tempfile.mkdtemp(prefix="envguard-bench-")
    env = {**os.environ, "ENVGUARD_CACHE_DIR": cache}
    envguard = envguard_command()
    check = [*envguard, "check", "-p", str(PROFILE), "--pid", str(pid), "--quiet"]
    here = Path(cache) / "kimi-here.toml"  # the shipped profile, on this run's port
    here.write_text(
        f'schema_version = 1\nname = "kimi-k2.5-int4-tp8"\nversion = 4\nextends = ["{SEED}"]\n'
        f"[server]\ncommand = []\n[server.flags]\nport = {port}\n"
    )
    seed = [*envguard, "check", "-p", str(here), "--pid", str(launch_pid), "--quiet"]
    cron = [*envguard, "check", "-p", str(here), "--port", str(port)]
    baseline = [sys.executable, "-c", "pass"]
    try:
        nprocs = 1 + len(
            subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        )
        timed(check, env)  # fills the profile cache, as the first cron run would
        timed(seed, env)
        timed(cron, env)
        base_times, warm_times, cold_times, seed_times, cron_times = [], [], [], [], []
        for _ in range(args.rounds):
            base_times.append(timed(baseline, env))
            warm_times.append(timed(check, env))
            cold_times.append(timed(check, {**env, "ENVGUARD_NO_CACHE": "1"}))
            seed_times.append(timed(seed, env))
            cron_times.append(timed(cron, env))
    finally:
        for process in (server, launch):
            process.terminate()
            process.wait()
        shutil.rmtree(cache, ignore_errors=True)

    base = statistics.median(base_times)
    rows = [
        ("python -c pass", base),
        (f"envguard check, {nprocs} processes, warm cache", statistics.median(warm_times)),
        ("envguard check, no profile cache", statistics.median(cold_times)),
        ("envguard check, tuned profile + SGLang flags", statistics.median(seed_times)),
        ("check -p kimi-k2.5-int4-tp8 --port (README)", statistics.median(cron_times)),
    ]
    print(f"{args.rounds} interleaved rounds, Python {sys.version.split()[0]}")
    for label, value in rows:
        print(f"  {label:<44} median {value * 1000:6.1f} ms   {value / base:5.2f}x baseline")
    ratio = statistics.median(cron_times) / base
    verdict = "met" if ratio <= 6 else "NOT met"
    print(f"target: the README's cron check <= 6x python -c pass: {verdict} ({ratio:.2f}x)")


def _server_info(line: list[str]) -> str:
    """What SGLang 0.5.23's /server_info answers for this launch line: every resolved
    ServerArgs field (~530 of them), so the check reads a body of the real size."""
    import json

    from envguard.flags.catalog import load
    from envguard.flags.preprocess import parse

    parsed = parse(load("sglang", "0.5.23"), line)
    return json.dumps({dest: flag.value for dest, flag in parsed.values.items()}, default=str)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    main()
