"""Start a server the way its profile says: preflight, start (detached or in the
foreground), wait for health, check the live tree, write the manifest.

Library first: `launch()` takes plain arguments and returns envguard's exit code; the click
command in envguard.commands.launch only parses options.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from envguard.errors import EnvguardError, ExitCode, Refused, UsageError
from envguard.knowledge.redaction import redact_value
from envguard.launching import supervise
from envguard.launching.ports import (
    listener_is_within,
    port_claim,
    port_in_use,
    refuse_a_claimed_port,
    url_port,
)
from envguard.launching.report import Echo, findings_text, redacted, report_preflight
from envguard.launching.supervise import exit_status, start_detached
from envguard.probes.target import Target

if TYPE_CHECKING:
    from envguard.launching.pidfile import PidRecord
    from envguard.launching.preflight import Preflight
    from envguard.launching.supervise import Child
    from envguard.profile.loader import LoadedProfile

DEFAULT_TIMEOUT = 30 * 60  # Kimi-K2.5 on 8 GPUs took 15 minutes to load


class LaunchOptions(NamedTuple):
    """How to run it (the options of `envguard launch`)."""

    detach: bool = False
    log: Path | None = None
    pid_file: Path | None = None
    health_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    clean_env: bool = False
    force: bool = False
    grace: float = 30.0  # seconds between a forwarded SIGTERM and SIGKILL (as stop's --grace)
    server_stdout_to_stderr: bool = False  # foreground: stdout is for envguard's --json
    skip_gpu: bool = False  # do not check the profile's [gpu] section (before or after start)
    nccl_log: bool = False  # the check after health also reads NCCL's lines in the server's log


class _Start(NamedTuple):
    """One launch in progress: what was decided before the server started."""

    loaded: LoadedProfile
    pre: Preflight
    options: LaunchOptions
    pid_file: Path | None
    log: Path | None
    url: str | None
    echo: Echo


def resolve_command(loaded: LoadedProfile, command: list[str]) -> list[str]:
    if command:
        return command
    if loaded.profile.server.command:
        return list(loaded.profile.server.command)
    raise UsageError(
        "no command to launch", hint="give it after `--`, or set [server] command in the profile"
    )


def health_url_for(loaded: LoadedProfile, pre: Preflight, given: str | None) -> str | None:
    if given or loaded.profile.server.health_url:
        return given or loaded.profile.server.health_url
    if pre.port is not None and loaded.profile.server.kind != "generic":
        from envguard.probes.server_info import local_host

        return f"http://{local_host(pre.host)}:{pre.port}/health"
    return None


def check_health_url(url: str) -> None:
    """Refuse, before anything starts, a health URL that could never answer."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        raise UsageError(
            f"{url}: https health URLs are not polled (envguard does not verify the server's "
            "certificate for it)",
            hint="poll the server over plain http on its own host, e.g. "
            "http://127.0.0.1:PORT/health",
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise UsageError(
            f"{url}: not a usable health URL ({exc})", hint="fix --health-url"
        ) from None
    if parts.scheme != "http" or not parts.hostname or port == 0:
        raise UsageError(
            f"{url}: not a usable health URL", hint="e.g. --health-url http://127.0.0.1:8000/health"
        )


def _writable(path: Path, what: str, option: str) -> None:
    """A file envguard must write after the server starts, checked before it starts."""
    try:
        with path.open("ab"):
            pass
    except OSError as exc:
        raise EnvguardError(
            f"{path}: cannot write the {what}: {exc.strerror}",
            hint=f"give {option} in a directory that exists and is writable",
        ) from None


def refuse_or_force(
    loaded: LoadedProfile, pre: Preflight, force: bool, echo: Echo, what: str = "start"
) -> None:
    """Show the preflight's findings; raise Refused unless --force. `what` is done anyway
    with --force (start the server, write its unit)."""
    verb = f"going on to {what} anyway (--force)" if force else f"refusing to {what}"
    echo(f"{verb}: {len(pre.findings)} findings against {loaded.label}")
    for line in findings_text(pre):
        echo(line)
    if not force:
        raise Refused(
            "the command or its environment contradicts the profile",
            hint=f"fix the findings above, or add --force to {what} anyway "
            "(recorded in the manifest)",
        )


