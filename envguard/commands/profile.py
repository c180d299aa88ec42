"""envguard profile: validate, show --resolved, schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from envguard.errors import ExitCode, ProfileError


@dataclass(frozen=True)
class ValidationResult:
    path: str
    label: str | None  # name@version when valid
    problems: tuple[str, ...]


def validate(paths: list[str]) -> list[ValidationResult]:
    """Validate every file fully (no cache); one result per file, every problem in it."""
    from envguard.profile.loader import load_profile

    results = []
    for path in paths:
        try:
            loaded = load_profile(path, use_cache=False)
        except ProfileError as exc:
            results.append(ValidationResult(path, None, tuple(exc.message.splitlines())))
        else:
            results.append(ValidationResult(path, loaded.label, ()))
    return results


def resolved_toml(path: str) -> str:
    """The profile with `extends` merged, as TOML, with the files it came from."""
    import dataclasses

    import tomli_w

    from envguard.profile.loader import load_profile

    loaded = load_profile(path, use_cache=False)
    data = _without_defaults(dataclasses.asdict(loaded.profile))
    data.pop("extends", None)
    header = "".join(f"# from {name}\n" for name in loaded.chain)
    return header + f"# digest sha256:{loaded.digest}\n" + tomli_w.dumps(data)


def _without_defaults(value: Any) -> Any:
    """Drop None values (TOML has no null), empty tables and empty lists (the defaults)."""
    if isinstance(value, dict):
        cleaned = {k: _without_defaults(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in cleaned.items() if v not in ({}, [], ()) or k == "required"}
    if isinstance(value, tuple | list):
        return [_without_defaults(v) for v in value]
    return value


@click.group("profile")
def profile_group() -> None:
    """Validate, show and describe profiles."""


@profile_group.command("validate")
@click.argument("paths", nargs=-1, required=True, metavar="FILE...")
def validate_command(paths: tuple[str, ...]) -> None:
    """Validate profiles; report every problem in every file (exit 0 valid, 3 invalid)."""
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
        click.get_current_context().exit(int(ExitCode.UNVERIFIABLE))


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
    click.echo(resolved_toml(path), nl=False)


@profile_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the profile format (for editors and CI)."""
    from envguard.profile.validation import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
