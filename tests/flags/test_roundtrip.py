"""argv -> parse -> canonical argv -> parse is stable, for random valid flag combinations."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from envguard.flags import catalog
from envguard.flags.catalog import Catalog, Option
from envguard.flags.converters import as_text
from envguard.flags.preprocess import parse

CATALOGS = [catalog.load(s, v) for s in ("sglang", "vllm") for v in catalog.available(s)]
words = st.text(alphabet=string.ascii_letters + string.digits + "/._", min_size=1, max_size=12)


def simple(option: Option) -> bool:
    """Options whose value a random test can make: plain single values, switches, pairs."""
    if option.kind in ("switch", "negatable"):
        return option.action in (None, "EnableDisableAction") and bool(option.strings)
    return (
        option.kind == "value"
        and option.nargs is None
        and option.action is None
        and option.stores is None  # a retired flag: what it stores is not a command-line value
        and bool(option.strings)
        and (option.choices is not None or option.type in ("int", "float", "str"))
    )


def value_for(option: Option) -> st.SearchStrategy[tuple[list[str], Any]]:
    """A spelling of the option (any of its strings) with a valid value, as argv tokens."""
    spellings = st.sampled_from([s for s in option.strings if s not in option.negative])
    if option.kind == "switch":
        return spellings.map(lambda s: ([s], option.const))
    if option.kind == "negatable":
        return st.sampled_from(option.strings).map(lambda s: ([s], s not in option.negative))
    if option.choices is not None:
        values = st.sampled_from([c for c in option.choices if isinstance(c, str | int)])
    elif option.type == "int":
        values = st.integers(0, 10**6)
    elif option.type == "float":
        values = st.floats(0, 1000, allow_nan=False).map(lambda f: round(f, 4))
    else:
        values = words
    return st.tuples(spellings, values).map(lambda sv: ([sv[0], str(sv[1])], sv[1]))


@st.composite
def command_lines(draw: st.DrawFn, cat: Catalog) -> list[str]:
    options = [o for o in cat.options if simple(o)]
    chosen = draw(st.lists(st.sampled_from(options), max_size=8, unique_by=lambda o: o.dest))
    argv: list[str] = ["org/model"] if cat.server == "vllm" else ["--model-path", "org/model"]
    for option in chosen:
        if option.dest in ("model_path", "model_tag", "model", "config"):
            continue
        tokens, _ = draw(value_for(option))
        argv += tokens
    return argv


def canonical(parsed: Any, cat: Catalog) -> list[str]:
    """The parse written back as argv: first long spelling, typed values rendered."""
    argv: list[str] = []
    for dest, flag in parsed.non_default().items():
        option = cat.by_string[flag.option] if flag.option else cat.by_dest[dest]
        if not option.strings:
            argv.insert(0, as_text(flag.value))
        elif option.kind == "negatable":
            positive = [s for s in option.strings if s not in option.negative]
            argv.append(positive[0] if flag.value else sorted(option.negative)[0])
        elif option.kind in ("switch", "const"):
            argv.append(option.long_name)
        else:
            argv += [option.long_name, as_text(flag.value)]
    return argv


@pytest.mark.parametrize("cat", CATALOGS, ids=[c.label for c in CATALOGS])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_parse_is_stable_through_canonical_argv(cat: Catalog, data: st.DataObject) -> None:
    argv = data.draw(command_lines(cat))
    first = parse(cat, argv)
    # A random value may be refused (the server would refuse it too); most must not be.
    assume(first.ok)
    again = parse(cat, canonical(first, cat))
    assert again.ok, again.error
    assert {d: f.value for d, f in again.non_default().items()} == {
        d: f.value for d, f in first.non_default().items()
    }
