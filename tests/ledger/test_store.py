"""The ledger file: real SQLite files, real concurrent writer processes, SIGKILL."""

from __future__ import annotations

import dataclasses
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from envguard.ledger.store import APPLICATION_ID, SCHEMA_VERSION, Ledger, LedgerError
from tests.ledger.builders import record, varied


def test_a_new_ledger_is_migrated_and_in_wal_mode(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    assert ledger.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    assert ledger.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_round_trip_and_filters(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    first = ledger.add(record())
    second = ledger.add(record(profile="eagle", setup=varied(env={"NCCL_ALGO": "Tree"})))
    third = ledger.add(record(verdict="refused", reasons=("server restarted",), metrics={}))
    assert ledger.get(first) == dataclasses.replace(record(), id=first)
    assert [r.id for r in ledger.select()] == [third, second, first]
    assert [r.id for r in ledger.select(profile="kimi")] == [third, first]
    assert [r.id for r in ledger.select(verdict="valid")] == [second, first]
    prefix = record().fingerprint.removeprefix("sha256:")[:10]  # type: ignore[union-attr]
    assert [r.id for r in ledger.select(fingerprint=prefix)] == [third, first]
    assert [r.id for r in ledger.select(limit=1)] == [third]
    assert [r.id for r in ledger.select(before=third, profile="kimi")] == [first]
    with pytest.raises(LedgerError, match="no record #99"):
        ledger.get(99)


def test_a_ledger_from_a_newer_envguard_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 7")
    db.close()
    with pytest.raises(LedgerError, match=r"written by a newer envguard \(ledger schema 7"):
        Ledger.open(path)


def test_not_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    path.write_text("this is a text file, not SQLite\n" * 100)
    with pytest.raises(LedgerError, match="not an envguard ledger"):
        Ledger.open(path)


def test_missing_and_unwritable_directories_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="the ledger's directory does not exist"):
        Ledger.open(tmp_path / "no" / "such" / "l.db")
    with pytest.raises(LedgerError, match=r"cannot (open|create) the ledger"):
        Ledger.open(Path("/proc/self/envguard-ledger.db"))  # a read-only file system
    with pytest.raises(LedgerError, match="no ledger here yet"):
        Ledger.open(tmp_path / "l.db", create=False)


WRITER = """
import sys, time
from envguard.ledger.store import Ledger
sys.path.insert(0, {root!r})
from tests.ledger.builders import record
ledger = Ledger.open(__import__("pathlib").Path({path!r}))
print("ready", file=sys.stderr, flush=True)  # opened; the first add comes next
for i in range({count}):
    rid = ledger.add(record(metrics={{"writer": {writer}, "i": i}}))
    print(rid, flush=True)
    time.sleep({pause})  # keeps the writers overlapping, and the victims alive until killed
"""


def test_concurrent_writers_some_killed_lose_no_committed_record(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    Ledger.open(path).close()
    root = str(Path(__file__).resolve().parents[2])
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER.format(root=root, path=str(path), count=500, writer=n, pause=0.003),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    committed: list[int] = []
    victims = writers[:3]
    for victim in victims:  # killed mid-way, after at least 50 commits each
        assert victim.stdout is not None
        lines = [victim.stdout.readline() for _ in range(50)]
        victim.send_signal(signal.SIGKILL)
        committed += [int(line) for line in lines]
    for writer in writers:
        out, _ = writer.communicate(timeout=120)
        committed += [int(line) for line in out.split()]
    assert all(w.returncode == -signal.SIGKILL for w in victims)
    assert all(w.returncode == 0 for w in writers[3:])
    ledger = Ledger.open(path)
    stored = {r.id for r in ledger.select()}
    assert set(committed) <= stored  # every id a writer saw committed is there
    assert len(stored) >= 5 * 500 + 3 * 50
    assert ledger.integrity() == "ok"
    assert len({(r.metrics["writer"], r.metrics["i"]) for r in ledger.select()}) == len(stored)


def test_waits_for_a_busy_writer_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    Ledger.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    blocked = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER.format(
                root=str(Path(__file__).resolve().parents[2]),
                path=str(path),
                count=1,
                writer=0,
                pause=0,
            ),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert blocked.stderr is not None and blocked.stderr.readline() == "ready\n"
    # The writer's add now meets the held lock; SQLite's busy timeout (set by the ledger,
    # not left at 0) makes it wait for the COMMIT below instead of failing at once.
    assert Ledger.open(path, create=False).db.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    holder.execute("COMMIT")
    out, _ = blocked.communicate(timeout=30)
    assert blocked.returncode == 0 and out.strip() == "1"
