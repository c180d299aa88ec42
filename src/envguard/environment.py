"""Build the environment a server should start with, from a profile.

Used by `envguard demo` now and by `envguard launch` (issue: launch): the profile's
required values override the caller's, unlisted variables under strict prefixes are
dropped, forbidden ones removed, and SPT_NOENV=1 keeps workers' environments readable.
"""

from __future__ import annotations

from dataclasses import dataclass

from envguard.errors import ProfileError
from envguard.knowledge.servers import SPT_NOENV
from envguard.profile.schema import Profile, RequiredValue, ValueRule


@dataclass(frozen=True, slots=True)
class BuiltEnvironment:
    environ: dict[str, str]
    injected: dict[str, str]  # values the profile set (or changed)
    dropped: tuple[str, ...]  # names removed: forbidden, or unlisted in a strict namespace


def value_for(name: str, rule: RequiredValue) -> str:
    """The value to inject for a required rule: exact values as written, otherwise the
    first of `one_of`, else `min`, else `max`. A pattern alone names no value."""
    if not isinstance(rule, ValueRule):
        return str(rule)
    if rule.one_of:
        return rule.one_of[0]
    if rule.min is not None:
        return str(rule.min)
    if rule.max is not None:
        return str(rule.max)
    raise ProfileError(
        f"env.required.{name}: a pattern alone does not say which value to set",
        hint=f"give {name} an exact value or one_of in the profile",
    )


def build_environment(profile: Profile, base: dict[str, str]) -> BuiltEnvironment:
    env = profile.env
    declared = profile.declared_names()
    dropped = sorted(
        name
        for name in base
        if name in env.forbidden
        or (any(name.startswith(p) for p in env.strict_prefixes) and name not in declared)
    )
    environ = {k: v for k, v in base.items() if k not in dropped}
    injected = {}
    for name, rule in env.required.items():
        current = environ.get(name)
        from envguard.evaluation.rules import accepts

        if current is None or not accepts(name, rule, current):
            injected[name] = environ[name] = value_for(name, rule)
    if environ.get(SPT_NOENV) != "1":
        injected[SPT_NOENV] = environ[SPT_NOENV] = "1"
    return BuiltEnvironment(environ, injected, tuple(dropped))
