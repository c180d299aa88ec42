"""Time one `envguard watch` run with a textfile sink on a 9-process stand-in tree, against
`python -c pass`, interleaved; and its peak memory.

    python benchmarks/watch_speed.py [--rounds 20]

Targets: median <= 8x the bare interpreter, peak RSS <= 50 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import compile_envguard, envguard_command, start_tree, timed

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "demo.toml"


def main() -> None:
    compile_envguard()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    server, pid = start_tree("envguard.testing.standin", "--schedulers", "6")
    work = Path(tempfile.mkdtemp(prefix="envguard-watch-bench-"))
    (work / "textfile").mkdir()
    env = {**os.environ, "ENVGUARD_CACHE_DIR": str(work / "cache")}
    watch = [
        *envguard_command(), "watch", "-p", str(PROFILE), "--pid", str(pid),
        "--state", str(work / "state"), "--textfile-dir", str(work / "textfile"),
    ]  # fmt: skip
    baseline = [sys.executable, "-c", "pass"]
    try:
        timed(watch, env)  # fills the profile cache and the state, as the first cron run would
        base_times, watch_times = [], []
        for _ in range(args.rounds):
            base_times.append(timed(baseline, env))
            watch_times.append(timed(watch, env))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run(watch, env=env, check=True, stdout=subprocess.DEVNULL)
        peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    base, median = statistics.median(base_times), statistics.median(watch_times)
    print(f"{args.rounds} interleaved rounds, Python {sys.version.split()[0]}")
    print(f"  python -c pass                          median {base * 1000:6.1f} ms   1.00x")
    ratio = median / base
    print(f"  envguard watch, textfile, 9 processes  median {median * 1000:6.1f} ms  {ratio:.2f}x")
    print(f"  peak RSS of a watch run (max over the children)  {peak_mb:.1f} MB")
    verdict = "met" if median / base <= 8 and peak_mb <= 50 else "NOT met"
    print(f"target: <= 8x python -c pass and <= 50 MB: {verdict}")


if __name__ == "__main__":
    main()
