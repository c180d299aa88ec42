"""Loading real profile files: extends, merging, the shipped profiles, the cache."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envguard.profile import validation
from envguard.profile.loader import load_profile
from envguard.profile.schema import ValueRule
from tests.conftest import PROFILES, TUNED

HEAD = 'schema_version = 1\nname = "{name}"\nversion = {version}\n'


def test_seed_profile_holds_the_tuned_setup() -> None:
    loaded = load_profile(PROFILES / "kimi-k2.5-int4-tp8.toml")
    profile = loaded.profile
    assert loaded.label == "kimi-k2.5-int4-tp8@4"
    assert profile.server.kind == "sglang"
    assert profile.env.required == {**TUNED, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    assert profile.env.strict_prefixes == ("NCCL_",)
    assert "CUDA_LAUNCH_BLOCKING" in profile.env.forbidden
    assert profile.env.optional["NCCL_DEBUG"] == ValueRule(one_of=("VERSION", "WARN"))
    assert [Path(p).name for p in loaded.chain] == [
        "rtx-pro-6000-pcie5-8gpu.toml",
        "kimi-k2.5-int4-tp8.toml",
    ]


def test_extends_later_wins_leaf_wins_last_lists_accumulate(
    write_profile: Callable[..., Path],
) -> None:
    write_profile(
        HEAD.format(name="a", version=1)
        + '[env]\nforbidden = ["A_OFF"]\n[env.required]\nX = "a"\nY = "a"\nZ = { min = 1 }\n',
        "base/a.toml",
    )
    write_profile(
        HEAD.format(name="b", version=1)
        + '[env]\nforbidden = ["B_OFF", "A_OFF"]\n[env.required]\nY = "b"\n',
        "base/b.toml",
    )
    leaf = write_profile(
        HEAD.format(name="leaf", version=3)
        + 'extends = ["base/a.toml", "base/b.toml"]\n'
        + '[env.required]\nX = "leaf"\nZ = { max = 5 }\n'
    )
    profile = load_profile(leaf).profile
    assert (profile.name, profile.version, profile.extends) == ("leaf", 3, ())
    assert profile.env.required == {"X": "leaf", "Y": "b", "Z": ValueRule(max=5)}
    assert profile.env.forbidden == ("A_OFF", "B_OFF")


def test_diamond_extends_reads_the_shared_base_once(write_profile: Callable[..., Path]) -> None:
    write_profile(HEAD.format(name="root", version=1) + '[env.required]\nR = "1"\n', "root.toml")
    write_profile(HEAD.format(name="l", version=1) + 'extends = ["root.toml"]\n', "l.toml")
    write_profile(HEAD.format(name="r", version=1) + 'extends = ["root.toml"]\n', "r.toml")
    top = write_profile(HEAD.format(name="t", version=1) + 'extends = ["l.toml", "r.toml"]\n')
    loaded = load_profile(top)
    assert [Path(p).name for p in loaded.chain] == ["root.toml", "l.toml", "r.toml", "profile.toml"]
    assert loaded.profile.env.required == {"R": "1"}


def test_cache_skips_validation_until_a_file_of_the_chain_changes(
    write_profile: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = write_profile(HEAD.format(name="b", version=1) + '[env.required]\nX = "1"\n', "b.toml")
    leaf = write_profile(HEAD.format(name="l", version=1) + 'extends = ["b.toml"]\n')
    first = load_profile(leaf)

    def refuse(raw: object) -> object:
        raise AssertionError("validated again although nothing changed")

    monkeypatch.setattr(validation, "to_profile", refuse)
    assert load_profile(leaf) == first
    base.write_text(base.read_text().replace('X = "1"', 'X = "2"'))
    monkeypatch.undo()
    assert load_profile(leaf).profile.env.required == {"X": "2"}


def test_a_corrupt_cache_entry_is_a_miss(write_profile: Callable[..., Path]) -> None:
    from envguard.cachedir import cache_dir

    leaf = write_profile(HEAD.format(name="l", version=1))
    load_profile(leaf)
    directory = cache_dir("profiles")
    assert directory is not None
    for entry in directory.iterdir():
        entry.write_bytes(b"not JSON")
    assert load_profile(leaf).label == "l@1"


def test_a_cached_profile_loads_without_pydantic(
    write_profile: Callable[..., Path], tmp_path: Path
) -> None:
    """`envguard check` from cron must not pay for pydantic (~75 ms) on an unchanged profile."""
    leaf = write_profile(HEAD.format(name="l", version=1) + '[env.required]\nNCCL_PROTO = "LL"\n')
    probe = (
        "import sys; from envguard.profile.loader import load_profile; "
        f"p = load_profile({str(leaf)!r}); "
        "print(p.label, 'pydantic' in sys.modules, 'tomllib' in sys.modules)"
    )
    env = {"ENVGUARD_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    cold = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    warm = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert cold.stdout == "l@1 True True\n"
    assert warm.stdout == "l@1 False False\n"
