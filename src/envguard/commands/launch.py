"""envguard launch / stop: start a server only with its profile's environment, wait until it
is healthy, verify it, and write down what was started."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envguard.errors import EnvguardError, ExitCode

if TYPE_CHECKING:
    import subprocess

    from envguard.launching.preflight import Preflight
    from envguard.profile.loader import LoadedProfile

Echo = Callable[[str], None]
DEFAULT_TIMEOUT = 30 * 60  # Kimi-K2.5 on 8 GPUs took 15 minutes to load (shared/seeds/)


class Refused(EnvguardError):
    """envguard will not start the server (exit 1)."""

    exit_code = ExitCode.DRIFT


def resolve_command(loaded: LoadedProfile, command: list[str]) -> list[str]:
    if command:
        return command
    if loaded.profile.server.command:
        return list(loaded.profile.server.command)
    raise click.UsageError("no command: give it after `--`, or set [server] command in the profile")


def health_url_for(loaded: LoadedProfile, pre: Preflight, given: str | None) -> str | None:
    if given or loaded.profile.server.health_url:
        return given or loaded.profile.server.health_url
    if pre.port is not None and loaded.profile.server.kind != "generic":
        from envguard.probes.server_info import local_host

        return f"http://{local_host(pre.host)}:{pre.port}/health"
    return None


def port_in_use(host: str | None, port: int) -> bool:
    """Whether binding the server's address would fail (SO_REUSEADDR, as servers bind)."""
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host if host not in (None, "") else "0.0.0.0", port))
        except OSError:
            return True
    return False


def report_preflight(loaded: LoadedProfile, pre: Preflight, echo: Echo) -> None:
    from envguard.knowledge.namespaces import shown
    from envguard.knowledge.servers import SPT_NOENV

    declared = loaded.profile.declared_names() | {SPT_NOENV}
    injected = ", ".join(
        f"{n}={shown(n, v, declared)}" for n, v in sorted(pre.built.injected.items())
    )
    echo(f"envguard launch: {loaded.label}: {shlex.join(_redacted(pre.command))}")
    echo(f"  environment: set {injected or 'nothing'}")
    if pre.built.dropped:
        echo(
            f"  environment: dropped {', '.join(pre.built.dropped)} (forbidden or unlisted in a "
            "strict namespace)"
        )
    if pre.built.neutralised:
        echo(
            f"  environment: set {', '.join(pre.built.neutralised)} empty, so no NCCL config "
            "file can set them (NCCL treats empty as unset)"
        )
    if pre.launch is not None and pre.launch.catalog_note:
        echo(f"  note: {pre.launch.catalog_note}")


def _redacted(command: tuple[str, ...] | list[str]) -> list[str]:
    from envguard.knowledge.namespaces import redact_argv

    return redact_argv(list(command))


def findings_text(pre: Preflight) -> list[str]:
    lines = []
    for f in pre.findings:
        parts = [
            p
            for p in (
                f"expected {f.expected}" if f.expected else "",
                f"found {f.actual}" if f.actual else "",
            )
            if p
        ]
        lines.append(f"  {f.kind:<12} {f.subject}" + (f": {', '.join(parts)}" if parts else ""))
        lines.append(f"               hint: {f.hint}")
    return lines


def launch(
    profile_path: str,
    command: list[str],
    *,
    detach: bool,
    log: Path | None,
    pid_file: Path | None,
    health_url: str | None,
    timeout: float,
    clean_env: bool,
    force: bool,
    echo: Echo,
) -> int:
    """Start the server as the profile says; return envguard's exit code."""
    from envguard.launching.preflight import preflight
    from envguard.profile.loader import load_profile

    loaded = load_profile(profile_path)
    command = resolve_command(loaded, command)
    pre = preflight(loaded.profile, command, dict(os.environ), clean_env=clean_env)
    report_preflight(loaded, pre, echo)
    if pre.findings:
        echo(
            f"{'starting anyway (--force)' if force else 'refusing to start'}: "
            f"{len(pre.findings)} findings against {loaded.label}"
        )
        for line in findings_text(pre):
            echo(line)
        if not force:
            raise Refused(
                "the command or its environment contradicts the profile",
                hint="fix the findings above, or add --force to start anyway (recorded "
                "in the manifest)",
            )
    url = health_url_for(loaded, pre, health_url)
    name = loaded.profile.name
    if detach:
        pid_file = pid_file or Path(f"envguard-{name}.pid")
        log = log or Path(f"envguard-{name}.log")
        return _detached(loaded, pre, pid_file, log, url, timeout, force, echo)
    return _foreground(loaded, pre, pid_file, url, timeout, force, echo)


