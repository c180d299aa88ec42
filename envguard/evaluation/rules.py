"""Does a live value satisfy a profile rule? Compared the way NCCL reads values."""

from __future__ import annotations

import re

from envguard.knowledge import nccl
from envguard.profile.schema import RequiredValue, ValueRule


def describe(rule: RequiredValue) -> str:
    """The rule as people read it: `LL`, `one of Ring, Tree`, `>= 8388608`, ..."""
    if not isinstance(rule, ValueRule):
        return str(rule)
    parts = []
    if rule.one_of is not None:
        parts.append("one of " + ", ".join(rule.one_of))
    if rule.min is not None and rule.max is not None:
        parts.append(f"{rule.min}..{rule.max}")
    elif rule.min is not None:
        parts.append(f">= {rule.min}")
    elif rule.max is not None:
        parts.append(f"<= {rule.max}")
    if rule.pattern is not None:
        parts.append(f"matches /{rule.pattern}/")
    return " and ".join(parts)


def integer_value(name: str, raw: str) -> int | None:
    """The integer NCCL uses for `raw` (strtoll; clamped where NCCL clamps)."""
    value = nccl.read(name, raw).value if name in nccl.TUNING_VARIABLES else None
    if value is None:
        value = nccl.read_int(raw).value
    return value if isinstance(value, int) else None


def accepts(name: str, rule: RequiredValue, raw: str) -> bool:
    """Whether `raw` satisfies `rule`, with NCCL's reading for NCCL's variables
    (`0x1000000` equals `16777216` for NCCL_BUFFSIZE; `ll` equals `LL` for NCCL_PROTO)."""
    if not isinstance(rule, ValueRule):
        return nccl.same_setting(name, raw, str(rule))
    if rule.one_of is not None and not any(nccl.same_setting(name, raw, c) for c in rule.one_of):
        return False
    if rule.min is not None or rule.max is not None:
        value = integer_value(name, raw)
        if value is None:
            return False
        if rule.min is not None and value < rule.min:
            return False
        if rule.max is not None and value > rule.max:
            return False
    return rule.pattern is None or re.fullmatch(rule.pattern, raw) is not None
