"""Prometheus text exposition (format 0.0.4) for node_exporter's textfile collector."""

from __future__ import annotations

from collections.abc import Iterable


def label_value(value: str) -> str:
    """Escape a label value as the exposition format requires: backslash, quote, newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{label_value(v)}"' for k, v in pairs) + "}"


def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> str:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{label_text} {value:g}" for label_text, value in samples]
    return "\n".join(lines) + "\n"
