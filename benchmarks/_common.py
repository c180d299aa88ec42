"""What the benchmark scripts share: timing a command, and byte-compiling envguard first."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def compile_envguard() -> None:
    """Byte-compile envguard as `pip install` does: with PYTHONDONTWRITEBYTECODE set (as on
    some machines) an editable checkout would otherwise be compiled on every run. Warn when
    an editable install's import hook runs at every interpreter start (setuptools' default
    for this layout): it adds ~12 ms to both sides and makes every ratio look better."""
    import compileall

    import envguard

    compileall.compile_dir(Path(envguard.__file__).parent, quiet=1)
    if any(name.startswith("__editable__") for name in sys.modules):
        print(
            "warning: envguard is an editable install with an import hook, which slows every "
            "interpreter start; for figures, `pip install .` (or -e with "
            "--config-settings editable_mode=compat)",
            file=sys.stderr,
        )


def timed(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    """Seconds one run of `argv` takes; stop the benchmark if it fails."""
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if result.returncode not in ok:
        sys.exit(f"{argv} failed ({result.returncode}): {result.stderr.decode()}")
    return elapsed


def envguard_command() -> list[str]:
    """The console script beside this Python, as a user runs it (else `python -m envguard`)."""
    script = Path(sys.executable).with_name("envguard")
    return [str(script)] if script.exists() else [sys.executable, "-m", "envguard"]


def start_tree(
    module: str = "envguard.testing.standin", *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """A 9-process stand-in tree (launcher, resource tracker, 6 schedulers, detokenizer)
    with the tuned NCCL environment and SPT_NOENV=1, as envguard launch would start it;
    returns the process and the launcher's pid once every worker is up."""
    import os

    from envguard.testing.standin import wait_ready
    from envguard.testing.tuned import TUNED_NCCL

    full = {"PATH": os.environ.get("PATH", ""), "SPT_NOENV": "1", **TUNED_NCCL, **(env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", module, *args], env=full, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, wait_ready(process.stdout)
