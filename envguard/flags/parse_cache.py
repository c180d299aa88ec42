"""Parsed launch lines, cached: an unchanged command line against an unchanged catalog is
not parsed again.

A parse rebuilds the server's own parser from its catalog (532 options for SGLang 0.5.23):
~10 ms, and ~5 ms more to import argparse and what it imports, on every `envguard check`
from cron, for a launch line that has not changed since the server started. An entry's name
is a SHA-256 over everything the parse depends on: the command line, the catalog (server,
version, and its file's stamp), envguard's version and the stamps of its parsing modules. A
--config file the parse read is read again, as the server would read it now, and compared
by digest before the entry is used.

An entry holds no secret. The value of a secret option (`--api-key`) or a value that looks
secret (a string, or each string of a list) is stored as the position of the argument it
came from, and taken from the command line again on use; a parse with a secret anywhere
else (in a --config file, inside a JSON value) is not cached.
Only parses the server accepts are cached, and only when every value comes back from JSON
exactly as it went in (no tuples, no NaN).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envguard import __version__
from envguard.cachedir import cache_dir, file_stamp, prune, read_entry, write_entry
from envguard.files import read_regular
from envguard.flags.catalog import Catalog, path_of
from envguard.flags.parsed import FlagValue, ParsedCommandLine
from envguard.knowledge.redaction import is_secret_option, redact_value

if TYPE_CHECKING:
    from envguard.flags.preprocess import FileReader

FORMAT = 1  # of an entry; bump when its layout changes
KEEP = 64  # entries kept: one per server command line checked lately
MAX_ENTRY = 1 << 20  # an entry is ~40 KB (every destination of the catalog)
HERE = Path(__file__).resolve().parent
# What a parse depends on besides its inputs: a changed one (a development checkout)
# must not be answered from an entry written by the old code.
PARSING_CODE = ("parser.py", "preprocess.py", "converters.py", "catalog.py", "parse_cache.py")


def parse(
    catalog: Catalog,
    argv: list[str],
    read_file: FileReader | None = None,
    *,
    subcommand: bool = True,
) -> ParsedCommandLine:
    """flags.preprocess.parse, answered from the cache where the same parse was done."""
    directory = cache_dir("launch-lines")
    reader = read_file or _read_default
    key = _key(catalog, argv, subcommand) if directory else ""
    entry = directory / f"{key}.json" if directory else None
    if entry is not None:
        cached = _load(entry, key, catalog, argv, reader)
        if cached is not None:
            return cached
    from envguard.flags import preprocess  # argparse and the parser: only on a miss

    read: list[tuple[str, str]] = []

    def recording(path: str) -> str:
        text = reader(path)
        read.append((path, _digest(text)))
        return text

    parsed = preprocess.parse(catalog, argv, recording, subcommand=subcommand)
    if entry is not None:
        document = _document(key, parsed, argv, read)
        if document is not None and write_entry(entry, json.dumps(document)):
            prune(entry.parent, KEEP)
    return parsed


def _read_default(path: str) -> str:
    return read_regular(path).decode()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _key(catalog: Catalog, argv: list[str], subcommand: bool) -> str:
    material = [
        FORMAT,
        __version__,
        [file_stamp(HERE / name) for name in PARSING_CODE],
        catalog.server,
        catalog.version,
        file_stamp(path_of(catalog.server, catalog.version)),
        subcommand,
        argv,
    ]
    return _digest(json.dumps(material))


def _load(
    entry: Path, key: str, catalog: Catalog, argv: list[str], reader: FileReader
) -> ParsedCommandLine | None:
    data = read_entry(entry, MAX_ENTRY)
    if data is None:
        return None
    try:
        document = json.loads(data)
        if document["key"] != key:
            return None
        for path, digest in document["files"]:
            try:
                if _digest(reader(path)) != digest:
                    return None
            except OSError:
                return None
        values = {
            dest: FlagValue(dest, value, spelling, origin, option)
            for dest, (value, spelling, origin, option) in document["values"].items()
        }
        if values.keys() != catalog.by_dest.keys():
            return None
        for dest, (many, places) in document["secrets"].items():
            found = [argv[index][start:] for index, start in places]
            values[dest] = values[dest]._replace(value=found if many else found[0])
        return ParsedCommandLine(
            catalog, values, None, tuple(document["notes"]), document["config_file"]
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # partial, stale or foreign: just a miss


def _document(
    key: str, parsed: ParsedCommandLine, argv: list[str], read: list[tuple[str, str]]
) -> dict[str, Any] | None:
    """What an entry holds, or None where the parse must not be cached."""
    texts = [*parsed.notes, parsed.config_file or ""]
    if parsed.error is not None or any(redact_value(text) != text for text in texts):
        return None
    values: dict[str, list[Any]] = {}
    secrets: dict[str, tuple[bool, list[tuple[int, int]]]] = {}
    for dest, flag in parsed.values.items():
        value = flag.value
        if not _exact(value):
            return None
        if _secret(dest, value):
            # A string, or a list of them (vLLM's --api-key takes several).
            many = isinstance(value, list)
            places = [_position(item, argv) for item in (value if many else [value])]
            if not places or None in places:
                return None
            secrets[dest] = (many, [place for place in places if place is not None])
            value = None
        values[dest] = [value, flag.spelling, flag.origin, flag.option]
    return {
        "key": key,
        "files": read,
        "values": values,
        "secrets": secrets,
        "notes": list(parsed.notes),
        "config_file": parsed.config_file,
    }


def _exact(value: Any) -> bool:
    """Whether `value` comes back from JSON as it is (same types, same value)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_exact(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _exact(v) for k, v in value.items())
    return False


def _secret(dest: str, value: Any) -> bool:
    if is_secret_option(dest) and value not in (None, "", [], False):
        return True
    if isinstance(value, str):
        return redact_value(value) != value
    if isinstance(value, list):
        return any(_secret("", item) for item in value)
    if isinstance(value, dict):
        return any(_secret("", item) for item in (*value, *value.values()))
    return False


def _position(value: Any, argv: list[str]) -> tuple[int, int] | None:
    """Where a secret string stands in argv: (argument, offset), as in `--api-key VALUE`
    or `--api-key=VALUE`; None if it is not there (a --config file, or not a string)."""
    if not isinstance(value, str) or not value:
        return None
    for index, argument in enumerate(argv):
        if argument == value:
            return index, 0
        if argument.endswith("=" + value) and argument.startswith("-"):
            return index, len(argument) - len(value)
    return None
