"""The profile cache holds data, never code, and trusts only the user's own private files."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from envguard.profile import cache
from envguard.profile.loader import load_profile
from envguard.profile.schema import FlagRule, Profile, ServerSection
from tests.conftest import PROFILES
from tests.profile.test_roundtrip import profiles

PROFILE = 'schema_version = 1\nname = "c"\nversion = 1\n[env.required]\nNCCL_PROTO = "LL"\n'


class Planted:
    """What an attacker would put in a pickle cache: code that runs on load."""

    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("touch PWNED",))


def entry_for(profile: Path) -> Path:
    load_profile(profile)  # fills the cache
    [entry] = [
        p
        for p in Path(os.environ["ENVGUARD_CACHE_DIR"], "profiles").iterdir()
        if p.suffix == ".json"
    ]
    return entry


def loads_without_validation(profile: Path, cache_dir: Path, cwd: Path) -> str:
    """Load in a fresh process; say whether pydantic was needed (a miss) or not (a hit)."""
    probe = (
        "import sys; from envguard.profile.loader import load_profile; "
        f"p = load_profile({str(profile)!r}); print(p.label, 'pydantic' in sys.modules)"
    )
    env = {"ENVGUARD_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=cwd, capture_output=True, text=True
    )
    return result.stdout + result.stderr


def test_a_planted_pickle_never_runs(write_profile: Callable[..., Path], tmp_path: Path) -> None:
    profile = write_profile(PROFILE)
    cache_dir = tmp_path / "c"
    assert loads_without_validation(profile, cache_dir, tmp_path) == "c@1 True\n"
    for entry in (cache_dir / "profiles").iterdir():
        entry.write_bytes(pickle.dumps(Planted()))
        entry.with_suffix(".pickle").write_bytes(pickle.dumps(Planted()))
    assert loads_without_validation(profile, cache_dir, tmp_path) == "c@1 True\n"
    assert not (tmp_path / "PWNED").exists()
    # ... and the miss wrote a good entry again: the next load is warm.
    assert loads_without_validation(profile, cache_dir, tmp_path) == "c@1 False\n"


def test_entries_are_private(write_profile: Callable[..., Path]) -> None:
    entry = entry_for(write_profile(PROFILE))
    assert entry.stat().st_mode & 0o777 == 0o600
    assert json.loads(entry.read_text())["profile"]["name"] == "c"


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_an_entry_others_can_write_is_ignored(
    write_profile: Callable[..., Path], mode: int
) -> None:
    profile = write_profile(PROFILE)
    entry = entry_for(profile)
    document = json.loads(entry.read_text())
    document["profile"]["env"]["required"]["NCCL_PROTO"] = "Simple"  # a tampered answer
    entry.write_text(json.dumps(document))
    entry.chmod(mode)
    assert load_profile(profile).profile.env.required == {"NCCL_PROTO": "LL"}


def test_an_entry_of_another_user_is_ignored(write_profile: Callable[..., Path]) -> None:
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    profile = write_profile(PROFILE)
    entry = entry_for(profile)
    document = json.loads(entry.read_text())
    document["profile"]["env"]["required"]["NCCL_PROTO"] = "Simple"
    entry.write_text(json.dumps(document))
    os.chown(entry, 65534, 65534)
    assert load_profile(profile).profile.env.required == {"NCCL_PROTO": "LL"}


def test_a_symlinked_entry_is_ignored(write_profile: Callable[..., Path], tmp_path: Path) -> None:
    profile = write_profile(PROFILE)
    entry = entry_for(profile)
    document = json.loads(entry.read_text())
    document["profile"]["env"]["required"]["NCCL_PROTO"] = "Simple"
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(document))
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert load_profile(profile).profile.env.required == {"NCCL_PROTO": "LL"}


@pytest.mark.parametrize("junk", [b"", b"{", b"[]", b'{"envguard": 1}', b"\xff" * 10])
def test_a_broken_entry_is_a_miss(write_profile: Callable[..., Path], junk: bytes) -> None:
    profile = write_profile(PROFILE)
    entry_for(profile).write_bytes(junk)
    assert load_profile(profile).label == "c@1"


@pytest.mark.parametrize("path", sorted(PROFILES.rglob("*.toml")), ids=lambda p: p.name)
def test_shipped_profiles_round_trip_through_the_cache(path: Path) -> None:
    loaded = load_profile(path, use_cache=False)
    assert cache.profile_from_data(cache.profile_to_data(loaded.profile)) == loaded.profile


def test_flag_rules_and_lists_round_trip() -> None:
    profile = Profile(
        schema_version=1,
        name="f",
        version=1,
        server=ServerSection(
            kind="sglang",
            flags={"tp-size": 8, "cuda-graph-bs": (1, 2, 4), "mem": FlagRule(min=0.5, max=0.9)},
        ),
    )
    data = json.loads(json.dumps(cache.profile_to_data(profile)))
    assert cache.profile_from_data(data) == profile


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profiles)
def test_any_profile_round_trips_through_json(profile: Profile) -> None:
    data = json.loads(json.dumps(cache.profile_to_data(profile)))
    assert cache.profile_from_data(data) == profile
