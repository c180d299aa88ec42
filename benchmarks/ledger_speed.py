"""Time `envguard ledger list --profile X` and `ledger compare A B` on a 100k-record ledger.

    python benchmarks/ledger_speed.py [--records 100000] [--rounds 15]

Each command runs as a user runs it (a new process), interleaved with `python -c pass` as the
baseline of the same run; the in-process times of the library calls are shown too.
Target (issue 5): <= 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import compile_envguard, timed

from envguard.evaluation.results import compare
from envguard.fingerprint import fingerprint
from envguard.ledger.store import Ledger


def setup_for(i: int) -> dict[str, object]:
    return {
        "env": {
            "NCCL_PROTO": "LL",
            "NCCL_ALGO": ["Ring", "Tree"][i % 2],
            "NCCL_BUFFSIZE": 16777216,
        },
        "flags": {"tp_size": 8, "num_continuous_decode_steps": 1 + i % 4},
        "server": {"kind": "sglang", "version": "0.5.23"},
    }


def fill(path: Path, count: int) -> None:
    ledger = Ledger.open(path)
    rows = []
    for i in range(count):
        setup = setup_for(i)
        rows.append(
            (
                "2026-11-29T10:00:00+00:00",
                f"host{i % 16}",
                f"profile-{i % 50}",
                1 + i % 3,
                "d" * 64,
                fingerprint(setup),
                "valid" if i % 10 else "refused",
                "[]",
                json.dumps(["python", "bench.py"]),
                json.dumps({"tok_s": 60 + i % 40}),
                json.dumps(setup),
            )
        )
    ledger.db.execute("BEGIN")
    ledger.db.executemany(
        "INSERT INTO records (created_at, host, profile_name, profile_version, profile_digest, "
        "fingerprint, verdict, reasons, command, metrics, setup) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    ledger.db.execute("COMMIT")
    ledger.close()


def in_process(function: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    compile_envguard()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="envguard-ledger-bench-"))
    path = directory / "ledger.db"
    try:
        fill(path, args.records)
        env = {**os.environ, "ENVGUARD_LEDGER": str(path)}
        script = Path(sys.executable).with_name("envguard")
        envguard = [str(script)] if script.exists() else [sys.executable, "-m", "envguard"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "ledger list --profile profile-7": [
                *envguard,
                "ledger",
                "list",
                "--profile",
                "profile-7",
            ],
            "ledger compare (same setup)": [*envguard, "ledger", "compare", "12", "212"],
            "ledger compare --vary (setups differ)": [
                *envguard,
                "ledger",
                "compare",
                "11",
                "12",
                "--vary",
                "NCCL_ALGO",
                "--vary",
                "num-continuous-decode-steps",
            ],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, argv in commands.items():
                times[name].append(timed(argv, env, ok=(0, 1)))
        ledger = Ledger.open(path)
        a, b, c = ledger.get(12), ledger.get(212), ledger.get(13)
        library = {
            "select(profile, limit=20)": in_process(
                lambda: list(ledger.select(profile="profile-7", limit=20)), args.rounds
            ),
            "get x2 + compare (same setup)": in_process(
                lambda: compare(ledger.get(12), ledger.get(212)), args.rounds
            ),
            "compare (setups differ)": in_process(
                lambda: compare(a, c, ["NCCL_ALGO", "num_continuous_decode_steps"]), args.rounds
            ),
        }
        assert compare(a, b).comparable
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    base = statistics.median(times["python -c pass"])
    print(
        f"{args.records} records, {args.rounds} interleaved rounds, Python {sys.version.split()[0]}"
    )
    for name, values in times.items():
        value = statistics.median(values)
        print(f"  {name:<36} median {value * 1000:6.1f} ms   {value / base:5.2f}x baseline")
    print("in process (after imports):")
    for name, value in library.items():
        print(f"  {name:<40} median {value * 1000:6.2f} ms")
    worst = max(statistics.median(times[n]) for n in list(commands)[1:])
    verdict = "met" if worst <= 0.050 else "NOT met"
    print(f"target: list and compare <= 50 ms: {verdict} ({worst * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
