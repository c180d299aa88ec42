"""envguard capture: write a profile from a live, known-good server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from envguard.commands.options import target_from, target_options, wants_json


@click.command("capture")
@target_options
@click.option("--name", required=True, help="The profile's name (letters, digits, . _ -).")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The .toml file to write.",
)
@click.option(
    "--extends",
    "base",
    metavar="PROFILE",
    help="A profile to build on (a name or a path): only what differs from it is written.",
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def capture_command(
    pid: int | None,
    port: int | None,
    pattern: str | None,
    name: str,
    output: Path,
    base: str | None,
    force: bool,
    as_json: bool,
) -> int:
    """Write a profile from a live server that runs as it should.

    The tuning variables its ranks see (NCCL config files included, with a comment where a
    value came from one), its flags by canonical name where envguard has the server's
    flag catalog (only those that differ from the defaults), and its GPUs where NVML can
    be loaded. Never a secret: those are left out, and the output says which.

    \b
    envguard capture --port 8000 --name kimi-k2.5-int4-tp8 -o kimi.toml
    envguard check -p kimi.toml --port 8000    # exit 0 on the same server
    """
    from envguard.capturing.run import capture, write
    from envguard.profile.loader import load_profile

    wants_json(as_json)
    target = target_from(pid, port, pattern)
    base_profile, base_path = None, None
    if base is not None:
        loaded = load_profile(base)
        base_profile = loaded.profile
        # extends names files relative to the file that names them.
        absolute = Path(loaded.path).resolve()
        relative = os.path.relpath(absolute, output.resolve().parent)
        base_path = str(absolute) if relative.startswith("..") else relative
    captured = capture(target, name=name, base=base_profile, base_path=base_path)
    write(captured, output, force=force)
    env = captured.document["env"]["required"]
    flags = captured.document.get("server", {}).get("flags", {})
    gpu = captured.document.get("gpu", {})
    if as_json:
        click.echo(
            json.dumps(
                {
                    "path": str(output),
                    "name": name,
                    "pid": captured.pid,
                    "variables": len(env),
                    "flags": len(flags),
                    "gpu": bool(gpu),
                    "notes": list(captured.notes),
                    "exit_code": 0,
                },
                indent=2,
            )
        )
        return 0
    click.echo(
        f"envguard capture: wrote {name}@1 to {output} from pid {captured.pid}: "
        f"{_count(len(env), 'variable')}, {_count(len(flags), 'flag')}"
        + (f", [gpu] of {gpu.get('count', 0)} GPUs" if gpu else "")
    )
    for note in captured.notes:
        click.echo(f"note: {note}")
    return 0


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"
