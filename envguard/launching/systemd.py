"""A systemd unit that starts the server through `envguard launch` in the foreground.

So a systemd start gets what any envguard launch gets: the profile's environment, the
preflight refusal, the health wait, the check of the live tree and the manifest; signals and
the exit code pass through envguard to systemd. The unit never holds a secret (it is
world-readable): secret arguments and variables come from an EnvironmentFile and are
expanded by systemd in ExecStart.

Quoting follows systemd.syntax(7) and systemd.service(5): `%` specifiers are doubled
everywhere, `$` in ExecStart, and a word with anything but plain characters is quoted with
C-style escapes (a newline in an inline --chat-template becomes `\\n`, not a broken unit).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from envguard import __version__
from envguard.knowledge.redaction import REDACTED, recorded, redact_argv
from envguard.launching.preflight import Preflight, preflight
from envguard.launching.report import Echo
from envguard.launching.supervise import executable
from envguard.profile.loader import LoadedProfile, load_profile

_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _specifiers(text: str) -> str:
    return text.replace("%", "%%")


def quote_word(word: str) -> str:
    """One ExecStart argument, quoted the way systemd splits command lines."""
    if word and _PLAIN.fullmatch(word):
        return _specifiers(word).replace("$", "$$")
    body = "".join(_ESCAPES.get(c, c) for c in _specifiers(word).replace("$", "$$"))
    return f'"{body}"'


def _assignment(name: str, value: str) -> str:
    """`"NAME=value"` for Environment=: quoted, C escapes, `%` doubled (`$` is not expanded
    there, so it stays as it is)."""
    body = "".join(_ESCAPES.get(c, c) for c in _specifiers(f"{name}={value}"))
    return f'"{body}"'


def one_line(text: str) -> str:
    """A value for a one-line setting (Description=): no newline may end the setting."""
    return _specifiers(" ".join(text.split()))


def print_systemd(profile: str, command: list[str], force: bool, echo: Echo) -> str:
    """The unit for `envguard launch -p PROFILE -- COMMAND`; refused as launch would refuse."""
    from envguard.launching.run import refuse_or_force, resolve_command

    loaded = load_profile(profile)
    argv = resolve_command(loaded, command)
    # The server's environment as launch will build it from this caller's: its PATH finds
    # the server's interpreter (the server's venv, not envguard's).
    # GPUs are checked when the service starts (its envguard launch), not when it is written.
    pre = preflight(loaded.profile, argv, dict(os.environ), skip_gpu=True)
    if pre.findings:
        refuse_or_force(loaded, pre, force, echo, what="write its unit")
    return unit(loaded, pre, Path.cwd())


def envguard_command() -> list[str]:
    """This envguard, by absolute path: its console script, else its interpreter."""
    script = Path(sys.executable).with_name("envguard")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "envguard"]


def unit(loaded: LoadedProfile, pre: Preflight, cwd: Path) -> str:
    server = executable(pre.command[0], pre.built.environ)
    profile = loaded.profile
    name = profile.name
    secrets_file = f"/etc/envguard/{name}.env"
    server_words, secret_names = _secret_free_command([str(Path(server)), *pre.command[1:]])
    secret_names += [n for n, v in sorted(pre.built.injected.items()) if recorded(n, v) != v]
    launch = [
        *envguard_command(),
        "launch",
        "-p",
        str(Path(loaded.path).resolve()),
        "--pid-file",
        f"/run/envguard/{name}.pid",
        "--",
    ]
    lines = [
        f"# Written by envguard {__version__} from {loaded.path} "
        f"({loaded.label}, sha256:{loaded.digest[:16]}).",
        "# It starts the server through envguard launch (in the foreground): the profile's",
        "# environment, the refusal of a contradicting command, the health wait, the check and",
        f"# the manifest /run/envguard/{name}.manifest.json. Regenerate it when the profile",
        "# changes.",
        "[Unit]",
        f"Description={one_line(loaded.label)}: {one_line(profile.description or name)}",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"WorkingDirectory={quote_word(str(cwd))}",
        "RuntimeDirectory=envguard",
        "RuntimeDirectoryPreserve=yes",
    ]
    if secret_names:
        lines += [
            "# Secrets never go into a unit file (anyone may read it): put "
            + ", ".join(secret_names),
            f"# into {secrets_file} (NAME=value lines, owned by root, mode 0600).",
            f"EnvironmentFile={secrets_file}",
        ]
    # The profile's values are injected by envguard launch itself; what the caller's
    # environment added beyond the profile is kept here (secrets excepted).
    for name_, value in sorted(pre.built.environ.items()):
        if name_ in pre.built.injected or name_ in secret_names or not _carried(name_):
            continue
        lines.append(f"Environment={_assignment(name_, value)}")
    lines += [
        "ExecStart=" + " ".join([*(quote_word(w) for w in launch), *server_words]),
        "KillMode=control-group",
        "Restart=on-failure",
        "RestartSec=10",
        "TimeoutStartSec=infinity",  # envguard waits for health itself (--timeout)
        "TimeoutStopSec=60",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"


# What the server needs from the caller's environment to find itself: its PATH (the
# server's venv), its libraries and home. Anything else of the caller's stays out.
_CARRIED = frozenset({"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL"})


def _carried(name: str) -> bool:
    return name in _CARRIED


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
