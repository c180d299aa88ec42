"""A profile as TOML: what `envguard profile show --resolved` prints."""

from __future__ import annotations

import dataclasses
from typing import Any

import tomli_w


def resolved_toml(path: str) -> str:
    """The profile with `extends` merged, as TOML, with the files it came from."""

    from envguard.profile.loader import load_profile

    loaded = load_profile(path, use_cache=False)
    data = without_defaults(dataclasses.asdict(loaded.profile))
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
