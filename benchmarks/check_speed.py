"""Time `envguard check` on a 9-process stand-in tree against `python -c pass`.

    python benchmarks/check_speed.py [--rounds 30]

Both commands run interleaved in the same run, so machine noise hits both alike; the
figure to quote is the ratio, with the absolute medians beside it. Target (issue 2):
median <= 100 ms for a warm check (profile cache filled, as from cron).
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

from _common import compile_envguard, envguard_command, timed

from envguard.testing.standin import wait_ready
from envguard.testing.tuned import TUNED_LAUNCH
from envguard.testing.tuned import TUNED_NCCL as TUNED

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "demo.toml"
SEED = REPO / "profiles" / "kimi-k2.5-int4-tp8.toml"
FAKE_SITE = REPO / "tests" / "data" / "fake_site"


def main() -> None:
    compile_envguard()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    server = subprocess.Popen(
        [sys.executable, "-m", "envguard.testing.standin", "--schedulers", "6"],
        env={"PATH": os.environ.get("PATH", ""), "SPT_NOENV": "1", **TUNED},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    pid = wait_ready(server.stdout)
    # The tuned launch line as a real process (tests/data/fake_site), for the flags path.
    launch = subprocess.Popen(
        [sys.executable, "-m", "sglang.launch_server", *TUNED_LAUNCH],
        env={
            "PATH": os.environ.get("PATH", ""),
            "SPT_NOENV": "1",
            "PYTHONPATH": str(FAKE_SITE),
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
            **TUNED,
        },
        stdout=subprocess.PIPE,
        text=True,
    )
    assert launch.stdout is not None
    launch_pid = wait_ready(launch.stdout)
    cache = tempfile.mkdtemp(prefix="envguard-bench-")
    env = {**os.environ, "ENVGUARD_CACHE_DIR": cache}
    envguard = envguard_command()
    check = [*envguard, "check", "-p", str(PROFILE), "--pid", str(pid), "--quiet"]
    seed = [*envguard, "check", "-p", str(SEED), "--pid", str(launch_pid), "--quiet"]
    baseline = [sys.executable, "-c", "pass"]
    try:
        nprocs = 1 + len(
            subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        )
        timed(check, env)  # fills the profile cache, as the first cron run would
        timed(seed, env)
        base_times, warm_times, cold_times, seed_times = [], [], [], []
        for _ in range(args.rounds):
            base_times.append(timed(baseline, env))
            warm_times.append(timed(check, env))
            cold_times.append(timed(check, {**env, "ENVGUARD_NO_CACHE": "1"}))
            seed_times.append(timed(seed, env))
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
        ("envguard check, seed profile + SGLang flags", statistics.median(seed_times)),
    ]
    print(f"{args.rounds} interleaved rounds, Python {sys.version.split()[0]}")
    for label, value in rows:
        print(f"  {label:<44} median {value * 1000:6.1f} ms   {value / base:5.2f}x baseline")
    warm = statistics.median(warm_times)
    verdict = "met" if warm <= 0.100 else "NOT met"
    print(f"target: warm check median <= 100 ms: {verdict} ({warm * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
