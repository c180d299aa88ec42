"""`envguard demo` tells the whole story from any directory, and says what it cannot show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import envguard_process


def test_the_demo_tells_the_story_from_any_directory(tmp_path: Path) -> None:
    result = envguard_process(tmp_path, "demo", timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    acts = [line for line in out.splitlines() if line[:2] in ("1.", "2.", "3.", "4.")]
    assert [a[:2] for a in acts] == ["1.", "2.", "3.", "4."]
    assert "verdict: ok - 5 processes match demo@1 (exit 0)" in out
    assert "recorded #1: tok_s=88.8" in out
    assert "verdict: drift - 30 findings in 5 processes differ from demo@1 (exit 1)" in out
    assert "envguard: the server does not match demo@1: the benchmark was not run" in out
    assert "refused: the setups differ in env.NCCL_ALGO, env.NCCL_BUFFSIZE" in out
    assert "healthy after" in out and out.count("verdict: ok") == 2
    assert "seed" not in out.lower()  # no internal words in what users read
    assert list(tmp_path.iterdir()) == [tmp_path / ".envguard-cache"]  # nothing left here


def test_without_setproctitle_the_demo_says_so(tmp_path: Path) -> None:
    hide = (
        "import sys; sys.modules['setproctitle'] = None; from envguard.__main__ import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide, "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "ENVGUARD_CACHE_DIR": str(tmp_path / "c")},
    )
    assert result.stdout.startswith(
        "warning: the setproctitle package is not installed, so the stand-in's workers"
    ), result.stdout + result.stderr