def launch(
    profile_path: str,
    command: list[str],
    options: LaunchOptions,
    echo: Echo,
    environ: dict[str, str] | None = None,
) -> int:
    """Start the server as the profile says; return envguard's exit code. The server's
    environment is built from `environ` (default: this process's) and the profile."""
    from envguard.launching.preflight import preflight
    from envguard.profile.loader import load_profile

    loaded = load_profile(profile_path)
    command = resolve_command(loaded, command)
    base = dict(os.environ if environ is None else environ)
    pre = preflight(
        loaded.profile, command, base, clean_env=options.clean_env, skip_gpu=options.skip_gpu
    )
    report_preflight(loaded, pre, echo)
    if pre.findings:
        refuse_or_force(loaded, pre, options.force, echo)
    url = health_url_for(loaded, pre, options.health_url)
    if url is not None:
        check_health_url(url)
    if options.detach:
        name = loaded.profile.name
        pid_file = options.pid_file or Path(f"envguard-{name}.pid")
        log = options.log or Path(f"envguard-{name}.log")
        _writable(log, "log file", "--log")
        return _detached(_Start(loaded, pre, options, pid_file, log, url, echo))
    return _foreground(_Start(loaded, pre, options, options.pid_file, None, url, echo))


def _start_guarded(run: _Start, start: Callable[[], Child]) -> Child:
    """Decide before starting that this server may start: one server per port, whatever
    the pid files (a claim on the port, kept until the server has bound it, covers a model
    that loads for 15 minutes before it binds), and none over a live pid file. Then start
    it and record it in both."""
    port = run.pre.port if run.pre.port is not None else url_port(run.url)
    if port is None and run.pid_file is None:
        return start()  # nothing to claim, nothing to record
    from envguard.launching import pidfile  # hashlib, fcntl: only here

    claim = port_claim(port) if port is not None else None
    with contextlib.ExitStack() as held:  # locks taken in one order by every launch
        if run.pid_file is not None:
            held.enter_context(pidfile.launch_lock(run.pid_file))
            record = pidfile.read(run.pid_file)
            if record is not None:
                _refuse_a_running_server(run, record)
        if claim is not None and port is not None:
            held.enter_context(pidfile.launch_lock(claim))
            refuse_a_claimed_port(claim, port, port_in_use(run.pre.host, port))
        if port is not None and port_in_use(run.pre.host, port):
            raise Refused(
                f"port {port} is already in use",
                hint=f"find the owner with `ss -ltnp 'sport = :{port}'`",
            )
        child = start()
        if claim is not None:
            pidfile.write(claim, child.pid)
        if run.pid_file is not None:
            pidfile.write(run.pid_file, child.pid)
    return child


def _refuse_a_running_server(run: _Start, record: PidRecord) -> None:
    """A pid file from an earlier launch: refuse if its server runs; say what else it is."""
    assert run.pid_file is not None
    from envguard.launching import pidfile

    verdict = pidfile.identify(record)
    if verdict.identity == "ours":
        raise Refused(
            f"{run.pid_file}: the server it names is running (pid {record.pid}: {verdict.command})",
            hint=f"stop it first: envguard stop --pid-file {run.pid_file}",
        )
    if verdict.identity == "unknown":
        raise Refused(
            f"{run.pid_file} names pid {record.pid}, which is running ({verdict.command}), "
            "but records no start time (written by envguard 0.1): envguard cannot tell "
            "whether it is the server it started",
            hint=f"if it is, stop it by hand (kill -TERM -{record.pid}); if not, delete "
            f"{run.pid_file}",
        )
    if verdict.identity == "stranger":
        run.echo(
            f"  {run.pid_file} was stale: pid {record.pid} is now another process "
            f"({verdict.command}); replacing the file, leaving that process alone"
        )


def _detached(run: _Start) -> int:

    assert run.log is not None
    log = run.log
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    header = (
        f"==== {stamp} envguard launch {run.loaded.label} (sha256:{run.loaded.digest[:12]}): "
        f"{shlex.join(redacted(run.pre.command))}"
    )
    child = _start_guarded(
        run, lambda: start_detached(list(run.pre.command), run.pre.built.environ, log, header)
    )
    run.echo(f"  started pid {child.pid} (own session), log {log}, pid file {run.pid_file}")
    return _after_start(run, child, detached=True)


def _foreground(run: _Start) -> int:

    child = _start_guarded(
        run,
        lambda: supervise.start_foreground(
            list(run.pre.command),
            run.pre.built.environ,
            stdout_to_stderr=run.options.server_stdout_to_stderr,
        ),
    )
    restore = supervise.forward_signals(child, run.options.grace)
    try:
        run.echo(f"  started pid {child.pid} in the foreground (signals go to its group)")
        # Health, check and manifest are reported; the exit code is the server's own.
        _after_start(run, child, detached=False)
        return supervise.exit_status(child.wait())
    finally:
        supervise.reap_group(child.pid, run.options.grace)
        restore()
        if run.pid_file is not None:
            run.pid_file.unlink(missing_ok=True)