def _start_guarded(
    pid_file: Path, pre: Preflight, start: Callable[[], subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    """Under the launch lock: refuse a live pid file or a taken port, start, write the pid."""
    from envguard.launching import pidfile

    with pidfile.launch_lock(pid_file):
        existing = pidfile.read_pid(pid_file)
        if existing is not None and pidfile.alive(existing):
            raise Refused(
                f"{pid_file} names a running process ({existing})",
                hint=f"stop it first: envguard stop --pid-file {pid_file}",
            )
        if pre.port is not None and port_in_use(pre.host, pre.port):
            raise Refused(
                f"port {pre.port} is already in use",
                hint=f"find the owner with `ss -ltnp 'sport = :{pre.port}'`",
            )
        child = start()
        pidfile.write_pid(pid_file, child.pid)
    return child


def _detached(
    loaded: LoadedProfile,
    pre: Preflight,
    pid_file: Path,
    log: Path,
    url: str | None,
    timeout: float,
    forced: bool,
    echo: Echo,
) -> int:
    from datetime import UTC, datetime

    from envguard.launching.supervise import start_detached

    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    header = (
        f"==== {stamp} envguard launch {loaded.label} (sha256:{loaded.digest[:12]}): "
        f"{shlex.join(_redacted(pre.command))}"
    )
    child = _start_guarded(
        pid_file, pre, lambda: start_detached(list(pre.command), pre.built.environ, log, header)
    )
    echo(f"  started pid {child.pid} (own session), log {log}, pid file {pid_file}")
    return _after_start(
        loaded, pre, child, pid_file, log, url, timeout, forced, echo, detached=True
    )


def _after_start(
    loaded: LoadedProfile,
    pre: Preflight,
    child: subprocess.Popen[bytes],
    pid_file: Path | None,
    log: Path | None,
    url: str | None,
    timeout: float,
    forced: bool,
    echo: Echo,
    *,
    detached: bool,
) -> int:
    """Wait for health, check the live tree, write the manifest; return the exit code.

    A detached start that dies or never gets healthy is a failed launch (exit 1); in the
    foreground the server's own exit code is passed through."""
    if url is None:
        echo("  no health URL (--health-url, [server] health_url or a --port flag): not waiting")
        _write_manifest(loaded, pre, child, pid_file, log, forced, None, "not checked", 0)
        return int(ExitCode.OK)
    from envguard.launching.health import log_tail, wait_healthy
    from envguard.launching.supervise import exit_status

    result = wait_healthy(url, child.poll, timeout, _progress(url, echo))
    _end_progress()
    health = {
        "url": url,
        "outcome": result.outcome,
        "elapsed_s": round(result.elapsed, 1),
        "last_status": result.last_status,
    }
    if result.outcome == "healthy":
        echo(f"  healthy after {result.elapsed:.0f}s: checking the live process tree")
        verdict, count, code = _check(loaded, child.pid, echo)
        _write_manifest(loaded, pre, child, pid_file, log, forced, health, verdict, count)
        return code
    if result.outcome == "exited":
        echo(
            f"  the server exited with code {result.exit_code} while starting "
            f"({result.elapsed:.0f}s; last health answer: {result.last_status})"
        )
        code = int(ExitCode.DRIFT) if detached else exit_status(child.returncode)
        if detached and pid_file is not None:
            pid_file.unlink(missing_ok=True)
    else:
        stop = f"envguard stop --pid-file {pid_file}" if pid_file else "Ctrl-C"
        echo(
            f"  not healthy after {result.elapsed:.0f}s (last answer: {result.last_status}); "
            f"still running as pid {child.pid} ({stop})"
        )
        code = int(ExitCode.DRIFT)
    for line in log_tail(str(log)) if log else []:
        echo(f"  | {line}")
    _write_manifest(loaded, pre, child, pid_file, log, forced, health, result.outcome, 0)
    return code


def _write_manifest(
    loaded: LoadedProfile,
    pre: Preflight,
    child: subprocess.Popen[bytes],
    pid_file: Path | None,
    log: Path | None,
    forced: bool,
    health: dict[str, Any] | None,
    verdict: str,
    count: int,
) -> None:
    if pid_file is None:
        return
    from envguard.launching import manifest

    document = manifest.build(
        loaded,
        pre,
        pid=child.pid,
        log=log,
        pid_file=pid_file,
        forced=forced,
        health=health,
        verdict=verdict,
        findings=count,
    )
    manifest.write(manifest.manifest_path(pid_file), document)


def _check(loaded: LoadedProfile, pid: int, echo: Echo) -> tuple[str, int, int]:
    from envguard.commands.check import check
    from envguard.probes.target import Target
    from envguard.render.text import check_text

    try:
        report = check(loaded.path, Target(pid=pid))
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
            click.echo("\r" + text + " " * 8, nl=False, err=True)
        elif elapsed - state["last"] >= 30:
            state["last"] = elapsed
            echo(text)

    return show


def _end_progress() -> None:
    if sys.stderr.isatty():
        click.echo("", err=True)


def _foreground(
    loaded: LoadedProfile,
    pre: Preflight,
    pid_file: Path | None,
    url: str | None,
    timeout: float,
    forced: bool,
    echo: Echo,
) -> int:
    from envguard.launching import supervise

    def start() -> subprocess.Popen[bytes]:
        return supervise.start_foreground(list(pre.command), pre.built.environ)

    child = _start_guarded(pid_file, pre, start) if pid_file else start()
    restore = supervise.forward_signals(child)
    try:
        echo(f"  started pid {child.pid} in the foreground (signals are forwarded to its group)")
        # Health, check and manifest are reported; the exit code is the server's own.
        _after_start(loaded, pre, child, pid_file, None, url, timeout, forced, echo, detached=False)
        child.wait()
        return supervise.exit_status(child.returncode)
    finally:
        supervise.reap_group(child.pid)
        restore()
        if pid_file is not None:
            pid_file.unlink(missing_ok=True)


@click.command("launch", context_settings={"ignore_unknown_options": True})
@click.option("-p", "--profile", "profile_path", required=True, metavar="FILE")
@click.option(
    "--detach", is_flag=True, help="Run in the background: own session, log file, pid file."
)
@click.option(
    "--log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Log file (detached; default envguard-NAME.log).",
)
@click.option(
    "--pid-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Pid file (default envguard-NAME.pid when detached); the manifest goes beside it.",
)
@click.option(
    "--health-url",
    help="Poll until it answers 200 (default: [server] health_url, or "
    "/health on the command's --port).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds to wait for health.",
)
@click.option(
    "--clean-env",
    is_flag=True,
    help="Start from an allowlist (PATH, HOME, LANG, ...), "
    "like a systemd service, instead of this shell's environment.",
)
@click.option("--force", is_flag=True, help="Start even when the command contradicts the profile.")
@click.option("--print-systemd", is_flag=True, help="Print an equivalent systemd unit and exit.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def launch_command(
    profile_path: str,
    detach: bool,
    log: Path | None,
    pid_file: Path | None,
    health_url: str | None,
    timeout: float,
    clean_env: bool,
    force: bool,
    print_systemd: bool,
    command: tuple[str, ...],
) -> None:
    """Start a server with its profile's environment - the replacement for `nohup ... &`.

    Injects the profile's values (and SPT_NOENV=1 so workers stay verifiable), refuses a
    command whose flags contradict the profile, waits for health, checks the live process
    tree and writes a launch manifest beside the pid file.

    \b
    envguard launch -p profiles/kimi-k2.5-int4-tp8.toml --detach -- \\
        python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8 ...
    """
    echo: Echo = lambda line: click.echo(line, err=True)  # noqa: E731 - progress on stderr
    if print_systemd:
        from envguard.launching.preflight import preflight
        from envguard.launching.systemd import unit
        from envguard.profile.loader import load_profile

        loaded = load_profile(profile_path)
        argv = resolve_command(loaded, list(command))
        pre = preflight(loaded.profile, argv, {}, clean_env=True)
        click.echo(unit(loaded, pre, Path.cwd()), nl=False)
        return
    code = launch(
        profile_path,
        list(command),
        detach=detach,
        log=log,
        pid_file=pid_file,
        health_url=health_url,
        timeout=timeout,
        clean_env=clean_env,
        force=force,
        echo=echo,
    )
    click.get_current_context().exit(code)


@click.command("stop")
@click.option("--pid-file", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds between SIGTERM and SIGKILL.",
)
def stop_command(pid_file: Path, grace: float) -> None:
    """Stop a launched server: SIGTERM to its process group, SIGKILL after --grace seconds."""
    from envguard.launching import pidfile
    from envguard.launching.supervise import stop_group

    pid = pidfile.read_pid(pid_file)
    if pid is None:
        raise EnvguardError(
            f"{pid_file}: no pid file (or no pid in it)",
            hint="give the --pid-file the server was launched with",
        )
    if not pidfile.alive(pid):
        pid_file.unlink(missing_ok=True)
        click.echo(f"pid {pid} is not running; removed the stale {pid_file}")
        return
    outcome = stop_group(pid, grace)
    pid_file.unlink(missing_ok=True)
    click.echo(f"pid {pid}: {outcome}")
