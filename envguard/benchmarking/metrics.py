"""Metrics from a benchmark command's output: its last JSON object on stdout, and/or
`--metric NAME=REGEX` (the last match of the regex's first group)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from envguard.errors import UsageError


def parse_metric_options(options: tuple[str, ...] | list[str]) -> list[tuple[str, re.Pattern[str]]]:
    parsed = []
    for option in options:
        name, sep, pattern = option.partition("=")
        if not sep or not name:
            raise UsageError(
                f"--metric {option!r}: expected NAME=REGEX",
                hint="e.g. --metric 'tok_s=Overall tok/s: ([0-9.]+)'",
            )
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise UsageError(
                f"--metric {name}: not a valid regular expression: {exc}",
                hint="quote it for the shell",
            ) from None
        if regex.groups < 1:
            raise UsageError(
                f"--metric {name}: the regex needs a group around the number",
                hint=f"e.g. --metric '{name}=: ([0-9.]+)'",
            )
        parsed.append((name, regex))
    return parsed


def _numbers(value: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a JSON value, nested keys joined with dots."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, int | float):
        return {prefix: float(value)} if prefix else {}  # non-finite ones: see `unusable`
    if isinstance(value, dict):
        found: dict[str, float] = {}
        for key, item in value.items():
            found.update(_numbers(item, f"{prefix}.{key}" if prefix else str(key)))
        return found
    return {}


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last line (or trailing block) of `text` that parses as a JSON object."""
    lines = text.splitlines()
    for end in range(len(lines), 0, -1):
        line = lines[end - 1].strip()
        if not line.endswith("}"):
            continue
        for start in range(end - 1, -1, -1):  # a pretty-printed object spans lines
            if lines[start].lstrip().startswith("{"):
                try:
                    value = json.loads("\n".join(lines[start:end]))
                except ValueError:
                    continue
                if isinstance(value, dict):
                    return value
    return None


def extract(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> dict[str, float]:
    metrics: dict[str, float] = {}
    document = last_json_object(text)
    if document is not None:
        metrics.update(_numbers(document))
    for name, regex in patterns:
        matches = regex.findall(text)
        if matches:
            last = matches[-1]
            value = last[0] if isinstance(last, tuple) else last
            try:
                metrics[name] = float(value)
            except ValueError:
                continue
    return metrics


def unusable(metrics: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """The finite metrics, and a reason for each NaN or infinite one: such a number is not a
    result (and JSON has no way to write it)."""
    finite = {k: v for k, v in metrics.items() if math.isfinite(v)}
    reasons = [
        f"metric {k} is {v} (not a finite number)" for k, v in metrics.items() if k not in finite
    ]
    return finite, reasons
