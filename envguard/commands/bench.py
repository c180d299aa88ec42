"""envguard bench: benchmark a server only while it matches its profile (envguard.benchmarking)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envguard.commands.options import (
    SERVER_COMMAND,
    profile_option,
    target_from,
    target_options,
    wants_json,
)
from envguard.render.ledger import record_dict

if TYPE_CHECKING:
    from envguard.evaluation.record import Record


@click.command("bench", context_settings=SERVER_COMMAND)
@profile_option
@target_options
@click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Ledger file (default $ENVGUARD_LEDGER or ~/.local/share/envguard/ledger.db).",
)
@click.option(
    "--metric",
    "metric_options",
    multiple=True,
    metavar="NAME=REGEX",
    help="Take metric NAME from the last match of REGEX's first group.",
)
@click.option("--throughput", is_flag=True, help="Run the built-in tok/s probe instead of CMD.")
@click.option("--url", help="Server base URL for --throughput (default http://127.0.0.1:PORT).")
@click.option(
    "--api",
    type=click.Choice(["completions", "generate"]),
    default="completions",
    show_default=True,
    help="/v1/completions or SGLang's /generate.",
)
@click.option("--max-tokens", type=click.IntRange(min=1), default=500, show_default=True)
@click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True)
@click.option(
    "--json", "as_json", is_flag=True,
    help="Print one JSON document (the benchmark's own output goes to stderr).",
)  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def bench_command(
    profile_path: str,
    pid: int | None,
    port: int | None,
    pattern: str | None,
    ledger_path: Path | None,
    metric_options: tuple[str, ...],
    throughput: bool,
    url: str | None,
    api: str,
    max_tokens: int,
    runs: int,
    warmup: int,
    as_json: bool,
    command: tuple[str, ...],
) -> int:
    """Benchmark a server only while it matches its profile, and record the result.

    Checks the server, runs CMD (or --throughput), checks again (same processes, same
    setup fingerprint) and records the metrics in the ledger - as valid only if nothing
    changed. Metrics: CMD's last JSON object on stdout, and --metric NAME=REGEX.

    \b
    envguard bench -p profiles/kimi-k2.5-int4-tp8.toml --port 8000 -- python bench.py
    envguard bench -p P --port 8000 --throughput --max-tokens 500 --runs 5 --warmup 1
    """
    from envguard.benchmarking.run import Throughput, bench

    target = target_from(pid, port, pattern)
    if throughput == bool(command):
        raise click.UsageError("give a benchmark command after --, or --throughput (not both)")
    probe = None
    if throughput:
        base = url or (f"http://127.0.0.1:{port}" if port else None)
        if base is None:
            raise click.UsageError("--throughput needs --url (or --port)")
        probe = Throughput(base, api, max_tokens, runs, warmup)  # type: ignore[arg-type]
    wants_json(as_json)
    stored: list[tuple[int, Record]] = []
    code = bench(
        profile_path,
        target,
        list(command),
        throughput=probe,
        metric_options=metric_options,
        ledger_path=ledger_path,
        echo=lambda line: click.echo(line, err=True),
        stream=sys.stderr if as_json else sys.stdout,
        recorded=lambda record_id, record: stored.append((record_id, record)),
    )
    if as_json:
        [(record_id, record)] = stored
        document = {**record_dict(record), "id": record_id, "exit_code": code}
        click.echo(json.dumps(document, indent=2, allow_nan=False))
    return code
