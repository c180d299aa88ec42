"""envguard ledger: list, show, export and compare recorded benchmark results."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envguard.commands.options import count
from envguard.errors import ExitCode
from envguard.render.ledger import comparison_text, metrics_text, record_dict, short_fingerprint

if TYPE_CHECKING:
    from envguard.ledger.store import Ledger


def _open(path: Path | None) -> Ledger:
    from envguard.ledger.store import Ledger

    return Ledger.open(path, create=False)


ledger_option = click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Ledger file (default $ENVGUARD_LEDGER or ~/.local/share/envguard/ledger.db).",
)


@click.group("ledger")
def ledger_group() -> None:
    """Recorded benchmark results, each with the exact setup it ran on."""


@ledger_group.command("list")
@ledger_option
@click.option("--profile", help="Only this profile (name).")
@click.option("--fingerprint", help="Only this setup (a prefix of the fingerprint).")
@click.option("--verdict", type=click.Choice(["valid", "refused"]))
@click.option("--limit", type=count(), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def list_command(
    ledger_path: Path | None,
    profile: str | None,
    fingerprint: str | None,
    verdict: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The newest records first."""
    ledger = _open(ledger_path)
    records = list(
        ledger.select(profile=profile, fingerprint=fingerprint, verdict=verdict, limit=limit)
    )
    if as_json:
        click.echo(json.dumps([record_dict(r) for r in records], indent=2, allow_nan=False))
        return
    for r in records:
        click.echo(
            f"#{r.id:<6} {r.created_at}  {r.label:<28} {short_fingerprint(r.fingerprint)}  "
            f"{r.verdict:<7}  {metrics_text(r.metrics) or '; '.join(r.reasons)[:60]}"
        )


@ledger_group.command("show")
@ledger_option
@click.argument("record_id", type=count())
def show_command(ledger_path: Path | None, record_id: int) -> None:
    """One record, whole (JSON)."""
    click.echo(
        json.dumps(record_dict(_open(ledger_path).get(record_id)), indent=2, allow_nan=False)
    )


@ledger_group.command("export")
@ledger_option
@click.option(
    "--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True
)
@click.option("--profile")
@click.option("--verdict", type=click.Choice(["valid", "refused"]))
def export_command(
    ledger_path: Path | None, fmt: str, profile: str | None, verdict: str | None
) -> None:
    """Every record (oldest first) as JSON or CSV, for spreadsheets and notebooks."""
    records = list(_open(ledger_path).select(profile=profile, verdict=verdict))[::-1]
    if fmt == "json":
        click.echo(json.dumps([record_dict(r) for r in records], indent=2, allow_nan=False))
        return
    import csv  # only for --format csv

    columns = [
        "id",
        "created_at",
        "host",
        "profile_name",
        "profile_version",
        "profile_digest",
        "fingerprint",
        "verdict",
        "reasons",
        "command",
        "metrics",
        "setup",
    ]
    writer = csv.DictWriter(sys.stdout, columns, lineterminator="\n")
    writer.writeheader()
    for record in records:
        row = record_dict(record)
        writer.writerow(
            {
                c: json.dumps(row[c], allow_nan=False)
                if isinstance(row[c], dict | list | tuple)
                else row[c]
                for c in columns
            }
        )


@ledger_group.command("compare")
@ledger_option
@click.argument("records", nargs=-1, type=count(), required=True)
@click.option(
    "--vary",
    multiple=True,
    metavar="NAME",
    help="What the experiment changes (a variable or flag); repeatable.",
)
@click.option(
    "--baseline",
    type=click.Choice(["latest"]),
    help="Compare B with the latest valid record of its profile before it.",
)
@click.option("--json", "as_json", is_flag=True)
def compare_command(
    ledger_path: Path | None,
    records: tuple[int, ...],
    vary: tuple[str, ...],
    baseline: str | None,
    as_json: bool,
) -> int:
    """Metric deltas of B against A, and the setup diff; refuses (exit 1) when either is not
    a valid result or the setups differ in anything --vary does not name."""
    from envguard.evaluation.results import compare
    from envguard.ledger.store import resolve_pair

    if len(records) > 2 or (len(records) == 1 and baseline is None):
        raise click.UsageError("give two records (A B), or --baseline latest B")
    first, second = (records[0], records[1]) if len(records) == 2 else (None, records[0])
    ledger = _open(ledger_path)
    before, after = resolve_pair(ledger, first, second, baseline)
    result = compare(before, after, list(vary))
    if as_json:
        click.echo(
            json.dumps(
                {
                    "comparable": result.comparable,
                    "refusals": result.refusals,
                    "before": before.id,
                    "after": after.id,
                    "metrics": [
                        {
                            "name": m.name,
                            "before": m.before,
                            "after": m.after,
                            "delta": m.delta,
                            "percent": m.percent,
                        }
                        for m in result.metrics
                    ],
                    "differences": [
                        {
                            "path": list(d.path),
                            "before": d.before,
                            "after": d.after,
                            "varied": d.varied,
                        }
                        for d in result.differences
                    ],
                },
                indent=2,
                default=str,
            )
        )
    else:
        for line in comparison_text(result):
            click.echo(line)
        for refusal in result.refusals:
            click.echo(f"refused: {refusal}", err=True)
    if not result.comparable:
        return int(ExitCode.DRIFT)
    return int(ExitCode.OK)
