"""What changed between two profiles (each with its `extends` resolved): every requirement
added, removed or changed, with both values, from deepdiff's structured diff. Values of
secret-looking variables and secret options are never shown."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from envguard.knowledge.redaction import REDACTED, is_secret_option, looks_secret, redact_nested
from envguard.profile.schema import Profile, to_data

ChangeKind = Literal["added", "removed", "changed"]
MISSING = "<absent>"
_NOT_COMPARED = ("extends",)  # both sides are resolved: their chains are not requirements


class ProfileChange(NamedTuple):
    change: ChangeKind
    path: str  # "env.required.NCCL_BUFFSIZE"
    before: Any  # MISSING when added
    after: Any  # MISSING when removed


def profile_changes(before: Profile, after: Profile) -> list[ProfileChange]:
    """Every difference, sorted by path. deepdiff is imported only here (~90 ms)."""
    from deepdiff import DeepDiff

    # threshold_to_diff_deeper=0: report the changed key, not a whole changed table.
    tree = DeepDiff(
        _data(before), _data(after), ignore_order=True, view="tree", threshold_to_diff_deeper=0
    )
    found = []
    for kind, levels in tree.items():
        for level in levels:
            path = [str(p) for p in level.path(output_format="list")]
            if kind.startswith("iterable_item") or kind.startswith("set_item"):
                path = path[:-1]  # an item of a list compared as a set: its index means nothing
            change: ChangeKind = (
                "added" if "added" in kind else "removed" if "removed" in kind else "changed"
            )
            old = MISSING if change == "added" else level.t1
            new = MISSING if change == "removed" else level.t2
            found.append(
                ProfileChange(change, ".".join(path), _shown(path, old), _shown(path, new))
            )
    return sorted(found, key=lambda c: (c.path, c.change, str(c.before), str(c.after)))


def _data(profile: Profile) -> dict[str, Any]:
    data: dict[str, Any] = _without_none(to_data(profile))
    for key in _NOT_COMPARED:
        data.pop(key, None)
    return data


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(v) for v in value]
    return value


def _shown(path: list[str], value: Any) -> Any:
    """A value as it may be shown: under env.*.NAME and server.flags.NAME the name decides."""
    if value == MISSING:
        return value
    if len(path) >= 3 and path[0] == "env" and looks_secret(path[2]):
        return REDACTED
    flag = path[2].lstrip("-").replace("-", "_") if len(path) >= 3 else ""
    if path[:2] == ["server", "flags"] and is_secret_option(flag):
        return REDACTED
    return redact_nested(value)
