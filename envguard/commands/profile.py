"""envguard profile: validate, show --resolved, schema."""

from __future__ import annotations

import json

import click

from envguard.commands.options import wants_json
from envguard.errors import ExitCode, ProfileError
from envguard.profile.locate import available, search_dirs


@click.group("profile")
def profile_group() -> None:
    """Validate, list, show and describe profiles.

    A profile is given by path, or by name: NAME.toml is looked up in
    $XDG_CONFIG_HOME/envguard/profiles, /etc/envguard/profiles, then the shipped profiles."""


@profile_group.command("validate")
@click.argument("paths", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def validate_command(paths: tuple[str, ...], as_json: bool) -> int:
    """Validate profiles; report every problem in every file (exit 0 valid, 3 invalid)."""
    from envguard.profile.loader import validate

    wants_json(as_json)
    results = validate(list(paths))
    code = int(ExitCode.UNVERIFIABLE if any(r.problems for r in results) else ExitCode.OK)
    if as_json:
        files = [{"path": r.path, "label": r.label, "problems": list(r.problems)} for r in results]
        click.echo(json.dumps({"files": files, "exit_code": code}, indent=2))
        return code
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


@profile_group.command("diff")
@click.argument("before", metavar="A")
@click.argument("after", metavar="B")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def diff_command(before: str, after: str, as_json: bool) -> int:
    """What changed from profile A to profile B, each with its `extends` resolved: every
    requirement added, removed or changed, with both values (exit 0 the same, 1 they
    differ, as diff(1); 3 a profile cannot be read).

    \b
    git show HEAD~1:profiles/kimi.toml > old.toml   # an earlier version, beside it
    envguard profile diff old.toml profiles/kimi.toml
    """
    from envguard.evaluation.profile_diff import profile_changes
    from envguard.profile.loader import load_profile

    wants_json(as_json)
    a, b = load_profile(before), load_profile(after)
    changes = profile_changes(a.profile, b.profile)
    code = 1 if changes else 0
    if as_json:
        side = [{"path": p.path, "name": p.profile.name, "version": p.profile.version,
                 "digest": p.digest} for p in (a, b)]  # fmt: skip
        click.echo(
            json.dumps(
                {"a": side[0], "b": side[1], "changes": [c._asdict() for c in changes],
                 "exit_code": code},
                indent=2, default=str,
            )
        )  # fmt: skip
        return code
    from envguard.render.profile import diff_text

    click.echo(diff_text(a, b, changes))
    return code


@profile_group.command("list")
def list_command() -> None:
    """The profiles `-p NAME` finds: the user's, the system's, then the shipped ones."""
    from envguard.profile.loader import load_profile

    for found in available():
        try:
            loaded = load_profile(found.path)
            about = f"{loaded.label}  {loaded.profile.description}"
        except ProfileError as exc:
            about = f"invalid: {exc.message.splitlines()[0]}"
        click.echo(f"{found.name:<34} {found.origin:<8} {about}".rstrip())
    click.echo("searched: " + ", ".join(f"{d} ({origin})" for origin, d in search_dirs()), err=True)


@profile_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the profile format (for editors and CI)."""
    from envguard.profile.validation import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
