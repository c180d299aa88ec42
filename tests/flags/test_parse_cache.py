"""A cached launch line parses exactly as a fresh one, every time, and no entry holds a secret."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envguard.cachedir import cache_dir
from envguard.flags import catalog, parse_cache, preprocess
from tests.flags.test_corpus import CORPUS, DATA

SECRET = "sk-live-" + "9f8e7d6c5b4a" * 3


def entries() -> list[Path]:
    directory = cache_dir("launch-lines")
    assert directory is not None
    return sorted(directory.glob("*.json")) if directory.exists() else []


def no_parse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("parsed again: the cache should have answered")


def read_data(path: str) -> str:
    return (DATA / path).read_text()


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_a_cached_parse_is_the_parse(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every corpus line (errors included): the first call parses, the second answers from
    its entry (without parsing) and both equal a parse without the cache."""
    cat = catalog.load(case["server"], case["version"])
    argv = shlex.split(case["argv"])
    fresh = preprocess.parse(cat, argv, read_data)
    assert parse_cache.parse(cat, argv, read_data) == fresh
    stored = entries()
    assert len(stored) == (1 if fresh.ok else 0)  # a line the server refuses is not kept
    if stored:
        monkeypatch.setattr(preprocess, "parse", no_parse)
    assert parse_cache.parse(cat, argv, read_data) == fresh


@pytest.mark.parametrize(
    ("server", "argv"),
    [
        ("sglang", ["--model-path", "m", "--api-key", SECRET]),
        ("sglang", ["--model-path", "m", f"--api-key={SECRET}"]),
        ("sglang", ["--model-path", f"https://user:{SECRET}@hub.example/m"]),
        ("vllm", ["serve", "m", "--api-key", SECRET, "other-" + SECRET]),
    ],
)
def test_an_entry_holds_no_secret(
    server: str, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret is stored as where it stands on the command line, and read from there."""
    cat = catalog.load(server, "0.5.23" if server == "sglang" else "0.33.0")
    args = argv[1:] if server == "vllm" else argv
    fresh = preprocess.parse(cat, args)
    assert fresh.ok, fresh.error
    parse_cache.parse(cat, args)
    [entry] = entries()
    assert SECRET not in entry.read_text()
    monkeypatch.setattr(preprocess, "parse", no_parse)
    assert parse_cache.parse(cat, args) == fresh


@pytest.mark.parametrize(
    "other",
    [
        ["--model-path", "m", "--api-key", "-not-a-value"],  # only the secret differs
        ["--model-path", "m", "--api-key", SECRET, "--tp", "2"],
        ["--model-path", "n", "--api-key", SECRET],
    ],
)
def test_what_an_entry_holds_decides(other: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command line gets the same entry name here: the entry's redacted command line
    and its digest of the secrets tell them apart (a secret's text can change a parse: a
    value starting with "-" is an option to argparse)."""
    monkeypatch.setattr(parse_cache.zlib, "crc32", lambda data: 0)
    cat = catalog.load("sglang", "0.5.23")
    parse_cache.parse(cat, ["--model-path", "m", "--api-key", SECRET])
    assert parse_cache.parse(cat, other) == preprocess.parse(cat, other)


def test_a_secret_from_a_config_file_is_not_cached(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text(f"model-path: m\napi-key: {SECRET}\n")
    cat = catalog.load("sglang", "0.5.23")
    parsed = parse_cache.parse(cat, ["--config", str(config)])
    assert parsed.ok and parsed.values["api_key"].value == SECRET
    assert entries() == []


def test_a_changed_config_file_is_read_again(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("model-path: m\ntp-size: 2\n")
    cat = catalog.load("sglang", "0.5.23")
    argv = ["--config", str(config)]
    assert parse_cache.parse(cat, argv).values["tp_size"].value == 2
    config.write_text("model-path: m\ntp-size: 4\n")
    assert parse_cache.parse(cat, argv).values["tp_size"].value == 4
    config.unlink()
    assert not parse_cache.parse(cat, argv).ok  # gone: the server would not start


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: b"not JSON",
        lambda d: d[: len(d) // 2],
        lambda d: json.dumps({**json.loads(d), "setup": [0]}).encode(),
        lambda d: json.dumps(
            {**json.loads(d), "values": dict(list(json.loads(d)["values"].items())[1:])}
        ).encode(),
        lambda d: json.dumps(
            {**json.loads(d), "secrets": {"api_key": [False, [[99, 0]]]}}
        ).encode(),
    ],
    ids=["garbage", "truncated", "another setup", "a destination missing", "a bad secret place"],
)
def test_a_damaged_entry_is_a_miss(damage: Any) -> None:
    cat = catalog.load("sglang", "0.5.23")
    argv = ["--model-path", "m", "--tp", "8"]
    fresh = parse_cache.parse(cat, argv)
    [entry] = entries()
    entry.write_bytes(damage(entry.read_bytes()))
    assert parse_cache.parse(cat, argv) == fresh


def test_entries_are_private_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_cache, "KEEP", 3)
    cat = catalog.load("sglang", "0.5.23")
    for port in range(30000, 30005):
        parse_cache.parse(cat, ["--model-path", "m", "--port", str(port)])
    found = entries()
    assert len(found) == 3
    assert {e.stat().st_mode & 0o777 for e in found} == {0o600}
    assert found[0].parent.stat().st_mode & 0o777 == 0o700


def test_no_cache_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVGUARD_NO_CACHE", "1")
    cat = catalog.load("sglang", "0.5.23")
    assert parse_cache.parse(cat, ["--model-path", "m"]).ok
    monkeypatch.delenv("ENVGUARD_NO_CACHE")
    assert entries() == []


def test_a_hit_needs_no_argparse() -> None:
    """What the cache is for: the cron line's parse without argparse and its catalog-sized
    parser (~15 ms here), and without hashlib where no secret or --config file is involved."""
    probe = (
        "import sys; from envguard.flags import catalog, parse_cache; "
        "c = catalog.load('sglang', '0.5.23'); "
        "p = parse_cache.parse(c, ['--model-path', 'm', '--tp', '8']); "
        "print(p.values['tp_size'].value, 'argparse' in sys.modules, 'hashlib' in sys.modules)"
    )
    env = {"PATH": "/usr/bin:/bin", "ENVGUARD_CACHE_DIR": os.environ["ENVGUARD_CACHE_DIR"]}
    runs = [
        subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert [r.stdout for r in runs] == ["8 True False\n", "8 False False\n"], runs[-1].stderr


def test_a_secret_no_value_accounts_for_is_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line is checked as well as the values: a secret a converter changed past
    recognition (here: the value check made blind) still keeps the line out of the cache."""
    monkeypatch.setattr(parse_cache, "holds_secret", lambda dest, value: False)
    cat = catalog.load("sglang", "0.5.23")
    assert parse_cache.parse(cat, ["--model-path", "m", "--api-key", SECRET]).ok
    assert entries() == []
