"""Installed, not only cloned: a real wheel, installed into a fresh virtual environment,
finds its shipped profiles by name and runs `envguard profile list` from any directory."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_directory_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {
        ".".join(p.relative_to(ROOT).parts)
        for p in (ROOT / "envguard").rglob("*")
        if p.is_dir() and p.name != "__pycache__" and any(p.glob("*.py"))
    } | {"envguard"}
    mapped = {name for name in listed if name in config.get("package-dir", {})}
    assert on_disk <= listed, "add these to [tool.setuptools] packages"
    assert "envguard.profiles" in mapped


def test_metadata_says_what_it_is() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"  # SPDX expression, not the deprecated table
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert "Operating System :: POSIX :: Linux" in project["classifiers"]


@pytest.mark.slow
def test_a_wheel_install_finds_its_profiles(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    [wheel] = wheels.glob("envguard-*.whl")
    # The wheel's files in a directory of their own, first on the path: the code and the
    # profiles come from the wheel, the dependencies from this environment.
    target = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(elsewhere), "PYTHONPATH": str(target)}
    envguard = [sys.executable, "-m", "envguard"]
    listing = subprocess.run(
        [*envguard, "profile", "list"], cwd=elsewhere, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    assert "demo                               shipped  demo@1" in listing.stdout
    assert f"{target}/envguard/profiles (shipped)" in listing.stderr
    shown = subprocess.run(
        [*envguard, "profile", "show", "--resolved", "kimi-k2.5-int4-tp8"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert 'NCCL_BUFFSIZE = "16777216"' in shown.stdout  # from the shipped base profile
