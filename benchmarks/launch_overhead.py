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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "demo.toml"


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{argv} failed ({result.returncode}): {result.stderr.decode()}")
    return elapsed


def compile_envguard() -> None:
    """Byte-compile envguard as `pip install` does: with PYTHONDONTWRITEBYTECODE set (as on
    some machines) an editable checkout would otherwise be compiled on every run."""
    import compileall

    import envguard

    compileall.compile_dir(Path(envguard.__file__).parent, quiet=1)


def main() -> None:
    compile_envguard()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="envguard-bench-")
    env = {**os.environ, "ENVGUARD_CACHE_DIR": cache}
    script = Path(sys.executable).with_name("envguard")
    envguard = [str(script)] if script.exists() else [sys.executable, "-m", "envguard"]
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
