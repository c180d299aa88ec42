"""`envguard profile validate | show --resolved | schema`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.conftest import PROFILES, run_cli


def test_shipped_profiles_are_valid(runner: CliRunner) -> None:
    files = sorted(str(p) for p in PROFILES.rglob("*.toml"))
    code, out, err = run_cli(runner, "profile", "validate", *files)
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == len(files) == 3


def test_show_resolved_prints_the_merged_profile(runner: CliRunner) -> None:
    seed = PROFILES / "kimi-k2.5-int4-tp8.toml"
    code, out, _ = run_cli(runner, "profile", "show", "--resolved", str(seed))
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == [
        f"# from {PROFILES / 'base' / 'rtx-pro-6000-pcie5-8gpu.toml'}",
        f"# from {seed}",
    ]
    assert lines[2].startswith("# digest sha256:")
    assert 'NCCL_BUFFSIZE = "16777216"' in lines
    assert "extends" not in out


def test_schema_is_json_schema_of_the_format(runner: CliRunner) -> None:
    code, out, _ = run_cli(runner, "profile", "schema")
    schema = json.loads(out)
    assert code == 0
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["schema_version", "name", "version"]
    assert schema["additionalProperties"] is False
    rule = schema["$defs"]["ValueRule"]
    assert set(rule["properties"]) == {"one_of", "min", "max", "pattern"}
    assert "strtoll" in rule["properties"]["min"]["description"]


def test_schema_has_every_table_as_an_object_of_its_keys(runner: CliRunner) -> None:
    """The schema's classes are NamedTuples (arrays, to pydantic); the schema is made from
    their mirrors: each is an object of exactly its fields, refusing any other key."""
    from envguard.profile import schema as classes

    _, out, _ = run_cli(runner, "profile", "schema")
    schema = json.loads(out)
    tables = {"Profile": schema, **schema["$defs"]}
    for name, table in tables.items():
        cls = getattr(classes, name)
        assert table["type"] == "object" and table["additionalProperties"] is False
        assert list(table["properties"]) == list(cls._fields)
        assert table["description"] == cls.__doc__.strip().replace("\n    ", "\n")
    gpu = tables["GpuSection"]["properties"]
    assert gpu["count"]["anyOf"][0] == {"minimum": 0, "type": "integer"}
    assert "Gen3" in gpu["pcie_gen_min"]["description"]
