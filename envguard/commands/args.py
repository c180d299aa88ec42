"""envguard args: show how envguard (and the server) reads a launch command line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from envguard.errors import ExitCode

if TYPE_CHECKING:
    from envguard.flags.parser import ParsedCommandLine


def read_args(
    server: str, argv: list[str], version: str | None = None
) -> tuple[ParsedCommandLine, str | None]:
    """Parse `argv` (server arguments, or a whole launch line) with the catalog for
    `version` (newest when None); return the parse and a note when the catalog is not exact.
    A --config file is read relative to the current directory."""
    from envguard.flags.catalog import choose_version, load
    from envguard.flags.preprocess import parse
    from envguard.flags.recognise import split_user_argv

    chosen, note = choose_version(server, version)
    args, subcommand = split_user_argv(server, argv)  # type: ignore[arg-type]
    return parse(load(server, chosen), args, subcommand=subcommand), note


def args_dict(parsed: ParsedCommandLine, *, every: bool) -> dict[str, Any]:
    from envguard.evaluation.flags import value_for_display

    shown = parsed.values if every else parsed.non_default()
    return {
        "ok": parsed.ok,
        "error": parsed.error,
        "values": {d: value_for_display(d, f.value) for d, f in shown.items()},
        "server": parsed.catalog.server,
        "catalog": parsed.catalog.version,
        "spellings": {d: f.spelling for d, f in shown.items() if f.spelling},
        "sources": {d: f.origin for d, f in shown.items()},
        "notes": list(parsed.notes),
    }


@click.command("args", context_settings={"ignore_unknown_options": True})
@click.option("--server", type=click.Choice(["sglang", "vllm"]), required=True)
@click.option("--version", "version", metavar="V", help="Server version (default: newest catalog).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--all", "every", is_flag=True, help="Show every destination, defaults too.")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True)
def args_command(
    server: str, version: str | None, as_json: bool, every: bool, argv: tuple[str, ...]
) -> None:
    """Show how the server parses a command line: each destination, its typed value, the
    spelling used and where it came from (command line, --config file, default).

    \b
    envguard args --server sglang -- --model-path M --tp 8 --mem-frac 0.88
    envguard args --server vllm --json -- vllm serve M -tp 8 --gpu-mem 0.9

    Exit code 1 when the server would reject the command line.
    """
    from envguard.evaluation.flags import value_for_display
    from envguard.flags.converters import as_text

    parsed, note = read_args(server, list(argv), version)
    if version is None:
        note = None  # the header says which catalog was used
    if as_json:
        click.echo(json.dumps(args_dict(parsed, every=every), indent=2))
    else:
        if note:
            click.echo(f"note: {note}", err=True)
        newest = "" if version else " (newest catalog; --version V to choose)"
        click.echo(f"{parsed.catalog.label}{newest}:")
        if parsed.error is not None:
            click.echo(f"  error: {parsed.error}")
            click.echo("  (the server would exit with this error instead of starting)")
        shown = parsed.values if every else parsed.non_default()
        width = max((len(d) for d in shown), default=0)
        for dest, flag in shown.items():
            value = as_text(value_for_display(dest, flag.value))
            where = flag.origin if flag.origin != "config" else f"--config {parsed.config_file}"
            spelling = f"  {flag.spelling}" if flag.spelling else ""
            click.echo(f"  {dest:<{width}}  {value}  [{where}]{spelling}")
        for line in parsed.notes:
            click.echo(f"  note: {line}")
    if not parsed.ok:
        click.get_current_context().exit(int(ExitCode.DRIFT))
