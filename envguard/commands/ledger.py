"""envguard ledger: list, show, export and compare recorded benchmark results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envguard.errors import EnvguardError, ExitCode

if TYPE_CHECKING:
    from envguard.ledger.compare import Comparison
    from envguard.ledger.store import Ledger, Record


def _open(path: Path | None) -> Ledger:
    from envguard.ledger.store import Ledger

    return Ledger.open(path, create=False)


def _record_dict(record: Record) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(record)


def _short(fingerprint: str | None) -> str:
    return (fingerprint or "-").removeprefix("sha256:")[:12]


def _metrics_text(metrics: dict[str, float], most: int = 3) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in list(metrics.items())[:most])


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
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
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
        click.echo(json.dumps([_record_dict(r) for r in records], indent=2))
        return
    for r in records:
        click.echo(
            f"#{r.id:<6} {r.created_at}  {r.label:<28} {_short(r.fingerprint)}  "
            f"{r.verdict:<7}  {_metrics_text(r.metrics) or '; '.join(r.reasons)[:60]}"
        )


@ledger_group.command("show")
@ledger_option
@click.argument("record_id", type=int)
def show_command(ledger_path: Path | None, record_id: int) -> None:
    """One record, whole (JSON)."""
    click.echo(json.dumps(_record_dict(_open(ledger_path).get(record_id)), indent=2))


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
        click.echo(json.dumps([_record_dict(r) for r in records], indent=2))
        return
    import csv
    import sys

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
        row = _record_dict(record)
        writer.writerow(
            {
                c: json.dumps(row[c]) if isinstance(row[c], dict | list | tuple) else row[c]
                for c in columns
            }
        )


def resolve_pair(
    ledger: Ledger, first: int | None, second: int, baseline: str | None
) -> tuple[Record, Record]:
    after = ledger.get(second)
    if baseline == "latest":
        candidates = ledger.select(
            profile=after.profile_name, verdict="valid", limit=1, before=after.id
        )
        found = next(iter(candidates), None)
        if found is None:
            raise EnvguardError(
                f"no valid record of {after.profile_name} before #{second}",
                hint="record a baseline with `envguard bench` first",
            )
        return found, after
    if first is None:
        raise click.UsageError("give two records (A B), or --baseline latest B")
    return ledger.get(first), after


def comparison_text(result: Comparison) -> list[str]:
    from envguard.flags.converters import as_text
    from envguard.ledger.compare import MISSING

    a, b = result.before, result.after
    lines = [
        f"compare #{a.id} ({a.label}, {_short(a.fingerprint)}) -> #{b.id} ({b.label}, "
        f"{_short(b.fingerprint)})"
    ]
    if not result.differences:
        lines.append("  setup: identical" if a.fingerprint == b.fingerprint else "  setup: -")
    for d in result.differences:
        old = d.before if d.before == MISSING else as_text(d.before)
        new = d.after if d.after == MISSING else as_text(d.after)
        lines.append(f"  setup: {d.name}: {old} -> {new}{'  (varied)' if d.varied else ''}")
    lines.append("  metrics:")
    width = max((len(m.name) for m in result.metrics), default=0)
    for m in result.metrics:
        if m.delta is None:
            old = "absent" if m.before is None else f"{m.before:g}"
            new = "absent" if m.after is None else f"{m.after:g}"
            lines.append(f"    {m.name:<{width}}  {old} -> {new}")
            continue
        percent = f" ({m.percent:+.1f}%)" if m.percent is not None else ""
        lines.append(f"    {m.name:<{width}}  {m.before:g} -> {m.after:g}  {m.delta:+g}{percent}")
    return lines


@ledger_group.command("compare")
@ledger_option
@click.argument("records", nargs=-1, type=int, required=True)
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
) -> None:
    """Metric deltas of B against A, and the setup diff; refuses (exit 1) when either is not
    a valid result or the setups differ in anything --vary does not name."""
    from envguard.ledger.compare import compare

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
        click.get_current_context().exit(int(ExitCode.DRIFT))
