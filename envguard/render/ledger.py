"""Ledger records and comparisons for people and for JSON."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from envguard.evaluation.record import Record

if TYPE_CHECKING:
    from envguard.evaluation.results import Comparison


def record_dict(record: Record) -> dict[str, Any]:
    """A record as JSON-able data; a NaN or infinite metric (stored by envguard 0.1) is null,
    since JSON cannot write it."""
    data = dataclasses.asdict(record)
    data["metrics"] = {k: v if math.isfinite(v) else None for k, v in record.metrics.items()}
    return data


def short_fingerprint(fingerprint: str | None) -> str:
    return (fingerprint or "-").removeprefix("sha256:")[:12]


def metrics_text(metrics: dict[str, float], most: int = 3) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in list(metrics.items())[:most])


def comparison_text(result: Comparison) -> list[str]:
    # Imported here: `ledger list` needs neither argparse (converters) nor the comparison.
    from envguard.evaluation.results import MISSING
    from envguard.flags.converters import as_text

    a, b = result.before, result.after
    lines = [
        f"compare #{a.id} ({a.label}, {short_fingerprint(a.fingerprint)}) -> #{b.id} ({b.label}, "
        f"{short_fingerprint(b.fingerprint)})"
    ]
    if not result.differences:
        lines.append("  setup: identical" if a.fingerprint == b.fingerprint else "  setup: -")
    for d in result.differences:
        old = d.before if d.before == MISSING else as_text(d.before)
        new = d.after if d.after == MISSING else as_text(d.after)
        lines.append(f"  setup: {d.name}: {old} -> {new}{'  (varied)' if d.varied else ''}")
    lines.append("  metrics:")
    width = max((len(m.name) for m in result.metrics), default=0)
    for m in result.metrics:
        if m.delta is None:
            old = "absent" if m.before is None else f"{m.before:g}"
            new = "absent" if m.after is None else f"{m.after:g}"
            lines.append(f"    {m.name:<{width}}  {old} -> {new}")
            continue
        percent = f" ({m.percent:+.1f}%)" if m.percent is not None else ""
        lines.append(f"    {m.name:<{width}}  {m.before:g} -> {m.after:g}  {m.delta:+g}{percent}")
    return lines
