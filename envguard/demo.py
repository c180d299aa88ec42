"""`envguard demo`: the whole story on a CPU, in four acts.

A stand-in plays an 8-GPU SGLang server (a launcher and worker processes titled as SGLang
titles them). 1. Started with its tuned environment, it passes `check`, and a benchmark is
recorded. 2. Restarted by hand from a shell without the tuning, `check` finds the drift and
`bench` refuses to record. 3. A result measured on the drifted server anyway, under a profile
that pins nothing, cannot be compared with the tuned one: `ledger compare` refuses. 4.
`envguard launch` restarts it with the profile's environment, whatever the shell had, and
it passes again. Everything runs in a temporary directory, which is removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from envguard.benchmarking.run import bench
from envguard.checking import check
from envguard.errors import EnvguardError, ExitCode
from envguard.evaluation.results import compare
from envguard.launching.environment import build_environment
from envguard.launching.run import LaunchOptions, launch
from envguard.launching.stop import stop
from envguard.ledger.store import Ledger
from envguard.probes.target import Target
from envguard.profile.loader import load_profile
from envguard.render.ledger import comparison_text
from envguard.render.text import check_text
from envguard.testing.standin import wait_ready

Echo = Callable[[str], None]

STANDIN = [sys.executable, "-m", "envguard.testing.standin", "--schedulers", "2"]
UNPINNED = 'schema_version = 1\nname = "unpinned"\nversion = 1\ndescription = "pins nothing"\n'


def run_demo(profile_path: str, say: Echo, show: Echo) -> int:
    """Tell the story; `say` narrates, `show` prints what envguard prints. Returns 0 when
    every act ended as it should (checks 0/1/0, bench refused, compare refused)."""
    try:
        import setproctitle  # noqa: F401 - only whether it is there
    except ImportError:
        say(
            "warning: the setproctitle package is not installed, so the stand-in's workers "
            "cannot take SGLang's titles; their roles show as `python3` below "
            "(pip install 'envguard[demo]')"
        )
    profile = load_profile(profile_path).profile
    shell = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    tuned = build_environment(profile, shell).environ
    # The restart by hand: the NCCL variables were not in that shell.
    drifted = {k: v for k, v in tuned.items() if not k.startswith("NCCL_")}
    outcomes: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="envguard-demo-") as work:
        ledger = Path(work) / "ledger.db"
        speed = [*STANDIN[:3], "--report-speed"]

        say(f"1. A server runs with the environment its profile ({profile_path}) describes.")
        with standin(tuned) as pid:
            outcomes.append(_check(profile_path, pid, show) == ExitCode.OK)
            say("   A benchmark of it is recorded in the ledger, with its setup's fingerprint:")
            code = bench(profile_path, Target(pid=pid), [*speed, str(pid)], throughput=None,
                         metric_options=(), ledger_path=ledger, echo=indented(show))  # fmt: skip
            outcomes.append(code == ExitCode.OK)

        say("\n2. Someone restarts it by hand, from a shell without the NCCL tuning.")
        with standin(drifted) as pid:
            outcomes.append(_check(profile_path, pid, show) == ExitCode.DRIFT)
            say("   envguard bench will not record a result of this server as a result:")
            code = _refused(
                lambda: bench(profile_path, Target(pid=pid), [*speed, str(pid)],
                              throughput=None, metric_options=(), ledger_path=ledger,
                              echo=lambda line: None),
                show,
            )  # fmt: skip
            outcomes.append(code == ExitCode.DRIFT)
            say("\n3. Measured anyway, under a profile that pins nothing, it records 62.9 tok/s.")
            unpinned = Path(work) / "unpinned.toml"
            unpinned.write_text(UNPINNED)
            bench(str(unpinned), Target(pid=pid), [*speed, str(pid)], throughput=None,
                  metric_options=(), ledger_path=ledger, echo=indented(show))  # fmt: skip
            say("   Compared with the tuned result, it would look 29% slower, for no reason the")
            say("   experiment chose. envguard ledger compare 2 1 refuses:")
            outcomes.append(_compare(ledger, 2, 1, show))

        say("\n4. envguard launch restarts it with the profile's environment, whatever the")
        say("   shell had, waits for health, and checks the live process tree:")
        outcomes.append(_launch(profile_path, drifted, Path(work), show))
    if all(outcomes):
        say(
            "\nThe tuned server passed (exit 0), the restart was caught (exit 1), no result was "
            "recorded or compared across setups, and envguard launch brought the tuning back."
        )
        return int(ExitCode.OK)
    say(f"\nunexpected: the acts ended {outcomes} (expected all True)")
    return int(ExitCode.DRIFT)


def indented(show: Echo) -> Echo:
    return lambda line: show(f"   {line}")


@contextlib.contextmanager
def standin(environ: dict[str, str], *args: str) -> Iterator[int]:
    process = subprocess.Popen([*STANDIN, *args], env=environ, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        pid = wait_ready(process.stdout)
        if not pid:
            raise EnvguardError(
                "the stand-in server did not start",
                hint="is the `setproctitle` package installed? pip install 'envguard[demo]'",
            )
        yield pid
    finally:
        process.terminate()
        process.wait()


def _check(profile_path: str, pid: int, show: Echo) -> ExitCode:
    report = check(profile_path, Target(pid=pid))
    for line in check_text(report).splitlines():
        show(f"   {line}".rstrip())
    return report.exit_code


def _refused(action: Callable[[], int], show: Echo) -> int:
    try:
        return action()
    except EnvguardError as exc:
        show(f"   envguard: {exc.message}")
        return int(exc.exit_code)


def _compare(ledger_path: Path, first: int, second: int, show: Echo) -> bool:
    ledger = Ledger.open(ledger_path, create=False)
    try:
        result = compare(ledger.get(first), ledger.get(second))
    finally:
        ledger.close()
    for line in comparison_text(result):
        show(f"   {line}")
    for refusal in result.refusals:
        show(f"   refused: {refusal}")
    return not result.comparable


def _launch(profile_path: str, shell: dict[str, str], work: Path, show: Echo) -> bool:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pid_file = work / "demo.pid"
    options = LaunchOptions(
        detach=True,
        log=work / "demo.log",
        pid_file=pid_file,
        health_url=f"http://127.0.0.1:{port}/health",
        timeout=60,
    )
    command = [*STANDIN, "--port", str(port)]
    try:
        code = launch(profile_path, command, options, indented(show), shell)
    finally:
        with contextlib.suppress(EnvguardError):
            stop(pid_file, grace=5)
    return code == ExitCode.OK
