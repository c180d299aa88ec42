"""How a command line was read, as JSON-able data (`envguard args --json`)."""

from __future__ import annotations

from typing import Any

from envguard.flags.parsed import ParsedCommandLine


def args_dict(parsed: ParsedCommandLine, *, every: bool) -> dict[str, Any]:
    from envguard.evaluation.flags import value_for_display

    shown = parsed.values if every else parsed.non_default()
    return {
        "ok": parsed.ok,
        "error": parsed.error,
        "values": {d: value_for_display(d, f.value) for d, f in shown.items()},
        "server": parsed.catalog.server,
        "catalog": parsed.catalog.version,
        "spellings": {d: f.spelling for d, f in shown.items() if f.spelling},
        "sources": {d: f.origin for d, f in shown.items()},
        "notes": list(parsed.notes),
    }
