"""What each server's entry point does to argv before argparse sees it.

SGLang (prepare_server_args in sglang/srt/server_args.py, 0.5.10+): a literal `--config
FILE` token pair is replaced by the YAML file's values, put *before* the rest, so the
command line wins (CLI > YAML > defaults). `--config=FILE` is not that token, so the server
silently ignores it (docs/servers.md).

vLLM (FlexibleArgumentParser.parse_args in vllm/utils/argparse_utils.py, 0.33.0): for
`serve`, `--model X` moves to the positional; `--config FILE` is pulled in after the model;
option names get `_` -> `-` (up to the first '.'); `-O3` means `--optimization-level 3`;
dotted options (`--speculative-config.method eagle3`) are gathered into one JSON value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from envguard.files import read_text
from envguard.flags.catalog import Catalog
from envguard.flags.parsed import Origin, ParsedCommandLine
from envguard.flags.parser import ServerRejects, parse_tokens
from envguard.knowledge.redaction import redact_text

# Reads a file as the server process would see it (its root and cwd); raises OSError.
FileReader = Callable[[str], str]

Token = tuple[str, Origin]


def parse(
    catalog: Catalog,
    argv: list[str],
    read_file: FileReader | None = None,
    *,
    subcommand: bool = True,
) -> ParsedCommandLine:
    """Parse server arguments (what follows `sglang.launch_server` or `vllm serve`).

    `subcommand` is False for vLLM entry points without one (`python -m
    vllm.entrypoints.openai.api_server`).
    """
    reader = read_file or read_text
    notes: list[str] = []
    config_file: str | None = None
    try:
        if catalog.server == "sglang":
            tokens, config_file = _sglang_tokens(catalog, argv, reader, notes)
        else:
            tokens, config_file = _vllm_tokens(catalog, argv, reader, notes, subcommand)
    except (ServerRejects, ValueError, OSError) as exc:
        error = redact_text(_message(exc), argv)
        return ParsedCommandLine(catalog, {}, error=error, notes=tuple(notes))
    parsed = parse_tokens(
        catalog,
        [t for t, _ in tokens],
        [o for _, o in tokens],
        notes=tuple(notes),
        config_file=config_file,
    )
    if parsed.error is not None:
        # argparse quotes what it refuses (`unrecognized arguments: --hf-token VALUE`).
        error = redact_text(parsed.error, [*argv, *(t for t, _ in tokens)])
        return parsed._replace(error=error)
    return parsed


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc)


def _ignored_config_note(argv: list[str], catalog: Catalog, notes: list[str]) -> None:
    for token in argv:
        if token.startswith("--config=") and "--config" in catalog.by_string:
            notes.append(
                f"{token}: the server looks for the separate token `--config`, so it silently "
                f"ignores this form and never reads {token.split('=', 1)[1]}; write "
                "`--config FILE`"
            )


# YAML aliases share one object for every reference, so a 1 KB "billion laughs" file loads
# cheaply but expands exponentially once walked (turned into command-line tokens). A server
# config is a flat mapping of a few hundred values; the walk is capped well above that.
MAX_YAML_VALUES = 100_000


def _load_yaml(path: str, reader: FileReader) -> Any:
    import yaml  # only when a server command line uses --config

    try:
        data = yaml.safe_load(reader(path))
    except yaml.YAMLError as exc:
        raise ServerRejects(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ServerRejects(f"{path}: YAML nested too deeply") from None
    if _expanded_size(data, MAX_YAML_VALUES) > MAX_YAML_VALUES:
        raise ServerRejects(
            f"{path}: more than {MAX_YAML_VALUES} values once its aliases are expanded "
            "(a YAML alias bomb?); envguard does not expand it"
        )
    return data


def _expanded_size(data: Any, budget: int) -> int:
    """How many values `data` holds with shared references counted every time they are
    reached (as expansion would), counting no further than `budget` + 1."""
    count, stack = 0, [data]
    while stack and count <= budget:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(item.keys())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return count


# --- SGLang -------------------------------------------------------------------------------


def _sglang_tokens(
    catalog: Catalog, argv: list[str], reader: FileReader, notes: list[str]
) -> tuple[list[Token], str | None]:
    _ignored_config_note(argv, catalog, notes)
    if "--config" not in argv or "--config" not in catalog.by_string:
        return [(t, "cmdline") for t in argv], None
    positions = [i for i, token in enumerate(argv) if token == "--config"]
    if len(positions) > 1:
        raise ServerRejects("Multiple config files specified! Only one allowed.")
    index = positions[0]
    if index == len(argv) - 1:
        raise ServerRejects("No config file specified after --config flag!")
    path = argv[index + 1]
    suffix = PurePosixPath(path).suffix
    if suffix.lower() not in (".yaml", ".yml"):
        raise ServerRejects(f"Config file must be YAML format, got: {suffix}")
    try:
        data = _load_yaml(path, reader)
    except FileNotFoundError:
        raise ServerRejects(f"Config file not found: {path}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ServerRejects("Config file must contain a dictionary at root level")
    config: list[Token] = [(t, "config") for t in _sglang_config_args(catalog, data)]
    rest = argv[:index] + argv[index + 2 :]
    return config + [(t, "cmdline") for t in rest], path


def _sglang_config_args(catalog: Catalog, data: dict[str, Any]) -> list[str]:
    """SGLang's ConfigArgumentMerger: YAML keys become `--key value` as written."""
    store_true, supported, unsupported = set(), set(), {}
    for option in catalog.options:
        keys = {option.dest} | {
            s[2:].replace("-", "_") for s in option.strings if s.startswith("--")
        }
        plain_store_true = (
            option.kind == "switch" and option.action is None and option.const is True
        )
        takes_one = option.kind in ("value", "append") and (
            option.action is None or option.nargs is None
        )
        if plain_store_true:
            store_true |= keys
        if plain_store_true or takes_one:
            supported |= keys
        elif option.strings and option.kind != "help" and "--config" not in option.strings:
            unsupported.update(dict.fromkeys(keys, option))
    args: list[str] = []
    for key, value in data.items():
        normal = str(key).replace("-", "_")
        if normal in unsupported and normal not in supported:
            action = _argparse_class(unsupported[normal])
            raise ServerRejects(f"Unsupported config option '{normal}' with action '{action}'")
        if isinstance(value, bool):
            if normal in store_true:
                args += [f"--{key}"] if value else []
            else:
                args += [f"--{key}", str(value).lower()]
        elif isinstance(value, list):
            args += [f"--{key}", *(str(v) for v in value)] if value else []
        elif isinstance(value, dict):
            args += [f"--{key}", json.dumps(value)]
        else:
            args += [f"--{key}", str(value)]
    return args


