"""Time `envguard launch -- CMD` (foreground, no health URL) against running CMD directly.

    python benchmarks/launch_overhead.py [--rounds 30]

Both run interleaved in the same run; the overhead is the difference of the medians.
Target (issue 4): <= 50 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _common import compile_envguard, envguard_command, timed

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "demo.toml"


def main() -> None:
    compile_envguard()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="envguard-bench-")
    env = {**os.environ, "ENVGUARD_CACHE_DIR": cache}
    envguard = envguard_command()
    command = ["/bin/true"]
    launch = [*envguard, "launch", "-p", str(PROFILE), "--", *command]
    try:
        timed(launch, env)  # fills the profile cache
        direct, launched = [], []
        for _ in range(args.rounds):
            direct.append(timed(command, env))
            launched.append(timed(launch, env))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    base, total = statistics.median(direct), statistics.median(launched)
    overhead = total - base
    print(f"{args.rounds} interleaved rounds, Python {sys.version.split()[0]}, command {command}")
    print(f"  direct exec                         median {base * 1000:6.1f} ms")
    print(f"  envguard launch (foreground)        median {total * 1000:6.1f} ms")
    verdict = "met" if overhead <= 0.050 else "NOT met"
    print(f"target: launch overhead <= 50 ms: {verdict} ({overhead * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
