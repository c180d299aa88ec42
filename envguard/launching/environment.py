"""Build the environment a server should start with, from a profile.

The profile's required values override the caller's; variables under strict prefixes that
the profile does not name are dropped; forbidden ones are removed; SPT_NOENV=1 keeps the
workers' environments readable after setproctitle (docs/servers.md).
"""

from __future__ import annotations

from typing import NamedTuple

from envguard.evaluation.rules import accepts
from envguard.knowledge import nccl
from envguard.knowledge.servers import SPT_NOENV
from envguard.profile.schema import Profile, RequiredValue, ValueRule

# What a systemd service starts with, plus what a shell login adds that programs rely on:
# `--clean-env` keeps only these from the caller.
CLEAN_ENV_ALLOWLIST = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "TMPDIR",
        "XDG_RUNTIME_DIR",
        "CUDA_HOME",
        "LD_LIBRARY_PATH",
        "VIRTUAL_ENV",
    }
)


class BuiltEnvironment(NamedTuple):
    environ: dict[str, str]
    injected: dict[str, str]  # values the profile set or changed (before redaction)
    dropped: tuple[str, ...]  # names removed: forbidden, or unlisted in a strict namespace
    unmet: tuple[tuple[str, str], ...] = ()  # (name, why) required values it cannot choose
    neutralised: tuple[str, ...] = ()  # set empty so an NCCL config file cannot set them


def value_for(rule: RequiredValue) -> str | None:
    """The value to inject for a required rule: exact values as written, otherwise the
    first of `one_of`, else `min`, else `max`. None: a pattern alone names no value."""
    if not isinstance(rule, ValueRule):
        return str(rule)
    if rule.one_of:
        return rule.one_of[0]
    if rule.min is not None:
        return str(rule.min)
    if rule.max is not None:
        return str(rule.max)
    return None


def keep_for_clean_env(base: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in base.items() if k in CLEAN_ENV_ALLOWLIST or k.startswith("LC_")}


def build_environment(
    profile: Profile, base: dict[str, str], config_values: dict[str, str] | None = None
) -> BuiltEnvironment:
    """The server's environment. `config_values` are what NCCL config files would add
    (name -> value): a forbidden NCCL variable there is set to "" in the environment, which
    NCCL treats as unset and its setenv(..., 0) never overwrites."""

    env = profile.env
    declared = profile.declared_names()
    dropped = sorted(
        name
        for name in base
        if name in env.forbidden
        or (any(name.startswith(p) for p in env.strict_prefixes) and name not in declared)
    )
    environ = {k: v for k, v in base.items() if k not in dropped}
    injected: dict[str, str] = {}
    unmet: list[tuple[str, str]] = []
    for name, rule in env.required.items():
        current = environ.get(name)
        if current is not None and accepts(name, rule, current):
            continue
        value = value_for(rule)
        if value is None:
            pattern = rule.pattern if isinstance(rule, ValueRule) else rule
            unmet.append((name, f"only a pattern ({pattern}) is given: no value to set"))
            continue
        injected[name] = environ[name] = value
    neutralised = []
    for name in sorted(config_values or {}):
        if nccl.is_nccl_name(name) and name in env.forbidden and name not in environ:
            injected[name] = environ[name] = ""
            neutralised.append(name)
    if environ.get(SPT_NOENV) != "1":
        injected[SPT_NOENV] = environ[SPT_NOENV] = "1"
    return BuiltEnvironment(environ, injected, tuple(dropped), tuple(unmet), tuple(neutralised))
