"""Parse a server command line the way the server does: argparse rebuilt from the catalog.

Rebuilding the real parser's options in the standard library's own argparse gives the
server's exact semantics for free: prefix abbreviations (`--tp 8`), ambiguity errors
(`--pp`), `--flag=value`, switches given a value (an error), last one wins, typed values.
What argparse cannot know (which spelling the user typed, and whether a value came from the
command line or a --config YAML file) is recorded as it parses.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, NoReturn

from envguard.flags.catalog import Catalog, Option
from envguard.flags.converters import converter
from envguard.flags.parsed import FlagValue, Origin, ParsedCommandLine


class ServerRejects(Exception):
    """The error the server would print before exiting: it would not have started."""


class _Negatable(argparse.Action):
    """--x / --no-x (argparse's BooleanOptionalAction) and vLLM's --enable-x / --disable-x."""

    def __init__(
        self, option_strings: list[str], dest: str, negative: tuple[str, ...] = (), **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.negative = set(negative)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, option_string not in self.negative)


class _Stores(argparse.Action):
    """Takes a value (checked against choices) but stores a fixed one (a retired flag)."""

    def __init__(
        self, option_strings: list[str], dest: str, stores: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.stores = stores

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, self.stores)


class _Rejects(argparse.Action):
    """An option the server refuses when used (SGLang's DeprecatedAction raises ValueError)."""

    def __init__(
        self, option_strings: list[str], dest: str, message: str = "", **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.message = message

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        raise ServerRejects(self.message)


class _LoraPaths(argparse.Action):
    """SGLang's LoRAPathAction: each item stripped; `{...}` items parsed as JSON objects."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:

        items = [v.strip() for v in values or []]
        parsed = [json.loads(v) if v.startswith("{") and v.endswith("}") else v for v in items]
        setattr(namespace, self.dest, parsed)


class _Parser(argparse.ArgumentParser):
    """argparse with errors raised, not printed, and each option token's action recorded."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.resolved: list[tuple[str, argparse.Action | None]] = []

    def error(self, message: str) -> NoReturn:
        raise ServerRejects(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise ServerRejects(message or f"exit {status}")

    def _parse_optional(self, arg_string: str) -> Any:
        result = super()._parse_optional(arg_string)
        # 3.11 returns (action, option_string, explicit_arg); 3.12.7+ a list of such tuples.
        first = result[0] if isinstance(result, list) and result else result
        action = first[0] if isinstance(first, tuple) else None
        self.resolved.append((arg_string, action))
        return result


def _formatter(prog: str) -> argparse.HelpFormatter:
    # argparse builds a help formatter for every add_argument (to check nargs), and a
    # formatter without a width asks the terminal for its size: 532 ioctls per parse.
    return argparse.HelpFormatter(prog, width=100)


def build_parser(catalog: Catalog) -> _Parser:
    parser = _Parser(
        prog=catalog.prog,
        allow_abbrev=catalog.allow_abbrev,
        add_help=False,
        formatter_class=_formatter,
    )
    for option in catalog.options:
        _add(parser, option)
    return parser


def _add(parser: _Parser, option: Option) -> None:
    strings = list(option.strings)
    # argparse compares the default with SUPPRESS by identity; the catalog holds its text.
    default = argparse.SUPPRESS if option.default == argparse.SUPPRESS else option.default
    kwargs: dict[str, Any] = {"dest": option.dest, "default": default}
    if option.kind == "help":
        parser.add_argument(*strings, dest="help", action="store_true", default=False)
        return
    if option.kind in ("switch", "const"):
        parser.add_argument(*strings, action="store_const", const=option.const, **kwargs)
        return
    if option.kind == "negatable":
        parser.add_argument(*strings, action=_Negatable, negative=option.negative, **kwargs)
        return
    if option.kind == "rejects":
        parser.add_argument(*strings, action=_Rejects, message=option.message or "", **kwargs)
        return
    if option.kind == "count":
        parser.add_argument(*strings, action="count", **kwargs)
        return
    if option.nargs is not None:
        kwargs["nargs"] = option.nargs
    convert = converter(option.type)
    if convert is not None:
        kwargs["type"] = convert
    if option.choices is not None:
        kwargs["choices"] = option.choices
    if option.required:
        kwargs["required"] = True
    if option.kind == "append":
        kwargs["action"] = "append"
    elif option.stores is not None:
        kwargs["action"] = _Stores
        kwargs["stores"] = option.stores
    elif option.action == "LoRAPathAction":
        kwargs["action"] = _LoraPaths
    if not strings:  # a positional, such as vLLM's model_tag
        del kwargs["dest"]
        parser.add_argument(option.dest, **kwargs)
        return
    parser.add_argument(*strings, **kwargs)


def parse_tokens(
    catalog: Catalog,
    tokens: list[str],
    origins: list[Origin],
    *,
    notes: tuple[str, ...] = (),
    config_file: str | None = None,
) -> ParsedCommandLine:
    """Parse prepared tokens (config values already merged in, `origins` saying which token
    came from where) and collect each destination's value, spelling and origin."""
    parser = build_parser(catalog)
    try:
        namespace = parser.parse_args(tokens)
    except (ServerRejects, ValueError) as exc:
        return ParsedCommandLine(catalog, {}, error=str(exc), notes=notes, config_file=config_file)
    if getattr(namespace, "help", False):
        return ParsedCommandLine(
            catalog,
            {},
            error="--help: the server prints its help and exits",
            notes=notes,
            config_file=config_file,
        )
    spelled: dict[str, tuple[str, Origin, str]] = {}
    for index, (token, action) in enumerate(parser.resolved):
        if action is not None and index < len(origins):
            spelled[action.dest] = (
                token.split("=", 1)[0],
                origins[index],
                action.option_strings[0],
            )
    # The only positional the servers take (vLLM's model_tag) comes first: the entry point's
    # own rewriting puts it there (`--model X` moves to the front, --config goes after it).
    positional_origin = origins[0] if tokens and not tokens[0].startswith("-") else None
    values = {}
    for option in catalog.options:
        if option.kind == "help":
            continue
        # A SUPPRESS default leaves the destination unset: the server sees no such attribute.
        value = getattr(namespace, option.dest, option.default)
        if option.dest in values:
            continue  # a destination shared by several options: the first one speaks for it
        if option.dest in spelled:
            spelling, origin, resolved = spelled[option.dest]
            values[option.dest] = FlagValue(option.dest, value, spelling, origin, resolved)
        elif not option.strings and value != option.default and positional_origin:
            values[option.dest] = FlagValue(option.dest, value, None, positional_origin)
        else:
            values[option.dest] = FlagValue(option.dest, value, None, "default")
    return ParsedCommandLine(catalog, values, notes=notes, config_file=config_file)
