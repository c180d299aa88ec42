"""A ledger is envguard's own file: another application's database is never touched, and
reading never writes."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from envguard.ledger.store import APPLICATION_ID, MIGRATIONS, Ledger, LedgerError
from tests.conftest import envguard_process
from tests.ledger.builders import record


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def other_application(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.execute("INSERT INTO users (name) VALUES ('ada')")
    db.commit()
    db.close()
    return path


def legacy_ledger(path: Path) -> Path:
    """A ledger as envguard 0.1 wrote it: the same tables, no application_id."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute("PRAGMA user_version = 1")
    db.close()
    Ledger(path, sqlite3.connect(path, isolation_level=None)).add(record())
    return path


@pytest.mark.parametrize("command", [["list"], ["show", "1"], ["export"], ["compare", "1", "2"]])
def test_reading_another_applications_database_changes_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    other = other_application(tmp_path / "other.db")
    before = digest(other)
    result = envguard_process(tmp_path, "ledger", command[0], "--ledger", "other.db", *command[1:])
    assert result.returncode == 3
    assert "other.db: not an envguard ledger (another application's SQLite database" in (
        result.stderr
    )
    assert digest(other) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("other")) == ["other.db"]


def test_recording_into_another_applications_database_is_refused(tmp_path: Path) -> None:
    other = other_application(tmp_path / "other.db")
    before = digest(other)
    with pytest.raises(LedgerError, match="left it unchanged"):
        Ledger.open(other)
    assert digest(other) == before
    db = sqlite3.connect(other)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0


@pytest.mark.parametrize("content", [b"not a database at all\n", b"SQLite format 3\x00junk"])
def test_a_file_that_is_no_database_is_refused_and_kept(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    for create in (True, False):
        with pytest.raises(LedgerError, match="not an envguard ledger"):
            Ledger.open(path, create=create)
    assert path.read_bytes() == content


def test_a_new_or_empty_file_becomes_a_marked_ledger(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    for name in ("new.db", "empty.db"):
        ledger = Ledger.open(tmp_path / name)
        assert ledger.db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert ledger.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        ledger.close()
    assert not list(tmp_path.glob(".*"))  # no half-made file left behind


def test_a_ledger_of_envguard_0_1_is_read_as_is_and_marked_on_the_next_write(
    tmp_path: Path,
) -> None:
    path = legacy_ledger(tmp_path / "old.db")
    reader = Ledger.open(path, create=False)
    assert [r.profile_name for r in reader.select()] == ["kimi"]
    assert reader.db.execute("PRAGMA application_id").fetchone()[0] == 0  # read: not changed
    reader.close()
    writer = Ledger.open(path)
    writer.add(record())
    assert writer.db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert len(list(writer.select())) == 2


def test_read_only_commands_never_write_the_ledger(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    ledger.add(record())
    ledger.add(record())
    ledger.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ledger.close()
    before = digest(tmp_path / "l.db")
    for command in (["list"], ["show", "1"], ["export"], ["compare", "1", "2"]):
        result = envguard_process(tmp_path, "ledger", command[0], "--ledger", "l.db", *command[1:])
        assert result.returncode == 0, result.stderr
    assert digest(tmp_path / "l.db") == before


def test_a_read_only_ledger_can_be_read_by_another_user() -> None:
    """The file and its directory read-only for the reader: no WAL index can be made."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to read as another user")
    outer = Path(tempfile.mkdtemp(prefix="envguard-ro-"))  # pytest's tmp is private to root
    outer.chmod(0o755)
    directory = outer / "ro"
    directory.mkdir()
    ledger = Ledger.open(directory / "l.db")
    ledger.add(record())
    ledger.close()
    (directory / "l.db").chmod(0o444)
    directory.chmod(0o555)
    probe = (
        "from pathlib import Path; from envguard.ledger.store import Ledger; "
        f"print([r.profile_name for r in Ledger.open(Path({str(directory / 'l.db')!r}), "
        "create=False).select()])"
    )
    result = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-c",
            probe,
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": os.pathsep.join(sys.path), "PATH": os.environ["PATH"]},
        timeout=60,
    )
    shutil.rmtree(outer)
    assert result.stdout == "['kimi']\n", result.stderr


def test_a_damaged_ledger_is_a_clear_error_never_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger = Ledger.open(path)
    for _ in range(200):
        ledger.add(record())
    ledger.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ledger.close()
    data = bytearray(path.read_bytes())
    data[4096 : 4096 + 100] = b"\xff" * 100  # the records table's first page
    path.write_bytes(bytes(data))
    for command in (["list"], ["export"], ["show", "3"], ["compare", "1", "2"]):
        result = envguard_process(tmp_path, "ledger", command[0], "--ledger", "l.db", *command[1:])
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 3, (command, result.stderr)
        assert "the ledger is damaged (database disk image is malformed)" in result.stderr
