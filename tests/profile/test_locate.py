"""`-p NAME`: the user's profiles, then the system's, then the shipped ones; paths as given."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from envguard.errors import ProfileError
from envguard.profile.loader import load_profile
from envguard.profile.locate import available, locate
from tests.conftest import PROFILES, run_cli


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    directory = tmp_path / "config" / "envguard" / "profiles"
    directory.mkdir(parents=True)
    return directory


def test_a_shipped_profile_by_name(config_home: Path) -> None:
    assert locate("demo") == PROFILES / "demo.toml"
    assert load_profile("kimi-k2.5-int4-tp8").label == "kimi-k2.5-int4-tp8@4"


def test_the_users_profile_shadows_a_shipped_one(config_home: Path) -> None:
    (config_home / "demo.toml").write_text('schema_version = 1\nname = "mine"\nversion = 7\n')
    assert load_profile("demo").label == "mine@7"
    [demo] = [f for f in available() if f.name == "demo"]
    assert demo.origin == "user"


def test_paths_are_taken_as_given(
    config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").write_text('schema_version = 1\nname = "here"\nversion = 1\n')
    assert locate("demo") == Path("demo")  # an existing file wins over a name
    assert locate("x/demo.toml") == Path("x/demo.toml")


def test_an_unknown_name_says_where_it_looked(config_home: Path) -> None:
    with pytest.raises(ProfileError, match=r"nosuch: no such profile \(looked for nosuch.toml in "):
        locate("nosuch")
    code, _, err = run_cli(CliRunner(), "check", "-p", "nosuch", "--pid", "1")
    assert code == 3
    assert "hint: `envguard profile list` shows the profiles by name" in err


def test_profile_list(config_home: Path) -> None:
    (config_home / "team.toml").write_text('schema_version = 1\nname = "team"\nversion = 2\n')
    (config_home / "broken.toml").write_text("schema_version = 1\n")
    code, out, err = run_cli(CliRunner(), "profile", "list")
    assert code == 0
    assert out.splitlines()[0].startswith(
        "base/rtx-pro-6000-pcie5-8gpu       shipped  rtx-pro-6000"
    )
    assert "team                               user     team@2\n" in out
    assert "broken                             user     invalid: " in out
    assert f"searched: {config_home} (user), /etc/envguard/profiles (system)" in err
