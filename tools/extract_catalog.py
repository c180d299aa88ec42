"""Write a flag catalog from a server's real argument parser (and, optionally, expected
parses of a corpus of launch lines).

Run it with the Python that has the server installed (a throwaway venv is enough; envguard
itself never imports sglang or vllm):

    python tools/extract_catalog.py sglang [--out envguard/flags/catalogs]
    VLLM_TARGET_DEVICE=cpu python tools/extract_catalog.py vllm
    python tools/extract_catalog.py sglang --corpus tests/data/launch_lines.json

The catalog records, for every option: its option strings, destination, kind (value,
switch, const, negatable, append, help), nargs, converter, choices, default and const.
Converters are named (int, float, json, optional:int, ...) so envguard can apply the same
conversion; one it does not know is recorded as raw:<name> and compared as text.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "envguard" / "flags" / "catalogs"


class ParserError(Exception):
    pass


def _raise(self: argparse.ArgumentParser, message: str) -> None:
    raise ParserError(message)


# Capture what the server would print before exiting with status 2.
argparse.ArgumentParser.error = _raise  # type: ignore[assignment,method-assign]


def sglang_parser() -> argparse.ArgumentParser:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser


def vllm_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level `vllm` parser (which preprocesses argv) and its `serve` subparser."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(prog="vllm")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = ServeSubcommand().subparser_init(subparsers)
    return top, serve


def converter_name(function: Any) -> str | None:
    """A name for the value converter that envguard.flags.converters implements."""
    if function is None:
        return None
    if function in (int, float, str):
        return function.__name__
    if function is json.loads:
        return "json"
    qualname = getattr(function, "__qualname__", repr(function))
    module = getattr(function, "__module__", "") or ""
    name = getattr(function, "__name__", "")
    cells = [c.cell_contents for c in (getattr(function, "__closure__", None) or ())]
    inner = [converter_name(c) for c in cells if callable(c)]
    if qualname.startswith("optional_type.") and inner:
        return f"optional:{inner[0]}"
    if qualname.startswith("parse_type.") and inner:
        return f"parse:{inner[0]}"
    if name == "loads":
        return "json"
    known = {
        ("sglang", "human_readable_int"): "sglang_human_readable_int",
        ("sglang", "nullable_str"): "nullable_str",
        ("sglang", "json_list_type"): "json",
        ("sglang", "parse_cuda_graph_backend_arg"): "str",
        ("sglang", "parse_cuda_graph_config_arg"): "json",
        ("vllm", "human_readable_int"): "vllm_human_readable_int",
        ("vllm", "human_readable_int_or_auto"): "vllm_human_readable_int_or_auto",
        ("vllm", "union_dict_and_str"): "json_object_or_str",
        ("vllm", "parse_reasoning_parser"): "none_is_empty",
    }
    package = module.split(".")[0]
    if (package, name) in known:
        return known[(package, name)]
    if qualname.endswith("parse_dataclass"):
        return "json"
    if "<lambda>" in qualname:
        import inspect

        source = " ".join(inspect.getsource(function).split())
        if 's.lower().replace("-", "_")' in source:
            return "lower_underscore"
        if "device_id.isdigit()" in source:
            return "int_or_str_list"
    return f"raw:{qualname}"


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__repr__": repr(value)}
    return {"__repr__": repr(value)}


def kind_of(action: argparse.Action) -> str:
    name = type(action).__name__
    if isinstance(action, argparse._HelpAction | argparse._VersionAction):
        return "help"
    if isinstance(action, argparse.BooleanOptionalAction):
        return "negatable"
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return "switch"
    if isinstance(action, argparse._StoreConstAction) or (action.nargs == 0 and "Const" in name):
        return "const"
    if action.nargs == 0:
        return "switch"
    if isinstance(action, argparse._AppendAction):
        return "append"
    if isinstance(action, argparse._CountAction):
        return "count"
    return "value"


def describe(action: argparse.Action, parser: argparse.ArgumentParser) -> dict[str, Any]:
    kind = kind_of(action)
    # Every string the parser accepts for the action: vLLM's EnableDisableAction hides
    # `--no-enable-x` from action.option_strings but the parser still takes it.
    strings = list(action.option_strings)
    strings += [
        s for s, a in parser._option_string_actions.items() if a is action and s not in strings
    ]
    entry: dict[str, Any] = {"strings": strings, "dest": action.dest, "kind": kind}
    if kind == "negatable":
        negative = getattr(action, "negative_option_strings", None)
        if negative is None:
            negative = [s for s in action.option_strings if s.startswith("--no-")]
        entry["negative"] = sorted(negative)
    if action.nargs is not None and kind not in ("switch", "negatable", "const", "help"):
        entry["nargs"] = action.nargs
    converter = converter_name(action.type)
    if converter is not None:
        entry["type"] = converter
    if action.choices is not None:
        entry["choices"] = jsonable(list(action.choices))
    if kind != "help":
        entry["default"] = jsonable(action.default)
    if kind in ("switch", "const"):
        entry["const"] = jsonable(action.const)
    if action.required:
        entry["required"] = True
    if type(action).__module__ != "argparse":
        entry["action"] = type(action).__name__
    if hasattr(action, "const_value"):  # stores a fixed value whatever it is given
        entry["stores"] = jsonable(action.const_value)
    if type(action).__name__ == "DeprecatedAction":  # raises ValueError(help) when used
        entry["kind"] = "rejects"
        entry["message"] = action.help
    return entry


def catalog(server: str) -> dict[str, Any]:
    parser = sglang_parser() if server == "sglang" else vllm_parsers()[1]
    return {
        "server": server,
        "version": importlib.metadata.version(server),
        "prog": parser.prog,
        "allow_abbrev": parser.allow_abbrev,
        "python": ".".join(map(str, sys.version_info[:3])),
        "generated_by": "tools/extract_catalog.py",
        "options": [describe(a, parser) for a in parser._actions],
    }


def _sglang_config_merger() -> Any:
    """The ConfigArgumentMerger class this version's prepare_server_args uses (0.5.10+), or
    None when it does not merge --config YAML files."""
    import importlib
    import inspect
    import re

    from sglang.srt import server_args

    source = inspect.getsource(server_args.prepare_server_args)
    found = re.search(r"from ([\w.]+) import ConfigArgumentMerger", source)
    if found is None:
        return None
    return importlib.import_module(found.group(1)).ConfigArgumentMerger


def real_parse(server: str, argv: list[str]) -> dict[str, Any]:
    """What the server's own entry point makes of argv, up to its parse_args()."""
    try:
        if server == "sglang":
            parser = sglang_parser()
            merger = _sglang_config_merger()
            if "--config" in argv and merger is not None:
                argv = merger(parser).merge_config_with_args(argv)
            namespace = parser.parse_args(argv)
            actions = parser._actions
        else:
            top, serve = vllm_parsers()
            namespace = top.parse_args(["serve", *argv])
            actions = serve._actions
    except (ParserError, ValueError, AssertionError) as exc:
        return {"ok": False, "error": str(exc), "values": {}}
    values = {}
    for action in actions:
        if action.dest == "help" or not hasattr(namespace, action.dest):
            continue
        value = getattr(namespace, action.dest)
        if jsonable(value) != jsonable(action.default):
            values[action.dest] = jsonable(value)
    return {"ok": True, "error": None, "values": values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("server", choices=["sglang", "vllm"])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--corpus", type=Path, help="fill in expected parses for this server")
    args = parser.parse_args()
    version = importlib.metadata.version(args.server)
    if args.corpus:
        import os
        import shlex

        corpus_path = args.corpus.resolve()
        corpus = json.loads(corpus_path.read_text())
        os.chdir(corpus_path.parent)  # --config paths in the corpus are relative to it
        for case in corpus:
            if case["server"] == args.server and case["version"] == version:
                case["expected"] = real_parse(args.server, shlex.split(case["argv"]))
        corpus_path.write_text(json.dumps(corpus, indent=1) + "\n")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"{args.server}-{version}.json"
    target.write_text(json.dumps(catalog(args.server), indent=1, sort_keys=False) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
