"""profile -> TOML (`profile show --resolved`) -> profile is the identity."""

from __future__ import annotations

import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envguard.profile.loader import load_profile
from envguard.profile.schema import (
    SCHEMA_VERSION,
    EnvSection,
    GpuSection,
    Profile,
    ServerSection,
    ValueRule,
    to_data,
)
from envguard.render.profile import resolved_toml, without_defaults

names = st.from_regex(r"\A(SGLANG|VLLM|MY)_[A-Z][A-Z0-9_]{0,12}\Z")
values = st.text(alphabet=string.printable.replace("\x0b", "").replace("\x0c", ""), max_size=20)
rules = st.builds(
    ValueRule,
    one_of=st.none() | st.lists(values, min_size=1, max_size=3).map(tuple),
    min=st.none() | st.integers(-(2**40), 0),
    max=st.none() | st.integers(1, 2**40),
    pattern=st.none() | st.sampled_from([".*", "[0-9]+", "a|b"]),
).filter(lambda r: any(v is not None for v in (r.one_of, r.min, r.max, r.pattern)))
required = st.dictionaries(names, values | rules, max_size=5)
profiles = st.builds(
    Profile,
    schema_version=st.just(SCHEMA_VERSION),
    name=st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,20}\Z"),
    version=st.integers(1, 10_000),
    description=values,
    # Every other key keeps its default (builds would fill a NamedTuple's defaulted fields).
    extends=st.just(()),
    gpu=st.just(GpuSection()),
    server=st.sampled_from(["sglang", "vllm", "generic"]).map(lambda k: ServerSection(kind=k)),
    env=st.builds(
        EnvSection,
        required=required,
        optional=required,
        forbidden=st.lists(st.from_regex(r"\AOFF_[A-Z]{1,8}\Z"), unique=True).map(tuple),
        strict_prefixes=st.lists(st.sampled_from(["NCCL_", "SGLANG_", "MY_"]), unique=True).map(
            tuple
        ),
    ),
).filter(lambda p: not set(p.env.required) & set(p.env.optional))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profiles)
def test_resolved_toml_loads_back_to_the_same_profile(tmp_path: Path, profile: Profile) -> None:
    import tomli_w

    source = tmp_path / "in.toml"
    data = to_data(profile)
    source.write_text(tomli_w.dumps(without_defaults(data)))
    again = tmp_path / "out.toml"
    again.write_text(resolved_toml(str(source)))
    assert load_profile(again, use_cache=False).profile == profile
