"""A server command line as the server parsed it: each destination's value, how it was
spelled, and where it came from. Apart from the parser (flags/parser.py), so that a parse
read back from the cache (flags/parse_cache.py) needs no argparse."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from envguard.flags.catalog import Catalog

Origin = Literal["cmdline", "config", "default"]


class FlagValue(NamedTuple):
    dest: str
    value: Any
    spelling: str | None  # the option as typed, e.g. "--tp" (None: not given)
    origin: Origin
    option: str | None = None  # the option it resolved to, e.g. "--tp-size"

    @property
    def given(self) -> bool:
        return self.origin != "default"


class ParsedCommandLine(NamedTuple):
    catalog: Catalog
    values: dict[str, FlagValue]  # every destination of the catalog
    error: str | None = None
    notes: tuple[str, ...] = ()  # things the server silently does with this command line
    config_file: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def non_default(self) -> dict[str, FlagValue]:
        return {d: v for d, v in self.values.items() if v.given}
