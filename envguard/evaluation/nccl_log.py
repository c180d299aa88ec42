"""Evaluate what NCCL's own log says it read, against the profile and against what envguard
predicted from the environment and NCCL config files of the same processes.

A difference from the profile is drift (kind `nccl-log`). A difference from envguard's own
prediction means envguard's reading cannot be trusted for that process (an environment
plugin answered NCCL, or envguard is wrong): `unverifiable`, and said so.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from envguard.evaluation.findings import Draft, Finding, placed
from envguard.evaluation.rules import accepts, describe
from envguard.knowledge import nccl
from envguard.probes.nccl_log import LoggedProcess, NcclLog
from envguard.probes.observe import ProcessObservation
from envguard.profile.schema import Profile

HOW_TO_LOG = "run the server with NCCL_DEBUG=INFO (and ENV in NCCL_DEBUG_SUBSYS, as by default)"


def evaluate_nccl_log(
    profile: Profile,
    log: NcclLog,
    processes: Sequence[ProcessObservation] = (),
    own_pids: dict[int, int] | None = None,
) -> list[Finding]:
    """Findings from `log`. `processes`: the checked tree, and `own_pids` each one's pid as
    it sees itself (what NCCL logs); given, only the log's processes of that tree count."""
    source = f"{log.path} (NCCL's log)"
    if not log.processes or not log.env_lines:
        return placed([_no_lines(log, source)], None, None)
    by_own_pid = {(own_pids or {}).get(p.process.pid, p.process.pid): p for p in processes}
    logged = list(log.processes)
    if processes:
        logged = [p for p in log.processes if p.pid in by_own_pid]
        if not logged:
            pids = ", ".join(str(p.pid) for p in log.processes[:8])
            return placed([_other_processes(pids, source)], None, None)
    findings: list[Finding] = []
    for entry in logged:
        observed = by_own_pid.get(entry.pid)
        drafts = list(_against_profile(profile, entry, source))
        if observed is not None:
            drafts += _against_prediction(entry, observed, source)
        pid = observed.process.pid if observed else None
        role = observed.process.role if observed else entry.label
        findings += placed(drafts, pid, role)
    return findings


def _against_profile(profile: Profile, entry: LoggedProcess, source: str) -> Iterator[Draft]:
    env = profile.env
    for name, rule in env.required.items():
        if not nccl.is_nccl_name(name) or name in nccl.NOT_LOGGED:
            continue
        value = entry.settings.get(name)
        if value is None:
            if name in nccl.LOGGED_WHEN_TUNING and entry.largest_communicator < 2:
                continue  # never logged by a single-rank communicator
            yield Draft(
                kind="nccl-log",
                subject=name,
                expected=describe(rule),
                actual=f"never reported by NCCL in {entry.label}",
                source=source,
                hint="NCCL did not read it: a misspelled name, a value set after NCCL "
                "started, or a path this run never took (NCCL reads some variables only "
                "where it uses them)",
            )
        elif not accepts(name, rule, value):
            yield _differs(name, describe(rule), value, entry, source)
    for name, rule in env.optional.items():
        value = entry.settings.get(name)
        if value is not None and not accepts(name, rule, value):
            yield _differs(name, describe(rule), value, entry, source)
    for name in env.forbidden:
        if name in entry.settings:
            yield _differs(name, "not set", entry.settings[name], entry, source)


def _differs(name: str, expected: str, value: str, entry: LoggedProcess, source: str) -> Draft:
    return Draft(
        kind="nccl-log",
        subject=name,
        expected=expected,
        actual=f"{value} (NCCL used it in {entry.label})",
        source=source,
        hint="this is what NCCL itself used: fix the launch environment or NCCL config files",
    )


def _against_prediction(
    entry: LoggedProcess, observed: ProcessObservation, source: str
) -> Iterator[Draft]:
    if observed.effective is None:
        return  # the environment could not be read: already reported as unverifiable
    for name, value in entry.settings.items():
        predicted = observed.effective.get(name)
        if predicted is not None and nccl.same_setting(name, predicted.value, value):
            continue
        seen = f"{predicted.value!r} ({predicted.source})" if predicted else "nothing"
        yield Draft(
            kind="unverifiable",
            subject=name,
            expected=f"{value} (what NCCL used)",
            actual=f"envguard read {seen}",
            source=source,
            hint="NCCL did not read what envguard sees in this process: an environment "
            "plugin answered NCCL, or envguard misread it (please report it)",
        )


def _no_lines(log: NcclLog, source: str) -> Draft:
    what = "no NCCL INFO lines" if not log.processes else "no 'set by environment' lines"
    return Draft(
        kind="unverifiable",
        subject="NCCL log",
        expected="NCCL's ENV lines",
        actual=what,
        source=source,
        hint=HOW_TO_LOG,
    )


def _other_processes(pids: str, source: str) -> Draft:
    return Draft(
        kind="unverifiable",
        subject="NCCL log",
        expected="lines of the checked server's processes",
        actual=f"lines of other processes only (pids {pids})",
        source=source,
        hint="the log is of an earlier run, or of another server: give this run's log",
    )
