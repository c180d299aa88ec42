"""What a profile's [server.flags] mean for one catalog: names resolved to destinations,
values typed the way the server types them."""

from __future__ import annotations

from typing import Any, NamedTuple

from envguard.flags.catalog import Catalog, Option, choose_version, load
from envguard.flags.converters import as_text, converter
from envguard.profile.schema import FlagRule, FlagValue, ServerSection


class FlagSpecError(ValueError):
    """A profile flag that this catalog cannot accept."""


class Expectation(NamedTuple):
    option: Option
    key: str  # as the profile wrote it
    value: Any = None  # the typed value expected (when not a rule)
    one_of: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    is_rule: bool = False

    def accepts(self, value: Any) -> bool:
        if not self.is_rule:
            return _same(value, self.value)
        if self.one_of is not None and not any(_same(value, c) for c in self.one_of):
            return False
        if self.minimum is not None or self.maximum is not None:
            if not isinstance(value, int | float) or isinstance(value, bool):
                return False
            if self.minimum is not None and value < self.minimum:
                return False
            if self.maximum is not None and value > self.maximum:
                return False
        return True

    def describe(self) -> str:
        if not self.is_rule:
            return as_text(self.value)
        parts = []
        if self.one_of is not None:
            parts.append("one of " + ", ".join(as_text(v) for v in self.one_of))
        if self.minimum is not None:
            parts.append(f">= {as_text(self.minimum)}")
        if self.maximum is not None:
            parts.append(f"<= {as_text(self.maximum)}")
        return " and ".join(parts)


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right or (left == right and type(left) is type(right))
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(
            _same(a, b) for a, b in zip(left, right, strict=True)
        )
    return bool(left == right)


def catalog_for(server: ServerSection, version: str | None = None) -> tuple[Catalog, str | None]:
    """The catalog for the profile's server kind: `version` (detected) or the profile's own."""
    assert server.kind in ("sglang", "vllm")
    chosen, warning = choose_version(server.kind, version or server.version)
    return load(server.kind, chosen), warning


def resolve(catalog: Catalog, key: str) -> Option:
    option = catalog.resolve_name(key)
    if option is None or option.kind == "help":
        names = sorted({s for o in catalog.options for s in o.strings if s.startswith("--")})
        spelled = f"--{key.lstrip('-').replace('_', '-')}"
        prefixed = [n for n in names if n.startswith(spelled)]
        if prefixed:
            # The server would take the abbreviation, but a profile must not: a new option
            # can make it ambiguous (--cuda-graph-max-bs in sglang 0.5.23).
            raise FlagSpecError(
                f"{key!r} is an abbreviation ({', '.join(prefixed[:3])}); write the option in full"
            )
        import difflib  # ~1.5 ms: only for a flag the catalog does not have

        guess = difflib.get_close_matches(spelled, names, n=1)
        hint = f"; did you mean {guess[0]}?" if guess else ""
        raise FlagSpecError(f"{catalog.label} has no option {key!r}{hint}")
    return option


def expectation(catalog: Catalog, key: str, spec: FlagValue) -> Expectation:
    option = resolve(catalog, key)
    if isinstance(spec, FlagRule):
        one_of = tuple(typed(option, v) for v in spec.one_of) if spec.one_of is not None else None
        return Expectation(
            option, key, one_of=one_of, minimum=spec.min, maximum=spec.max, is_rule=True
        )
    return Expectation(option, key, value=typed(option, spec))


def typed(option: Option, value: Any) -> Any:
    """`value` as the server would hold it after parsing, or FlagSpecError saying why not."""
    name = option.long_name
    if option.kind in ("switch", "const", "negatable"):
        if not isinstance(value, bool):
            raise FlagSpecError(f"{name} takes no value: write true (given) or false (not given)")
        if option.kind == "negatable":
            return value
        return option.const if value else option.default
    if option.kind == "rejects":
        raise FlagSpecError(f"{name} is rejected by {option.message or 'the server'}")
    if option.nargs in ("+", "*") or isinstance(option.nargs, int) or option.kind == "append":
        items = list(value) if isinstance(value, list | tuple) else [value]
        return [_typed_one(option, item) for item in items]
    if isinstance(value, list | tuple):
        raise FlagSpecError(f"{name} takes one value, not a list")
    return _typed_one(option, value)


def _typed_one(option: Option, value: Any) -> Any:
    if isinstance(value, bool):
        raise FlagSpecError(f"{option.long_name} takes a value; true/false are for switches")
    convert = converter(option.type)
    if isinstance(value, str) and convert is not None:
        try:
            value = convert(value)
        except (ValueError, TypeError) as exc:
            raise FlagSpecError(
                f"{option.long_name}: {value!r} is not what the server accepts ({exc})"
            ) from None
    elif option.type == "int" and isinstance(value, float):
        raise FlagSpecError(f"{option.long_name} takes an integer, not {value}")
    elif option.type == "str" and not isinstance(value, str):
        value = str(value)
    if option.choices is not None and value not in option.choices:
        shown = ", ".join(as_text(c) for c in option.choices)
        raise FlagSpecError(f"{option.long_name}: {as_text(value)!r} is not one of {shown}")
    return value


def profile_flag_problems(server: ServerSection) -> list[str]:
    """Problems with [server.flags] / forbidden_flags, as `key.path: message` lines."""
    if server.kind == "generic":
        return ["server.flags: flags are checked for kind sglang or vllm; set server.kind"]
    catalog, _ = catalog_for(server)
    found = []
    for key, spec in server.flags.items():
        try:
            expectation(catalog, key, spec)
        except FlagSpecError as exc:
            found.append(f"server.flags.{key}: {exc}")
    for index, key in enumerate(server.forbidden_flags):
        try:
            resolve(catalog, key)
        except FlagSpecError as exc:
            found.append(f"server.forbidden_flags[{index}]: {exc}")
    return found
