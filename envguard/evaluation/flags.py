"""Evaluate a server's launch (flags parsed as the server parses them) against a profile."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envguard.evaluation.findings import Draft, Finding, placed
from envguard.flags.converters import as_text
from envguard.flags.parsed import FlagValue
from envguard.knowledge.redaction import REDACTED, holds_secret, is_secret_option, redact_value
from envguard.probes.launch_line import LaunchObservation
from envguard.profile.flag_rules import Expectation, FlagSpecError, expectation, resolve
from envguard.profile.schema import ServerSection


def evaluate_flags(server: ServerSection, observed: LaunchObservation, role: str) -> list[Finding]:
    return placed(_drafts(server, observed), observed.pid, role)


def _drafts(server: ServerSection, observed: LaunchObservation) -> Iterator[Draft]:
    launch, parsed, catalog = observed.launch, observed.parsed, observed.catalog
    if launch is None or parsed is None or catalog is None:
        yield Draft(
            kind="unverifiable",
            subject="command line",
            expected=f"a {server.kind} launch",
            actual="not recognised",
            source=f"/proc/{observed.pid}/cmdline" if observed.pid else "the command",
            hint="target the server's launcher (python -m sglang.launch_server, sglang serve, "
            "vllm serve, python -m vllm.entrypoints.openai.api_server)",
        )
        return
    if launch.server != server.kind:
        yield Draft(
            kind="mismatch",
            subject="server kind",
            expected=server.kind,
            actual=launch.server,
            source=launch.program,
            hint="the profile describes another server; check the profile or the target",
        )
        return
    if parsed.error is not None:
        yield Draft(
            kind="rejected",
            subject="command line",
            expected=None,
            actual=parsed.error,
            source=f"{catalog.label} parser",
            hint=f"{catalog.label} refuses this command line, so a server of that version would "
            "not have started with it; if the server runs another version, set [server] "
            "version in the profile",
        )
        return
    for note in parsed.notes:
        yield Draft(
            kind="misread",
            subject="--config",
            expected=None,
            actual=None,
            source="cmdline",
            hint=note,
        )
    for key, spec in server.flags.items():
        try:
            expected = expectation(catalog, key, spec)
        except FlagSpecError as exc:
            yield Draft(
                kind="unverifiable",
                subject=key,
                expected=None,
                actual=None,
                source=catalog.label,
                hint=f"{exc}; update the profile for this server version",
            )
            continue
        yield from _flag_drafts(expected, parsed.values[expected.option.dest], observed)
    for key in server.forbidden_flags:
        try:
            option = resolve(catalog, key)
        except FlagSpecError as exc:
            yield Draft(
                kind="unverifiable",
                subject=key,
                expected=None,
                actual=None,
                source=catalog.label,
                hint=str(exc),
            )
            continue
        flag = parsed.values[option.dest]
        if flag.given:
            yield Draft(
                kind="forbidden",
                subject=option.long_name,
                expected="not given",
                actual=_actual(flag),
                source=_source(flag, parsed.config_file),
                hint=f"remove {flag.spelling} from the launch command",
            )


def _flag_drafts(
    expected: Expectation, flag: FlagValue, observed: LaunchObservation
) -> Iterator[Draft]:
    option = expected.option
    name = option.long_name
    info = observed.server_info or {}
    config_file = observed.parsed.config_file if observed.parsed else None
    want = _secret(option.dest, expected.describe())
    if flag.given and not expected.accepts(flag.value):
        yield Draft(
            kind="mismatch",
            subject=name,
            expected=want,
            actual=_actual(flag),
            source=_source(flag, config_file),
            hint=f"launch with {name} {want}",
        )
        return
    if not flag.given and not expected.accepts(flag.value):
        if option.dest in info and expected.accepts(info[option.dest]):
            return  # the server resolved it to the expected value itself
        yield Draft(
            kind="missing",
            subject=name,
            expected=want,
            actual=f"not given (default {_secret(option.dest, as_text(flag.value))})",
            source="default",
            hint=f"add {name} {want} to the launch command",
        )
        return
    if option.dest in info and not expected.accepts(info[option.dest]):
        yield Draft(
            kind="mismatch",
            subject=name,
            expected=want,
            actual=_secret(option.dest, as_text(info[option.dest])),
            source="/server_info",
            hint="the server resolved this flag to another value than its "
            "command line says; check its log for the adjustment",
        )


def _secret(dest: str, text: str) -> str:
    return REDACTED if is_secret_option(dest) else redact_value(text)


def _actual(flag: FlagValue) -> str:
    value = _secret(flag.dest, as_text(flag.value))
    return f"{value} (as {flag.spelling})" if flag.spelling else value


def _source(flag: FlagValue, config_file: str | None) -> str:
    if flag.origin == "config":
        return f"--config {config_file}"
    return flag.origin


def value_for_display(dest: str, value: Any) -> Any:
    """A parsed value safe to print or store: secrets redacted, JSON-able."""
    if is_secret_option(dest) and holds_secret(dest, value):
        return REDACTED
    if isinstance(value, str):
        return redact_value(value)
    if isinstance(value, list):
        return [value_for_display("", v) for v in value]
    return value
