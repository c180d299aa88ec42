"""Parsed launch lines, cached: an unchanged command line against an unchanged catalog is
not parsed again.

A parse rebuilds the server's own parser from its catalog (532 options for SGLang 0.5.23):
~10 ms, and ~5 ms more to import argparse and what it imports, on every `envguard check`
from cron, for a launch line that has not changed since the server started. An entry holds
everything the parse depended on, and is used only if all of it is the same now: envguard's
version and the stamps of its parsing modules, the catalog (server, version, its file's
stamp), the command line, and each --config file the parse read (read again, as the server
would read it now, and compared by SHA-256).

An entry holds no secret. The value of a secret option (`--api-key`) or a value that looks
secret (a string, or each string of a list) is stored as its place on the command line,
and the command line itself with those places redacted; on use, the values are taken from
the command line again, after a SHA-256 of them matched. A parse is not cached where a
secret is anywhere else (in a --config file, inside a JSON value, changed by a converter),
nor where the server refuses the line, nor where a value would not come back from JSON as
it went in (a tuple, NaN).
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envguard import __version__
from envguard.cachedir import cache_dir, file_stamp, prune, read_entry, write_entry
from envguard.files import read_text
from envguard.flags.catalog import Catalog, path_of
from envguard.flags.parsed import FlagValue, ParsedCommandLine
from envguard.knowledge.redaction import REDACTED, holds_secret, redact_argv, redact_value

if TYPE_CHECKING:
    from envguard.flags.preprocess import FileReader

FORMAT = 2  # of an entry; bump when its layout changes
KEEP = 64  # entries kept: one per server command line checked lately
MAX_ENTRY = 1 << 20  # an entry is ~40 KB (every destination of the catalog)
HERE = Path(__file__).resolve().parent
# What a parse depends on besides its inputs: a changed one (a development checkout)
# must not be answered from an entry written by the old code.
PARSING_CODE = ("parser.py", "preprocess.py", "converters.py", "catalog.py", "parse_cache.py")

Place = tuple[int, int]  # a secret's argument on the command line, and its offset in it


def parse(
    catalog: Catalog,
    argv: list[str],
    read_file: FileReader | None = None,
    *,
    subcommand: bool = True,
) -> ParsedCommandLine:
    """flags.preprocess.parse, answered from the cache where the same parse was done."""
    from_cache = cache_dir("launch-lines")
    if from_cache is None:
        from envguard.flags import preprocess

        return preprocess.parse(catalog, argv, read_file, subcommand=subcommand)
    reader = read_file or read_text
    setup = _setup(catalog, subcommand)
    # The name only spreads entries out: what an entry holds decides whether it is used.
    name = zlib.crc32(json.dumps([setup, argv]).encode()).to_bytes(4, "big").hex()
    entry = from_cache / f"{name}.json"
    cached = _load(entry, setup, catalog, argv, reader)
    if cached is not None:
        return cached
    from envguard.flags import preprocess  # argparse and the parser: only on a miss

    read: list[tuple[str, str]] = []

    def recording(path: str) -> str:
        text = reader(path)
        read.append((path, _digest(text)))
        return text

    parsed = preprocess.parse(catalog, argv, recording, subcommand=subcommand)
    document = _document(setup, parsed, argv, read)
    if document is not None and write_entry(entry, json.dumps(document)):
        prune(from_cache, KEEP)
    return parsed


def _digest(text: str) -> str:
    import hashlib  # ~3 ms: only for a --config file or a secret on the command line

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _setup(catalog: Catalog, subcommand: bool) -> list[Any]:
    return [
        FORMAT,
        __version__,
        [file_stamp(HERE / name) for name in PARSING_CODE],
        catalog.server,
        catalog.version,
        file_stamp(path_of(catalog.server, catalog.version)),
        subcommand,
    ]


def _masked(argv: list[str], places: list[Place]) -> list[str] | None:
    """argv with each secret place redacted; None if a place is not in it."""
    masked = list(argv)
    for index, start in places:
        if not 0 <= index < len(argv) or len(argv[index]) <= start:
            return None
        masked[index] = argv[index][:start] + REDACTED
    return masked


def _secret_text(argv: list[str], places: list[Place]) -> str:
    return "\0".join(argv[index][start:] for index, start in places)


def _load(
    entry: Path, setup: list[Any], catalog: Catalog, argv: list[str], reader: FileReader
) -> ParsedCommandLine | None:
    data = read_entry(entry, MAX_ENTRY)
    if data is None:
        return None
    try:
        document = json.loads(data)
        secrets = document["secrets"]
        places = [(index, start) for _, found in secrets.values() for index, start in found]
        if document["setup"] != setup or document["argv"] != _masked(argv, places):
            return None
        if places and _digest(_secret_text(argv, places)) != document["secret_digest"]:
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
        for dest, (many, found) in secrets.items():
            texts = [argv[index][start:] for index, start in found]
            values[dest] = values[dest]._replace(value=texts if many else texts[0])
        return ParsedCommandLine(
            catalog, values, None, tuple(document["notes"]), document["config_file"]
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # partial, stale or foreign: just a miss


def _document(
    setup: list[Any], parsed: ParsedCommandLine, argv: list[str], read: list[tuple[str, str]]
) -> dict[str, Any] | None:
    """What an entry holds, or None where the parse must not be cached."""
    texts = [*parsed.notes, parsed.config_file or ""]
    if parsed.error is not None or any(redact_value(text) != text for text in texts):
        return None
    values: dict[str, list[Any]] = {}
    secrets: dict[str, tuple[bool, list[Place]]] = {}
    for dest, flag in parsed.values.items():
        value = flag.value
        if not _exact(value):
            return None
        if holds_secret(dest, value):
            # A string, or a list of them (vLLM's --api-key takes several).
            many = isinstance(value, list)
            found = [_position(item, argv) for item in (value if many else [value])]
            if not found or None in found:
                return None
            secrets[dest] = (many, [place for place in found if place is not None])
            value = None
        values[dest] = [value, flag.spelling, flag.origin, flag.option]
    places = [place for _, found in secrets.values() for place in found]
    masked = _masked(argv, places)
    if masked is None or redact_argv(masked) != masked:
        return None  # something secret-looking that no value accounts for
    return {
        "setup": setup,
        "argv": masked,
        "secret_digest": _digest(_secret_text(argv, places)) if places else None,
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
