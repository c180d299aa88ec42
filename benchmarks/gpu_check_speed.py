"""What a profile's [gpu] section costs `envguard check`, on a GPU host.

    python3 benchmarks/gpu_check_speed.py (--pid PID | --port PORT) WITH_GPU.toml WITHOUT_GPU.toml

Runs both checks of the same process tree interleaved (these machines are noisy) and prints
the medians and their difference (target: at most 30 ms), and NVML's own initialisation
measured in process. Part of benchmarks/gpu_acceptance.sh.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--pid")
    where.add_argument("--port", help="find the server by port, as the README's cron line")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("with_gpu")
    parser.add_argument("without_gpu")
    args = parser.parse_args()
    target = ["--pid", args.pid] if args.pid else ["--port", args.port]
    envguard = [sys.executable, "-m", "envguard", "check", *target, "-q", "-p"]
    base = [sys.executable, "-c", "pass"]
    for argv in ([*envguard, args.with_gpu], [*envguard, args.without_gpu]):
        timed(argv)  # warm the profile cache and the page cache
    with_gpu, without, python = [], [], []
    for _ in range(args.rounds):
        python.append(timed(base))
        with_gpu.append(timed([*envguard, args.with_gpu]))
        without.append(timed([*envguard, args.without_gpu]))
    import pynvml

    inits = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        pynvml.nvmlInit()
        inits.append(time.perf_counter() - start)
        pynvml.nvmlShutdown()
    a, b, c = (statistics.median(x) * 1000 for x in (with_gpu, without, python))
    print(f"{args.rounds} interleaved rounds: python -c pass {c:.1f} ms")
    print(f"  check without [gpu]   median {b:6.1f} ms")
    print(f"  check with [gpu]      median {a:6.1f} ms   (+{a - b:.1f} ms; target <= 30 ms)")
    print(f"  nvmlInit alone        median {statistics.median(inits) * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
