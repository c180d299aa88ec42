"""A systemd unit equivalent to `envguard launch`: the profile's environment as
Environment= lines, the command as ExecStart, the whole cgroup stopped together."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from envguard import __version__
from envguard.errors import EnvguardError
from envguard.knowledge.namespaces import looks_secret
from envguard.launching.preflight import Preflight
from envguard.profile.loader import LoadedProfile

_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+")


def _escape(text: str) -> str:
    # systemd expands %-specifiers everywhere and $VARS in ExecStart: double both.
    return text.replace("%", "%%").replace("$", "$$")


def quote_word(word: str) -> str:
    """One ExecStart argument, quoted the way systemd splits command lines."""
    if word and _PLAIN.fullmatch(word):
        return _escape(word)
    return '"' + _escape(word).replace("\\", "\\\\").replace('"', '\\"') + '"'


def unit(loaded: LoadedProfile, pre: Preflight, cwd: Path) -> str:
    program = pre.command[0]
    resolved = program if "/" in program else shutil.which(program)
    if resolved is None:
        raise EnvguardError(
            f"{program}: not found on PATH", hint="give the command with an absolute path"
        )
    executable = str(Path(resolved).absolute())
    profile = loaded.profile
    lines = [
        f"# Written by envguard {__version__} from {loaded.path} "
        f"({loaded.label}, sha256:{loaded.digest[:16]}).",
        "# Regenerate it when the profile changes; `envguard check` verifies the running server.",
        "[Unit]",
        f"Description={_escape(loaded.label)}: {_escape(profile.description or profile.name)}",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"WorkingDirectory={quote_word(str(cwd))}",
    ]
    for name, value in sorted(pre.built.injected.items()):
        if looks_secret(name):
            lines.append(f"# {name} looks secret: set it in an EnvironmentFile=, not here.")
            continue
        assignment = _escape(f"{name}={value}").replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'Environment="{assignment}"')
    lines += [
        "ExecStart=" + " ".join(quote_word(w) for w in [executable, *pre.command[1:]]),
        "KillMode=control-group",
        "Restart=on-failure",
        "RestartSec=10",
        "TimeoutStopSec=60",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"