def _argparse_class(option: Any) -> str:
    if option.action:
        return str(option.action)
    return {
        "negatable": "BooleanOptionalAction",
        "count": "_CountAction",
        "switch": "_StoreConstAction",
        "const": "_StoreConstAction",
    }.get(option.kind, "Action")


# --- vLLM ---------------------------------------------------------------------------------

_MODEL = re.compile(r"^--model(=.+|$)")
_SERVED_NAME = re.compile(r"^--served[-_]model[-_]name(=.+|$)")
_OPTION_NAME = re.compile(r"(?<=--)[^\.]*")  # everything between the first -- and first .


def _vllm_tokens(
    catalog: Catalog, argv: list[str], reader: FileReader, notes: list[str], subcommand: bool
) -> tuple[list[Token], str | None]:
    _ignored_config_note(argv, catalog, notes)
    args: list[Token] = [(t, "cmdline") for t in (["serve", *argv] if subcommand else argv)]
    if subcommand:
        args = _vllm_model_first(args)
    config_file = None
    if any(t == "--config" for t, _ in args):
        args, config_file = _vllm_pull_config(catalog, args, reader, subcommand)
    args = _vllm_rename(args)
    args = _vllm_dotted(args)
    return (args[1:] if subcommand else args), config_file


def _vllm_model_first(args: list[Token]) -> list[Token]:
    names = [t for t, _ in args]
    index = next((i for i, t in enumerate(names) if _MODEL.match(t)), None)
    if index is not None:
        if names[index] == "--model":
            if index + 1 >= len(args):
                raise ServerRejects("--model needs a value")
            model, rest = args[index + 1], index + 2
        else:
            model, rest = (names[index].removeprefix("--model="), args[index][1]), index + 1
        args = [args[0], model, *args[1:index], *args[rest:]]
        names = [t for t, _ in args]
    if (
        len(names) > 1
        and names[1].startswith("-")
        and not any(re.match(r"^--config(=.+|$)", t) for t in names)
        and any(_SERVED_NAME.match(t) for t in names)
    ):
        raise ServerRejects(
            "`model` should be provided as the first positional argument when using "
            "`vllm serve`. i.e. `vllm serve <model> --<arg> <value>`."
        )
    return args


