"""Which environment variables are tuning, and which look secret.

DESIGN.md "Secrets": values are shown only for tuning namespaces and names the profile
declares; secret-looking names are always redacted, whatever else says otherwise.
"""

from __future__ import annotations

import re

from envguard.knowledge.servers import SPT_NOENV

TUNING_PREFIXES = (
    "NCCL_",
    "SGLANG_",
    "SGL_",
    "VLLM_",
    "CUDA_",
    "TORCH_",
    "PYTORCH_",
    "NVIDIA_",
    "OMP_",
)

# Substrings of names whose values are credentials. Over-redacting is harmless;
# a leaked token is not.
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|KEY|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION",
    re.IGNORECASE,
)

# Set by envguard itself (launch), so never anybody's secret or private setting.
OWN_NAMES = frozenset({SPT_NOENV})

REDACTED = "<redacted>"
HIDDEN = "<hidden>"


def looks_secret(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def in_tuning_namespace(name: str) -> bool:
    return name.startswith(TUNING_PREFIXES)


def shown(name: str, value: str | None, declared: frozenset[str] = frozenset()) -> str | None:
    """The value of `name` as it may appear in any output.

    Secret-looking names are redacted always; values outside the tuning namespaces and
    the profile's own names are hidden (they may hold anything: paths, hosts, tokens).
    Control characters are escaped so that one value stays on one line.
    """
    if value is None:
        return None
    if looks_secret(name):
        return REDACTED
    if not (in_tuning_namespace(name) or name in declared or name in OWN_NAMES):
        return HIDDEN
    return escape(value)


def escape(value: str) -> str:
    """Escape control characters (newlines, NUL) so a value prints on one line."""
    if value.isprintable():
        return value
    return value.encode("unicode_escape").decode("ascii")


def redact_argv(argv: tuple[str, ...] | list[str]) -> list[str]:
    """A command line safe to print: the value of any secret-looking flag is redacted,
    in both `--api-key VALUE` and `--api-key=VALUE` forms."""
    out: list[str] = []
    hide_next = False
    for token in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif token.startswith("-") and looks_secret(token.split("=", 1)[0]):
            if "=" in token:
                out.append(token.split("=", 1)[0] + "=" + REDACTED)
            else:
                out.append(token)
                hide_next = True
        elif "=" in token and looks_secret(token.split("=", 1)[0]):
            out.append(token.split("=", 1)[0] + "=" + REDACTED)  # VAR=value before a command
        else:
            out.append(token)
    return out
