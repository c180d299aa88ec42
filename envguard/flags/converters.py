"""The value converters the servers' parsers use, by the name the catalog gives them.

Each one behaves like the server's own function (same results, same errors), so that a
value envguard reads from a command line is the value the server got. Sources:
sglang.srt.utils.common (human_readable_int, nullable_str), vllm.utils.argparse_utils
(human_readable_int, optional_type, parse_type, union_dict_and_str), vllm.engine.arg_utils.
A converter envguard does not know leaves the text as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Converter = Callable[[str], Any]


def sglang_human_readable_int(value: str) -> int:
    # SI suffixes (k M G T, decimals allowed) and IEC (Ki Mi Gi Ti, integers only);
    # case-sensitive.
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        import argparse  # here: a check of a cached launch line converts no suffixed value
        from decimal import Decimal

        number, suffix = match.groups()
        iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'. "
                    f"Use an integer IEC value such as '{int(Decimal(number))}{suffix}', "
                    f"or an SI value such as '{number}{suffix[0]}'."
                )
            return int(number) * iec[suffix]
        return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])
    return int(value)


sglang_human_readable_int.__name__ = "human_readable_int"


def vllm_human_readable_int(value: str) -> int:
    # Lowercase suffixes are decimal (k = 1000), uppercase binary (K = 1024, integers only).
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        number, suffix = match.groups()
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        try:
            return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
        except ValueError as exc:
            import argparse

            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean "
                f"to use {number}{suffix.lower()} instead?"
            ) from exc
    return int(value)


vllm_human_readable_int.__name__ = "human_readable_int"


def vllm_human_readable_int_or_auto(value: str) -> int:
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return vllm_human_readable_int(value)


vllm_human_readable_int_or_auto.__name__ = "human_readable_int_or_auto"


def nullable_str(value: str) -> str | None:
    return None if not value or value == "None" else value


def _parse(inner: Converter, described: str) -> Converter:
    """vLLM's parse_type: a ValueError becomes an ArgumentTypeError naming the type."""

    def _parse_type(value: str) -> Any:
        try:
            return inner(value)
        except ValueError as exc:
            import argparse

            raise argparse.ArgumentTypeError(
                f"Value {value} cannot be converted to {described}."
            ) from exc

    return _parse_type


def _optional(inner: Converter, described: str) -> Converter:
    """vLLM's optional_type: "" and "None" mean None."""
    parse = _parse(inner, described)

    def _optional_type(value: str) -> Any:
        return None if value in ("", "None") else parse(value)

    return _optional_type


def json_object_or_str(value: str) -> Any:
    if not re.match(r"(?s)^\s*{.*}\s*$", value):
        return str(value)
    return _optional(json.loads, "json.loads")(value)


def none_is_empty(value: str) -> str:
    return "" if value.lower() == "none" else value


def lower_underscore(value: str) -> str:
    return value.lower().replace("-", "_")


def int_or_str_list(value: str) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in (part.strip() for part in value.split(","))]


_SIMPLE: dict[str, tuple[Converter, str]] = {
    "int": (int, "<class 'int'>"),
    "float": (float, "<class 'float'>"),
    "str": (str, "<class 'str'>"),
    "json": (json.loads, "json.loads"),
    "nullable_str": (nullable_str, "nullable_str"),
    "sglang_human_readable_int": (sglang_human_readable_int, "human_readable_int"),
    "vllm_human_readable_int": (vllm_human_readable_int, "human_readable_int"),
    "vllm_human_readable_int_or_auto": (vllm_human_readable_int_or_auto, "human_readable_int"),
    "json_object_or_str": (json_object_or_str, "union_dict_and_str"),
    "none_is_empty": (none_is_empty, "parse_reasoning_parser"),
    "lower_underscore": (lower_underscore, "<lambda>"),
    "int_or_str_list": (int_or_str_list, "<lambda>"),
}


def converter(name: str | None) -> Converter | None:
    """The converter for a catalog type name; None for no conversion (argparse keeps str)."""
    if name is None:
        return None
    if name.startswith("optional:"):
        inner = converter(name.removeprefix("optional:").removeprefix("parse:")) or str
        return _optional(inner, _SIMPLE.get(name.split(":")[-1], (str, name))[1])
    if name.startswith("parse:"):
        inner = converter(name.removeprefix("parse:")) or str
        return _parse(inner, _SIMPLE.get(name.removeprefix("parse:"), (str, name))[1])
    if name in _SIMPLE:
        return _SIMPLE[name][0]
    return None  # raw:<name>: an unknown converter; the text is kept as given


def as_text(value: Any) -> str:
    """A typed value written the way people write it on a command line."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return " ".join(as_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)
