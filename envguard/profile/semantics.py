"""What a profile means, checked beyond its types: names NCCL would not read, values NCCL
would misread, contradictory rules. Pure functions; no pydantic here."""

from __future__ import annotations

import re

from envguard.knowledge import nccl
from envguard.knowledge.redaction import quoted
from envguard.profile.schema import Profile, ValueRule

GPU_FORMAT = 2  # the profile format that added [gpu] (profile.schema, format history)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def problems(profile: Profile) -> list[str]:
    """Problems of one document, as `key.path: message` lines."""
    found: list[str] = []
    env = profile.env
    for table, rules in (("required", env.required), ("optional", env.optional)):
        for name, rule in rules.items():
            where = f"env.{table}.{name}"
            found += _name_problems(where, name)
            if isinstance(rule, ValueRule):
                found += _rule_problems(where, name, rule)
            else:
                found += _value_problems(where, name, str(rule))
    for index, name in enumerate(env.forbidden):
        found += _name_problems(f"env.forbidden[{index}]", name)
    for index, prefix in enumerate(env.strict_prefixes):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
            found.append(f"env.strict_prefixes[{index}]: {prefix!r} is not a variable-name prefix")
    url = profile.server.health_url
    if url is not None and not re.match(r"https?://[^/\s]+", url):
        shown_url = quoted("server.health_url", url)
        found.append(f"server.health_url: {shown_url} is not an http:// URL")
    if profile.server.command and not profile.server.command[0]:
        found.append("server.command[0]: the program is empty")
    found += _gpu_problems(profile)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", profile.name):
        found.append(f"name: {profile.name!r} may hold only letters, digits, '.', '_' and '-'")
    return found


def _gpu_problems(profile: Profile) -> list[str]:
    gpu = profile.gpu
    found = []
    if not gpu.is_empty() and profile.schema_version < GPU_FORMAT:
        found.append(
            f"gpu: [gpu] is profile format {GPU_FORMAT}: write `schema_version = {GPU_FORMAT}`"
        )
    for key, pattern in (("name", gpu.name), ("driver", gpu.driver)):
        if pattern is None:
            continue
        try:
            re.compile(pattern)
        except re.error as exc:
            found.append(f"gpu.{key}: {pattern!r} is not a regular expression ({exc})")
    if gpu.driver_min is not None and not re.fullmatch(r"\d+(\.\d+)*", gpu.driver_min):
        found.append(f"gpu.driver_min: {gpu.driver_min!r} is not a version like 570.86.15")
    return found


def conflicts(profile: Profile) -> list[str]:
    """Contradictions that may only appear once `extends` is merged."""
    env = profile.env
    found = []
    for first, second, names in (
        ("required", "forbidden", set(env.required) & set(env.forbidden)),
        ("optional", "forbidden", set(env.optional) & set(env.forbidden)),
        ("required", "optional", set(env.required) & set(env.optional)),
    ):
        found += [
            f"env: {name} is both {first} and {second} (check the `extends` chain)"
            for name in sorted(names)
        ]
    # Flags are checked once merged: a leaf may give flags for the kind its base names.
    if profile.server.flags or profile.server.forbidden_flags:
        from envguard.profile.flag_rules import profile_flag_problems

        found += profile_flag_problems(profile.server)
    return found


def _name_problems(where: str, name: str) -> list[str]:
    if not _NAME.match(name):
        return [f"{where}: {name!r} is not a valid environment variable name"]
    guess = nccl.suggest(name)
    if guess is not None:
        return [f"{where}: NCCL does not read {name}; did you mean {guess}?"]
    return []


def _value_problems(where: str, name: str, value: str) -> list[str]:
    reading = nccl.read(name, value)
    if reading.problem is not None and name in nccl.TUNING_VARIABLES:
        problem = reading.problem
        return [f"{where}: {quoted(where, value)} is not what it looks like to NCCL: {problem}"]
    return []


def _rule_problems(where: str, name: str, rule: ValueRule) -> list[str]:
    found: list[str] = []
    if rule.one_of is None and rule.min is None and rule.max is None and rule.pattern is None:
        found.append(f"{where}: an empty table requires nothing; give one_of, min, max or pattern")
    if rule.one_of is not None:
        if not rule.one_of:
            found.append(f"{where}.one_of: an empty list accepts no value")
        for index, choice in enumerate(rule.one_of):
            found += _value_problems(f"{where}.one_of[{index}]", name, choice)
    if rule.min is not None and rule.max is not None and rule.min > rule.max:
        found.append(f"{where}: min {rule.min} is greater than max {rule.max}")
    var = nccl.TUNING_VARIABLES.get(name)
    if (rule.min is not None or rule.max is not None) and var and var.kind not in ("int", "bool"):
        found.append(f"{where}: min/max compare integers, but {name} is not an integer variable")
    if rule.pattern is not None:
        try:
            re.compile(rule.pattern)
        except re.error as exc:
            found.append(f"{where}.pattern: not a valid regular expression: {exc}")
    return found