def _after_start(run: _Start, child: Child, *, detached: bool) -> int:
    """Wait for health, check the live tree, write the manifest; return the exit code.

    A detached start that dies or never gets healthy is a failed launch (exit 1); in the
    foreground the server's own exit code is passed through."""
    echo = run.echo
    if run.url is None:
        echo("  no health URL (--health-url, [server] health_url or a --port flag): not waiting")
        if run.options.nccl_log:
            echo(f"  --nccl-log: not checked; once NCCL has started: envguard check "
                 f"-p {run.loaded.path} --pid {child.pid} --nccl-log {run.log}")  # fmt: skip
        _write_manifest(run, child, None, "not checked", 0)
        return int(ExitCode.OK)
    from envguard.launching.health import log_tail, wait_healthy

    url = redact_value(run.url)  # http://user:password@host/health must not be printed
    result = wait_healthy(
        run.url,
        child.poll,
        run.options.timeout,
        _progress(url, echo),
        answered_by_it=lambda: listener_is_within(run.url or "", child.pid),
    )
    _end_progress()
    health = {
        "url": url,
        "outcome": result.outcome,
        "elapsed_s": round(result.elapsed, 1),
        "last_status": result.last_status,
    }
    if result.outcome == "healthy":
        echo(f"  healthy after {result.elapsed:.0f}s: checking the live process tree")
        nccl_log = run.log if run.options.nccl_log else None
        verdict, count, code = _check(run.loaded, child.pid, echo, run.options.skip_gpu, nccl_log)
        _write_manifest(run, child, health, verdict, count)
        return code
    if result.outcome == "exited":
        echo(
            f"  the server exited with code {result.exit_code} while starting "
            f"({result.elapsed:.0f}s; last health answer: {result.last_status})"
        )
        code = int(ExitCode.DRIFT) if detached else exit_status(child.wait())
        if detached and run.pid_file is not None:
            run.pid_file.unlink(missing_ok=True)
    else:
        stop = f"envguard stop --pid-file {run.pid_file}" if run.pid_file else "Ctrl-C"
        echo(
            f"  not healthy after {result.elapsed:.0f}s (last answer: {result.last_status}); "
            f"still running as pid {child.pid} ({stop})"
        )
        code = int(ExitCode.DRIFT)
    for line in log_tail(str(run.log)) if run.log else []:
        echo(f"  | {line}")
    _write_manifest(run, child, health, result.outcome, 0)
    return code


def _write_manifest(
    run: _Start,
    child: Child,
    health: dict[str, Any] | None,
    verdict: str,
    count: int,
) -> None:
    if run.pid_file is None:
        return
    from envguard.launching import manifest

    document = manifest.build(
        run.loaded,
        run.pre,
        pid=child.pid,
        log=run.log,
        pid_file=run.pid_file,
        forced=run.options.force,
        health=health,
        verdict=verdict,
        findings=count,
    )
    manifest.write(manifest.manifest_path(run.pid_file), document)


def _check(
    loaded: LoadedProfile,
    pid: int,
    echo: Echo,
    skip_gpu: bool = False,
    nccl_log: Path | None = None,
) -> tuple[str, int, int]:
    from envguard.checking import check
    from envguard.render.text import check_text

    try:
        report = check(loaded.path, Target(pid=pid), skip_gpu=skip_gpu, nccl_log=nccl_log)
    except EnvguardError as exc:
        echo(f"  check could not evaluate: {exc.message}")
        return "unverifiable", 0, int(ExitCode.UNVERIFIABLE)
    for line in check_text(report).splitlines():
        echo(f"  {line}" if line else "")
    return report.verdict, len(report.findings), int(report.exit_code)


def _progress(url: str, echo: Echo) -> Callable[[float, str], None]:
    """A line a person can read: rewritten in place on a terminal, every 30 s otherwise."""
    state = {"last": -30.0}
    tty = sys.stderr.isatty()

    def show(elapsed: float, status: str) -> None:
        minutes, seconds = divmod(int(elapsed), 60)
        text = f"  waiting for {url}: {minutes}m{seconds:02d}s, last answer: {status}"
        if tty:
            sys.stderr.write("\r" + text + " " * 8)
            sys.stderr.flush()
        elif elapsed - state["last"] >= 30:
            state["last"] = elapsed
            echo(text)

    return show


def _end_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\n")
