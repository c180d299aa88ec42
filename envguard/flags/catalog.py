"""Flag catalogs: every option of one server version's real parser, as data.

Catalogs are JSON files beside this module, written by tools/extract_catalog.py from the
real parsers of sglang and vllm (envguard never imports either: seconds of torch import).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal, NamedTuple

from envguard.errors import EnvguardError
from envguard.knowledge.servers import ServerKind

CATALOGS = Path(__file__).resolve().parent / "catalogs"

OptionKind = Literal["value", "switch", "const", "negatable", "append", "count", "help", "rejects"]


class Option(NamedTuple):
    strings: tuple[str, ...]
    dest: str
    kind: OptionKind
    nargs: int | str | None = None
    type: str | None = None
    choices: tuple[Any, ...] | None = None
    default: Any = None
    const: Any = None
    negative: tuple[str, ...] = ()  # option strings that store False (negatable)
    required: bool = False
    action: str | None = None  # the server's own Action class, when not argparse's
    stores: Any = None  # a fixed value stored whatever is given (DeprecatedStoreConstAction)
    message: str | None = None  # what the server raises when the option is used (rejects)

    @property
    def long_name(self) -> str:
        """The canonical spelling: the first long option string, or the dest."""
        longs = [s for s in self.strings if s.startswith("--")]
        return longs[0] if longs else (self.strings[0] if self.strings else self.dest)


class Catalog(NamedTuple):
    server: ServerKind
    version: str
    prog: str
    allow_abbrev: bool
    python: str
    options: tuple[Option, ...]
    by_dest: dict[str, Option]  # derived from options, as is by_string
    by_string: dict[str, Option]

    def __repr__(self) -> str:  # not the two derived tables of ~500 options each
        return f"Catalog({self.label})"

    @property
    def label(self) -> str:
        return f"{self.server} {self.version}"

    def resolve_name(self, name: str) -> Option | None:
        """An option by destination (`tp_size`) or any spelling (`--tp-size`, `tp-size`, `-tp`)."""
        if name in self.by_dest:
            return self.by_dest[name]
        for candidate in (name, f"--{name}", f"--{name.replace('_', '-')}"):
            if candidate in self.by_string:
                return self.by_string[candidate]
        return None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def available(server: str) -> list[str]:
    """Versions with a catalog, oldest first."""
    versions = [p.stem.split("-", 1)[1] for p in CATALOGS.glob(f"{server}-*.json")]
    return sorted(versions, key=_version_key)


def choose_version(server: str, wanted: str | None) -> tuple[str, str | None]:
    """The catalog version to use for `wanted`, and a warning when it is not exact.

    No version known: the newest catalog. A version without a catalog: the nearest one
    not newer than it (flags are added far more often than removed), else the oldest.
    """
    versions = available(server)
    if not versions:
        raise EnvguardError(
            f"no flag catalog for {server}", hint="regenerate one with tools/extract_catalog.py"
        )
    if wanted is None:
        return versions[-1], f"{server} version unknown: using the newest catalog, {versions[-1]}"
    if wanted in versions:
        return wanted, None
    older = [v for v in versions if _version_key(v) <= _version_key(wanted)]
    chosen = older[-1] if older else versions[0]
    return chosen, (
        f"no flag catalog for {server} {wanted}: using the nearest, {chosen} (have "
        f"{', '.join(versions)}; tools/extract_catalog.py makes one)"
    )


def _first_by_dest(options: tuple[Option, ...]) -> dict[str, Option]:
    found: dict[str, Option] = {}
    for option in options:
        if option.kind != "help":
            found.setdefault(option.dest, option)
    return found


def path_of(server: str, version: str) -> Path:
    return CATALOGS / f"{server}-{version}.json"


def load(server: str, version: str) -> Catalog:
    path = path_of(server, version)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise EnvguardError(
            f"no flag catalog for {server} {version}",
            hint=f"have: {', '.join(available(server)) or 'none'}",
        ) from None
    options = tuple(
        Option(
            strings=tuple(o["strings"]),
            dest=o["dest"],
            kind=o["kind"],
            nargs=o.get("nargs"),
            type=o.get("type"),
            choices=tuple(o["choices"]) if o.get("choices") is not None else None,
            default=o.get("default"),
            const=o.get("const"),
            negative=tuple(o.get("negative", ())),
            required=o.get("required", False),
            action=o.get("action"),
            stores=o.get("stores"),
            message=o.get("message"),
        )
        for o in data["options"]
    )
    return Catalog(
        server=data["server"],
        version=data["version"],
        prog=data["prog"],
        allow_abbrev=data["allow_abbrev"],
        python=data["python"],
        options=options,
        # Several options may share a destination (--enable-x and a retired --x-backend);
        # argparse takes the first one's default, and so does envguard.
        by_dest=_first_by_dest(options),
        by_string={s: o for o in options for s in o.strings},
    )
