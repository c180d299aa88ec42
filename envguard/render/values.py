"""Typed values written the way people write them on a command line."""

from __future__ import annotations

from typing import Any


def render(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return " ".join(render(v) for v in value)
    if isinstance(value, dict):
        import json

        return json.dumps(value)
    return str(value)
