"""`envguard check` without click, for the line cron runs every minute.

click and what it imports (inspect, uuid, platform, datetime) cost ~20 ms of a check that
takes ~100 (docs/speed.md). The common, unambiguous forms of check's options are read here;
anything else (--help, `--opt=value`, a repeated or unknown option, a value that does not
convert or is out of range, no target or two) returns None, and click reads the command
line as always, with its own messages. tests/commands/test_check_argv.py holds both
readings equal over every case either accepts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envguard.errors import EnvguardError
from envguard.files import read_regular

if TYPE_CHECKING:
    from envguard.commands.failure import Echo
    from envguard.probes.gpu import GpuReading
    from envguard.probes.target import Target

# click's declarations in commands/check.py, by option string: (parameter, kind, bounds).
VALUED: dict[str, tuple[str, tuple[int, int] | None]] = {
    "-p": ("profile_path", None),
    "--profile": ("profile_path", None),
    "--pid": ("pid", (1, 2**22)),
    "--port": ("port", (1, 65535)),
    "--match": ("pattern", None),
    "--nccl-log": ("nccl_log", None),
}
SWITCHES = {
    "--all": "every_match",
    "--json": "as_json",
    "-q": "quiet",
    "--quiet": "quiet",
    "--skip-gpu": "skip_gpu",
}
DEFAULTS: dict[str, Any] = {
    "profile_path": None,
    "pid": None,
    "port": None,
    "pattern": None,
    "every_match": False,
    "as_json": False,
    "quiet": False,
    "skip_gpu": False,
    "nccl_log": None,
    "config_root": None,
}


def read_argv(argv: list[str]) -> dict[str, Any] | None:
    """check's parameters as click would pass them, or None where click should decide."""
    values = dict(DEFAULTS)
    seen: set[str] = set()
    tokens = iter(argv)
    for token in tokens:
        if token in SWITCHES:
            name = SWITCHES[token]
            if name in seen:
                return None
            values[name] = True
        elif token in VALUED:
            name, bounds = VALUED[token]
            value = next(tokens, None)
            if name in seen or value is None or not value or value.startswith("-"):
                return None
            if bounds is not None:
                if not (value.isascii() and value.isdigit()):
                    return None
                number = int(value)
                if not bounds[0] <= number <= bounds[1]:
                    return None
                values[name] = number
            else:
                values[name] = value
        else:
            return None
        seen.add(name)
    given = [values[name] for name in ("pid", "port", "pattern") if values[name] is not None]
    if values["profile_path"] is None or len(given) != 1:
        return None
    return values


def run_check(
    profile_path: str,
    target: Target,
    *,
    every_match: bool,
    as_json: bool,
    quiet: bool,
    skip_gpu: bool,
    nccl_log: str | None,
    config_root: Path | None,
    echo: Echo,
    early: GpuReading | None = None,
) -> int:
    """The check command's body, for both readings of its command line. `early`: NVML
    already started for this profile (early_gpu_reading); the engine starts it otherwise."""
    from envguard.profile.loader import load_profile

    try:
        loaded = load_profile(profile_path)
    except BaseException:
        if early is not None:
            early.close()
        raise
    if early is not None:
        from envguard.evaluation.gpu import facts_needed

        if loaded.profile.gpu.is_empty() or not facts_needed(loaded.profile.gpu) <= early.wanted:
            # Nothing to check after all, or a base asks for more than the file's keys said.
            early.close()
            early = None
    from envguard.checking import check  # it starts NVML itself where nothing did yet

    report = check(
        loaded,
        target,
        every_match=every_match,
        config_root=config_root,
        skip_gpu=skip_gpu,
        nccl_log=nccl_log,
        gpu_reading=early,
    )
    if as_json:
        from envguard.render.json import check_json

        echo(check_json(report), False)
    else:
        from envguard.render.text import check_text

        echo(check_text(report, quiet=quiet), False)
    return int(report.exit_code)


_GPU_TABLE = re.compile(rb"^[ \t]*\[[ \t]*gpu[ \t]*\][ \t]*(?:#.*)?$", re.MULTILINE)
_NEXT_TABLE = re.compile(rb"^[ \t]*\[", re.MULTILINE)
_KEY = re.compile(rb"^[ \t]*([A-Za-z0-9_-]+)[ \t]*=", re.MULTILINE)


def early_gpu_reading(profile_path: str) -> GpuReading | None:
    """NVML started when the profile file names a [gpu] table, for the facts its keys ask,
    so that its start-up (~55 ms on an H200 host) runs beside everything after: loading the
    profile and importing the check engine included;
    None otherwise, or when the file cannot be read here (a profile name, a [gpu] only in a
    base: then NVML starts once the profile is loaded). The keys are a hint read without a
    TOML parser: run_check starts NVML again if the loaded profile (its bases included)
    asks for a fact the hint left out."""
    try:
        text = read_regular(profile_path)
    except OSError:
        return None
    table = _GPU_TABLE.search(text)
    if table is None:
        return None
    from envguard.probes.gpu import GpuReading, facts_for

    end = _NEXT_TABLE.search(text, table.end())
    body = text[table.end() : end.start() if end else len(text)]
    return GpuReading(wanted=facts_for({key.decode() for key in _KEY.findall(body)}))


def main(argv: list[str]) -> int | None:
    """Run `envguard check ARGV` if it is read here; None: leave it to click."""
    values = read_argv(argv)
    if values is None:
        return None
    # Before anything else is imported: NVML's start-up then runs beside all of it.
    early = None if values["skip_gpu"] else early_gpu_reading(values["profile_path"])
    from envguard.probes.target import Target

    target = Target(values.pop("pid"), values.pop("port"), values.pop("pattern"))
    try:
        return run_check(values.pop("profile_path"), target, **values, echo=_echo, early=early)
    except EnvguardError as exc:
        from envguard.commands.failure import report_failure

        return report_failure(exc, as_json=values["as_json"], echo=_echo)


def _echo(text: str, err: bool) -> None:
    """click.echo's behaviour here: a line, colour only where wanted, flushed."""
    from envguard.render.style import strip, wants_colour

    stream = sys.stderr if err else sys.stdout
    stream.write((text if wants_colour(stream) else strip(text)) + "\n")
    stream.flush()
