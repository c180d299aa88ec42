"""envguard profile: validate, show --resolved, schema."""

from __future__ import annotations

import json

import click

from envguard.errors import ExitCode


@click.group("profile")
def profile_group() -> None:
    """Validate, show and describe profiles."""


@profile_group.command("validate")
@click.argument("paths", nargs=-1, required=True, metavar="FILE...")
def validate_command(paths: tuple[str, ...]) -> int:
    """Validate profiles; report every problem in every file (exit 0 valid, 3 invalid)."""
    from envguard.profile.loader import validate

    results = validate(list(paths))
    for result in results:
        if result.label:
            click.echo(f"{result.path}: ok ({result.label})")
        for problem in result.problems:
            click.echo(problem, err=True)
    if any(r.problems for r in results):
        click.echo(
            "hint: see `envguard profile schema` and the README section 'Profiles'", err=True
        )
        return int(ExitCode.UNVERIFIABLE)
    return int(ExitCode.OK)


@profile_group.command("show")
@click.argument("path", metavar="FILE")
@click.option(
    "--resolved",
    is_flag=True,
    required=True,
    help="Merge the `extends` chain (the only view for now).",
)
def show_command(path: str, resolved: bool) -> None:
    """Print the profile as envguard sees it, `extends` merged, as TOML."""
    from envguard.render.profile import resolved_toml

    click.echo(resolved_toml(path), nl=False)


@profile_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the profile format (for editors and CI)."""
    from envguard.profile.validation import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
