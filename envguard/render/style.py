"""Terminal styling without click: ANSI SGR codes, and their removal where colour is off.

`envguard check` from cron must not import click (~20 ms with what it pulls in) only to
colour a verdict; the codes are the ones click.style emits, so click.echo strips them the
same way on the other commands' paths."""

from __future__ import annotations

import os
import re
from typing import TextIO

_COLOURS = {"red": 31, "green": 32, "yellow": 33}
_RESET = "\x1b[0m"
# click's own pattern for what it strips (click/_compat.py, _ansi_re).
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def style(text: str, fg: str | None = None, *, bold: bool = False) -> str:
    codes = ([f"\x1b[{_COLOURS[fg]}m"] if fg else []) + (["\x1b[1m"] if bold else [])
    return "".join(codes) + text + _RESET if codes else text


def wants_colour(stream: TextIO) -> bool:
    """https://no-color.org: any non-empty NO_COLOR turns colour off; otherwise colour only
    on a terminal (as click decides it)."""
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def strip(text: str) -> str:
    return _ANSI.sub("", text)
