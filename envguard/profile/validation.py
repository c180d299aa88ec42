"""Schema validation with pydantic, and its errors turned into key paths people can act on.

Imported only when a profile is validated (not on a cache hit): pydantic costs ~75 ms.

The schema's classes are NamedTuples (cheap on check's path, profile/schema.py), and pydantic
reads a NamedTuple as an array. So each gets a mirror here: a dataclass of the same name,
fields, defaults and docstrings, which pydantic validates as a table (extra keys forbidden,
errors located by key) and exports as an object schema. A validated mirror becomes the
NamedTuple again (`_unmirror`).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import inspect
import itertools
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from envguard.knowledge.redaction import quoted
from envguard.profile import schema, semantics
from envguard.profile.schema import FlagRule, Profile, ValueRule, bind_constraints

_STRICT = ConfigDict(extra="forbid", strict=False)


@functools.cache
def _adapter() -> TypeAdapter[Any]:
    return TypeAdapter(_mirror(Profile))


@functools.cache
def _mirror(cls: type) -> type:
    """The pydantic-facing dataclass of one schema NamedTuple (built once, on first use)."""
    bind_constraints()
    hints = typing.get_type_hints(cls, include_extras=True)
    docs = _attribute_docs(cls)
    names, defaults = cls._fields, cls._field_defaults  # type: ignore[attr-defined]
    fields: list[tuple[str, Any, Any]] = []
    for name in names:
        hint = _mirrored(hints[name])
        if name in docs:
            hint = Annotated[hint, Field(description=docs[name])]
        fields.append((name, hint, _field(defaults.get(name, dataclasses.MISSING))))
    return dataclasses.make_dataclass(
        cls.__name__,
        fields,
        namespace={"__doc__": cls.__doc__, "__pydantic_config__": _STRICT},
        frozen=True,
        kw_only=True,
    )


def _field(default: Any) -> Any:
    """The mirror's field for a NamedTuple default, as the dataclasses of old declared it."""
    if isinstance(default, Mapping):  # NO_ENTRIES: each profile gets a table of its own
        return dataclasses.field(default_factory=dict)
    if hasattr(default, "_fields"):  # an empty section: built, not shown in the JSON Schema
        return dataclasses.field(default_factory=functools.partial(_same, default))
    return dataclasses.field(default=default)


def _same(value: Any) -> Any:
    return value


