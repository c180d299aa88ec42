"""How an EnvguardError reaches the user: one line per problem and a hint on stderr, and
with --json also one JSON document on stdout. The same for click's group and for the cron
line's click-free path (`check_argv`)."""

from __future__ import annotations

from collections.abc import Callable

from envguard.errors import EnvguardError, error_json
from envguard.knowledge.redaction import redact_value

Echo = Callable[[str, bool], None]  # (text, to stderr)


def report_failure(exc: EnvguardError, *, as_json: bool, echo: Echo) -> int:
    """Print `exc` and return its exit code."""
    # The last guard for messages that quote a value (a URL, a file's line).
    message, hint = redact_value(exc.message), redact_value(exc.hint)
    for line in message.splitlines():
        echo(f"envguard: {line}", True)
    if hint:
        echo(f"hint: {hint}", True)
    if as_json:
        echo(error_json(message, hint, int(exc.exit_code)), False)
    return int(exc.exit_code)
