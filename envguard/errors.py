"""The one exception family and the published exit codes.

Every user-facing failure is an `EnvguardError`; the CLI turns it into one line
(what, where), a hint (how to fix it) and its exit code. See README "Exit codes".
"""

from __future__ import annotations

import json
from enum import IntEnum

from envguard import __version__


class ExitCode(IntEnum):
    OK = 0
    DRIFT = 1  # drift found, or a benchmark refused
    USAGE = 2  # click's own code for a bad command line
    UNVERIFIABLE = 3  # could not evaluate: bad profile, no process, permission, unreadable


class EnvguardError(Exception):
    """A failure that is the user's to fix, told in one line plus a hint."""

    exit_code: ExitCode = ExitCode.UNVERIFIABLE

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(EnvguardError):
    """The command line asks for something impossible (exit 2, like click's own)."""

    exit_code = ExitCode.USAGE


class Refused(EnvguardError):
    """envguard will not do it: start a server that contradicts its profile, benchmark a
    drifted server, signal a process it did not start (exit 1, as drift is)."""

    exit_code = ExitCode.DRIFT


class ProfileError(EnvguardError):
    """A profile that cannot be read, parsed or validated."""


class TargetError(EnvguardError):
    """The process to check cannot be found, chosen or read."""


class AccessDenied(TargetError):
    """The process belongs to another user and /proc refuses to show it."""


# ctx.meta key set by a command run with --json: its errors are JSON documents too.
JSON_OUTPUT = "envguard.json"


def error_json(message: str, hint: str, exit_code: int) -> str:
    """An error as the one JSON document a --json command prints."""
    return json.dumps(
        {"envguard": __version__, "error": message, "hint": hint, "exit_code": exit_code},
        indent=2,
    )
