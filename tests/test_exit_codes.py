"""The published exit-code contract, through the real console entry point."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from tests.conftest import PROFILES, TUNED, StandIn

DEMO = str(PROFILES / "demo.toml")


def envguard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envguard", *args], capture_output=True, text=True)


def test_exit_codes(standin: Callable[..., StandIn]) -> None:
    good = standin(TUNED, "--schedulers", "1")
    drifted = standin({**TUNED, "NCCL_ALGO": "Tree"}, "--schedulers", "1")
    hidden = standin(TUNED, "--schedulers", "1", spt_noenv=False)
    assert envguard("check", "-p", DEMO, "--pid", str(good.pid), "-q").returncode == 0
    assert envguard("check", "-p", DEMO, "--pid", str(drifted.pid), "-q").returncode == 1
    assert envguard("check", "-p", DEMO, "--bogus").returncode == 2
    assert envguard("check", "-p", DEMO, "--pid", str(hidden.pid), "-q").returncode == 3
    missing = envguard("check", "-p", "no/such.toml", "--pid", str(good.pid))
    assert (missing.returncode, missing.stdout) == (3, "")
    assert missing.stderr == (
        "envguard: no/such.toml: no such profile file\n"
        "hint: give the path of a .toml profile, e.g. profiles/demo.toml\n"
    )
    assert "Traceback" not in missing.stderr
