"""A profile as TOML: what `envguard profile show --resolved` prints."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import tomli_w

from envguard.profile.schema import to_data

if TYPE_CHECKING:
    from envguard.evaluation.profile_diff import ProfileChange
    from envguard.profile.loader import LoadedProfile


def resolved_toml(path: str) -> str:
    """The profile with `extends` merged, as TOML, with the files it came from."""
    from envguard.profile.loader import load_profile

    loaded = load_profile(path, use_cache=False)
    data = without_defaults(to_data(loaded.profile))
    data.pop("extends", None)
    header = "".join(f"# from {name}\n" for name in loaded.chain)
    return header + f"# digest sha256:{loaded.digest}\n" + tomli_w.dumps(data)


def without_defaults(value: Any) -> Any:
    """Drop None values (TOML has no null), empty tables and empty lists (the defaults)."""
    if isinstance(value, dict):
        cleaned = {k: without_defaults(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in cleaned.items() if v not in ({}, [], ()) or k == "required"}
    if isinstance(value, tuple | list):
        return [without_defaults(v) for v in value]
    return value


def profile_toml(document: dict[str, Any], comments: dict[tuple[str, str], str]) -> str:
    """A profile document as TOML (tomli-w), each (table, key) in `comments` followed by
    its comment on the same line. tomli-w writes no comments, and writes a bare key as
    `KEY = value` on a line of its own under its `[table]` header: that line gets it."""
    table = ""
    lines = []
    for line in tomli_w.dumps(document).splitlines():
        if line.startswith("[") and line.endswith("]"):
            table = line.strip("[]")
        key = line.split(" = ", 1)[0] if " = " in line else None
        comment = comments.get((table, key)) if key is not None else None
        lines.append(f"{line}  # {comment}" if comment else line)
    return "\n".join(lines) + "\n"


def diff_text(before: LoadedProfile, after: LoadedProfile, changes: list[ProfileChange]) -> str:
    """`envguard profile diff` for people: one line per change, both values."""
    lines = [f"profile diff: {before.label} ({before.path}) -> {after.label} ({after.path})"]
    width = max((len(c.change) for c in changes), default=0)
    for change in changes:
        if change.change == "added":
            values = _value(change.after)
        elif change.change == "removed":
            values = _value(change.before)
        else:
            values = f"{_value(change.before)} -> {_value(change.after)}"
        lines.append(f"  {change.change:<{width}}  {change.path}: {values}")
    lines.append(f"{len(changes)} changes" if changes else "no differences")
    return "\n".join(lines)


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
