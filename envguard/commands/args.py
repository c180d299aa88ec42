"""envguard args: show how envguard (and the server) reads a launch command line."""

from __future__ import annotations

import json

import click

from envguard.commands.options import SERVER_COMMAND
from envguard.errors import ExitCode


@click.command("args", context_settings=SERVER_COMMAND)
@click.option("--server", type=click.Choice(["sglang", "vllm"]), required=True)
@click.option("--version", "version", metavar="V", help="Server version (default: newest catalog).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--all", "every", is_flag=True, help="Show every destination, defaults too.")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True)
def args_command(
    server: str, version: str | None, as_json: bool, every: bool, argv: tuple[str, ...]
) -> int:
    """Show how the server parses a command line: each destination, its typed value, the
    spelling used and where it came from (command line, --config file, default).

    \b
    envguard args --server sglang -- --model-path M --tp 8 --mem-frac 0.88
    envguard args --server vllm --json -- vllm serve M -tp 8 --gpu-mem 0.9

    Exit code 1 when the server would reject the command line.
    """
    from envguard.evaluation.flags import value_for_display
    from envguard.flags.converters import as_text
    from envguard.flags.preprocess import read_args
    from envguard.render.flags import args_dict

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
        return int(ExitCode.DRIFT)
    return int(ExitCode.OK)