def _vllm_pull_config(
    catalog: Catalog, args: list[Token], reader: FileReader, subcommand: bool
) -> tuple[list[Token], str]:
    names = [t for t, _ in args]
    if names.count("--config") > 1:
        raise ServerRejects("More than one config file specified!")
    index = names.index("--config")
    if index == len(args) - 1:
        raise ServerRejects("No config file specified! Please check your command-line arguments.")
    path = names[index + 1]
    extension = path.split(".")[-1]
    if extension not in ("yaml", "yml"):
        raise ServerRejects(f"Config file must be of a yaml/yml type. {extension} supplied")
    data = _load_yaml(path, reader) or {}
    config: list[Token] = []
    for key, value in data.items():
        if isinstance(value, bool):
            # False becomes --no-KEY only when the *parsing* parser knows that string: for
            # `vllm serve` that is the top-level parser, which never does.
            if value:
                config.append((f"--{key}", "config"))
            elif not subcommand and f"--no-{key}" in catalog.by_string:
                config.append((f"--no-{key}", "config"))
        elif isinstance(value, list):
            if value:
                config += [(f"--{key}", "config"), *((str(v), "config") for v in value)]
        elif isinstance(value, dict):
            config += [(f"--{key}", "config"), (json.dumps(value), "config")]
        else:
            config += [(f"--{key}", "config"), (str(value), "config")]
    rest = args[:index] + args[index + 2 :]
    if not subcommand:
        return config + rest, path
    model_in_cli = len(rest) > 1 and not rest[1][0].startswith("-")
    if not model_in_cli and not any(t == "--model" for t, _ in config):
        raise ServerRejects(
            "No model specified! Please specify model either as a positional argument or in a "
            "config file."
        )
    if model_in_cli:
        return rest[:2] + config + rest[2:], path
    return rest[:1] + config + rest[1:], path


def _vllm_rename(args: list[Token]) -> list[Token]:
    renamed: list[Token] = []
    names = [t for t, _ in args]
    for i, (arg, origin) in enumerate(args):
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                key = _OPTION_NAME.sub(lambda m: m.group(0).replace("_", "-"), key, count=1)
                renamed.append((f"{key}={value}", origin))
            else:
                renamed.append(
                    (_OPTION_NAME.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1), origin)
                )
        elif arg.startswith("-O") and arg != "-O":
            level = arg[3:] if arg[2] == "=" else arg[2:]
            renamed += [("--optimization-level", origin), (level, origin)]
        elif arg == "-O" and i + 1 < len(args) and names[i + 1] in {"0", "1", "2", "3"}:
            renamed.append(("--optimization-level", origin))
        else:
            renamed.append((arg, origin))
    return renamed


def _vllm_dotted(args: list[Token]) -> list[Token]:
    """`--x.a 1 --x.b.c 2` -> `--x '{"a": 1, "b": {"c": 2}}'` (appended at the end)."""
    from envguard.flags.converters import vllm_human_readable_int

    delete: set[int] = set()
    gathered: dict[str, tuple[dict[str, Any], Origin]] = {}
    for i, (arg, origin) in enumerate(args):
        if i in delete or not (arg.startswith("-") and "." in arg):
            continue
        if arg.startswith("--") and "." not in arg:
            continue
        if "=" in arg:
            arg, value_text = arg.split("=", 1)
            if "." not in arg:
                continue  # the '.' was only in the value
        else:
            if i + 1 >= len(args):
                raise ServerRejects(f"{arg} needs a value")
            value_text = args[i + 1][0]
            delete.add(i + 1)
        if arg.endswith("+"):
            arg = arg[:-1]
            value_text = json.dumps(value_text.split(","))
        key, *keys = arg.split(".")
        value: Any
        try:
            value = json.loads(value_text)
        except json.JSONDecodeError:
            try:
                value = vllm_human_readable_int(value_text)
            except ValueError:
                value = value_text
        for part in reversed(keys):
            value = {part: value}
        target, _ = gathered.setdefault(key, ({}, origin))
        _merge(target, value)
        delete.add(i)
    kept = [token for i, token in enumerate(args) if i not in delete]
    for key, (value, origin) in gathered.items():
        kept += [(key, origin), (json.dumps(value), origin)]
    return kept


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _merge(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def read_args(
    server: str, argv: list[str], version: str | None = None
) -> tuple[ParsedCommandLine, str | None]:
    """Parse `argv` (server arguments, or a whole launch line) with the catalog for
    `version` (newest when None); return the parse and a note when the catalog is not exact.
    A --config file is read relative to the current directory."""
    from envguard.flags.catalog import choose_version, load
    from envguard.flags.recognise import split_user_argv

    chosen, note = choose_version(server, version)
    args, subcommand = split_user_argv(server, argv)  # type: ignore[arg-type]
    return parse(load(server, chosen), args, subcommand=subcommand), note
