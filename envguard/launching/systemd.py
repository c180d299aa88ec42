"""A systemd unit equivalent to `envguard launch`: the profile's environment as
Environment= lines, the command as ExecStart, the whole cgroup stopped together."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from envguard import __version__
from envguard.errors import EnvguardError
from envguard.knowledge.redaction import REDACTED, recorded, redact_argv
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
    secrets_file = f"/etc/envguard/{profile.name}.env"
    words, secret_names = _secret_free_command([executable, *pre.command[1:]])
    secret_names += [n for n, v in sorted(pre.built.injected.items()) if recorded(n, v) != v]
    if secret_names:
        lines += [
            "# Secrets never go into a unit file (anyone may read it): put "
            + ", ".join(secret_names),
            f"# into {secrets_file} (NAME=value lines, owned by root, mode 0600).",
            f"EnvironmentFile={secrets_file}",
        ]
    for name, value in sorted(pre.built.injected.items()):
        if name in secret_names:
            continue
        assignment = _escape(f"{name}={value}").replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'Environment="{assignment}"')
    lines += [
        "ExecStart=" + " ".join(words),
        "KillMode=control-group",
        "Restart=on-failure",
        "RestartSec=10",
        "TimeoutStopSec=60",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"


def _secret_free_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """ExecStart words with every secret argument replaced by `${ENVGUARD_SECRET_...}`,
    which systemd expands from the EnvironmentFile when it starts the service; and the
    names of those variables."""
    words: list[str] = []
    names: list[str] = []
    safe = redact_argv(argv)
    for index, (original, redacted) in enumerate(zip(argv, safe, strict=True)):
        if original == redacted:
            words.append(quote_word(original))
            continue
        flag, equals, _ = original.partition("=")
        if equals and original.startswith("-") and redacted == f"{flag}={REDACTED}":
            name = _variable(flag, index)
            words.append(quote_word(f"{flag}=") + f"${{{name}}}")
        else:
            before = argv[index - 1] if index and argv[index - 1].startswith("-") else ""
            name = _variable(before, index)
            words.append(f"${{{name}}}")
        names.append(name)
    return words, names


def _variable(flag: str, index: int) -> str:
    stem = re.sub(r"[^A-Za-z0-9]+", "_", flag).strip("_").upper()
    return f"ENVGUARD_SECRET_{stem or f'ARG{index}'}"