def _mirrored(hint: Any) -> Any:
    """`hint` with every schema NamedTuple in it replaced by its mirror."""
    if isinstance(hint, type) and hint.__module__ == schema.__name__ and hasattr(hint, "_fields"):
        return _mirror(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not args or origin is typing.Literal:
        return hint
    if origin is Annotated:
        return Annotated[(_mirrored(args[0]), *hint.__metadata__)]
    mirrored = tuple(_mirrored(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[mirrored]  # noqa: UP007 - built from a tuple of types
    if origin is Mapping:
        origin = dict  # pydantic builds a dict for a Mapping anyway
    return origin[mirrored]


def _attribute_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string right after it), as pydantic's
    use_attribute_docstrings reads a dataclass's."""
    try:
        source = inspect.getsource(cls)
    except OSError:  # installed without its sources: the schema loses its descriptions only
        return {}
    tree = ast.parse(inspect.cleandoc("\n" + source))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for field, after in itertools.pairwise(body):
        is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and is_doc:
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _unmirror(value: Any) -> Any:
    """A validated mirror as the schema's NamedTuple, all the way down."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        original = getattr(schema, type(value).__name__)
        return original(
            **{f.name: _unmirror(getattr(value, f.name)) for f in dataclasses.fields(value)}
        )
    if isinstance(value, dict):
        return {key: _unmirror(item) for key, item in value.items()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_unmirror(item) for item in value)
    return value


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the profile format, for editors and CI."""
    schema = _adapter().json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "envguard profile"
    return schema


def to_profile(raw: dict[str, Any]) -> Profile:
    profile: Profile = _unmirror(_adapter().validate_python(raw))
    return profile


def problems(raw: dict[str, Any]) -> list[str]:
    """Every schema and meaning problem of one parsed document, as `key.path: message`."""
    found = list(_type_problems(raw))
    if found:
        return found
    try:
        profile = to_profile(raw)
    except ValidationError as exc:
        return _describe(exc, raw)
    return semantics.problems(profile)


def _type_problems(raw: dict[str, Any]) -> list[str]:
    # TOML booleans would pass as integers in pydantic's lax mode: `X = true` is almost
    # always a value that should have been quoted.
    required = raw.get("env", {}).get("required", {}) if isinstance(raw.get("env"), dict) else {}
    if not isinstance(required, dict):
        return []
    return [
        f"env.required.{name}: a boolean is not an environment value; write {name} = "
        f'"{int(value)}" (quoted)'
        for name, value in required.items()
        if isinstance(value, bool)
    ]


# What each union of the schema takes, for a value that fits none of its branches.
_SCALARS = "a string, number or boolean"
_FORMS = {
    ValueRule.__name__: "a string or a table (one_of, min, max, pattern)",
    FlagRule.__name__: "a value (string, number or boolean), a list of them, or a table "
    "(one_of, min, max)",
}


def _describe(exc: ValidationError, raw: dict[str, Any]) -> list[str]:
    """Turn pydantic's errors into `path: message` lines, one per distinct problem."""
    lines: dict[str, str] = {}
    for error in exc.errors():
        path, tags, value, union_path = _clean_location(error["loc"], raw)
        if tags:
            # A union (env values, server flags) tried each branch. A table is meant for the
            # rule branch: only its errors count. Anything else fits no branch: one line.
            rule = (
                FlagRule.__name__ if union_path[:2] == ["server", "flags"] else ValueRule.__name__
            )
            if isinstance(value, dict):
                if tags[0] != rule:
                    continue
                if len(tags) > 1:  # inside the rule, a one_of item fits no scalar type
                    where = _format_path(path)
                    item = _at(raw, path)
                    lines[where] = f"{where}: expected {_SCALARS}, got {quoted(where, item)}"
                    continue
            else:
                where = _format_path(union_path)
                lines[where] = f"{where}: expected {_FORMS[rule]}, got {quoted(where, value)}"
                continue
        where = _format_path(path)
        lines.setdefault(f"{where}|{error['type']}", _message(error, path, where))
    return list(lines.values())


def _message(error: Any, path: list[str | int], where: str) -> str:
    kind = error["type"]
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        key = path[-1]
        allowed = _fields_at(path[:-1])
        close = difflib.get_close_matches(str(key), allowed, n=1)
        guess = f"; did you mean {close[0]!r}?" if close else ""
        return f"{where}: unknown key{guess} (allowed here: {', '.join(allowed)})"
    if kind == "missing":
        return f"{where}: required key is missing"
    if kind in ("tuple_type", "list_type"):
        return f"{where}: expected a list, got {quoted(where, error['input'])}"
    if kind == "dataclass_type":
        return f"{where}: expected a table, got {quoted(where, error['input'])}"
    return f"{where}: {error['msg']}"


def _clean_location(
    loc: tuple[str | int, ...], raw: Any
) -> tuple[list[str | int], list[str], Any, list[str | int]]:
    """Split pydantic's location into the key path in the file and union branch tags.

    Returns the path, the tags, the value found where the first tag appeared (the value
    the union was choosing a branch for) or else the value at the end of the path, and the
    path of that union.
    """
    path: list[str | int] = []
    tags: list[str] = []
    node = raw
    union_value: Any = None
    union_path: list[str | int] = []
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_dict or in_list:
            node = node[part]
            path.append(part)
        elif isinstance(node, dict) and not tags and not _is_tag(part):
            path.append(part)  # a key that is missing or unknown
            node = None
        else:
            if not tags:
                union_value, union_path = node, list(path)
            tags.append(str(part))
    return path, tags, (union_value if tags else node), union_path


def _at(raw: Any, path: list[str | int]) -> Any:
    """The value at `path` in the parsed file (None where there is none)."""
    try:
        for part in path:
            raw = raw[part]
    except (KeyError, IndexError, TypeError):
        return None
    return raw


def _is_tag(part: str | int) -> bool:
    # pydantic names a union's branches by type: ValueRule, str, tuple[union[str,...], ...]
    return isinstance(part, str) and (
        part[:1].isupper() or part in ("str", "int", "float", "bool") or "[" in part
    )


def _format_path(path: list[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _fields_at(path: list[str | int]) -> list[str]:
    """The keys allowed at `path`, walking the schema's types."""
    current: Any = _mirror(Profile)
    for part in path:
        current = _step(current, part)
        if current is None:
            return []
    current = _step(current, None)
    if dataclasses.is_dataclass(current):
        return [f.name for f in dataclasses.fields(current)]
    return []


def _step(hint: Any, part: str | int | None) -> Any:
    """The type found one key below `hint` (part None: unwrap to a dataclass only)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(hint):
            if dataclasses.is_dataclass(arg) or typing.get_origin(arg) is dict:
                return _step(arg, part)
        return None
    if part is None:
        return hint
    if dataclasses.is_dataclass(hint):
        return typing.get_type_hints(hint, include_extras=True).get(str(part))
    if origin is dict:
        return typing.get_args(hint)[1]
    return None
