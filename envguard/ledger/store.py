"""The ledger file: SQLite (standard library), WAL, a schema version with migrations.

Every record is one transaction: a writer killed mid-way loses only what it had not
committed; concurrent writers wait on each other (busy timeout) instead of failing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from envguard.errors import EnvguardError, UsageError
from envguard.evaluation.record import Record
from envguard.knowledge.redaction import redact_argv, redact_nested, redact_value

LEDGER_ENV = "ENVGUARD_LEDGER"


class LedgerError(EnvguardError):
    """The ledger cannot be opened, read or written."""


# Schema history: entry i upgrades user_version i to i + 1, inside one transaction.
# Append; never edit. (Statements run one by one: executescript would commit first.)
MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE records (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at TEXT NOT NULL,
            host TEXT NOT NULL,
            profile_name TEXT NOT NULL,
            profile_version INTEGER NOT NULL,
            profile_digest TEXT NOT NULL,
            fingerprint TEXT,
            verdict TEXT NOT NULL CHECK (verdict IN ('valid', 'refused')),
            reasons TEXT NOT NULL,
            command TEXT NOT NULL,
            metrics TEXT NOT NULL,
            setup TEXT
        )""",
        "CREATE INDEX records_by_profile ON records (profile_name, id)",
        "CREATE INDEX records_by_fingerprint ON records (fingerprint, id)",
        "CREATE INDEX records_by_verdict ON records (verdict, id)",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)


def default_path() -> Path:
    explicit = os.environ.get(LEDGER_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "envguard" / "ledger.db"


# PRAGMA application_id: marks a SQLite file as an envguard ledger ("envg"), so envguard
# never adopts (or migrates, or switches to WAL) another application's database.
APPLICATION_ID = 0x656E7667

FileKind = Literal["ours", "legacy", "foreign"]


class Ledger:
    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self.db = connection

    @classmethod
    def open(cls, path: Path | None = None, *, create: bool = True) -> Ledger:
        """Open the ledger to record into (`create`: made if there is none yet), or to read
        only (`create=False`: opened read-only, never written, never migrated).

        The default location's directory is created; a given path's directory must exist -
        a typo should not scatter ledgers around. An existing file is used only if it is an
        envguard ledger."""
        chosen = path or default_path()
        if path is None and create:
            try:
                chosen.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(
                    f"{chosen.parent}: cannot create the ledger directory: {exc.strerror}",
                    hint=f"set {LEDGER_ENV} or --ledger",
                ) from None
        if not chosen.parent.is_dir():
            raise LedgerError(
                f"{chosen}: the ledger's directory does not exist",
                hint=f"create {chosen.parent}, or give another --ledger path",
            )
        exists = chosen.exists() and chosen.stat().st_size > 0
        if not create:
            if not exists:
                raise LedgerError(
                    f"{chosen}: no ledger here yet",
                    hint="record a result with `envguard bench` first, or give --ledger",
                )
            return cls(chosen, _connect_read_only(chosen))
        if not exists:
            _create(chosen)
        else:
            _connect_read_only(chosen).close()  # checks that it is an envguard ledger
        try:
            db = sqlite3.connect(chosen, timeout=60, isolation_level=None)
            db.execute("PRAGMA busy_timeout = 60000")
            db.execute("PRAGMA synchronous = NORMAL")  # durable across process crashes in WAL
            ledger = cls(chosen, db)
            ledger._migrate()
        except sqlite3.OperationalError as exc:
            raise LedgerError(
                f"{chosen}: cannot open the ledger: {exc}",
                hint="check the directory is writable (or use --ledger)",
            ) from None
        except sqlite3.DatabaseError as exc:
            raise LedgerError(
                f"{chosen}: not an envguard ledger ({exc})", hint="give the path of a ledger file"
            ) from None
        return ledger

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"{self.path}: written by a newer envguard (ledger schema {version}, "
                f"this envguard knows {SCHEMA_VERSION})",
                hint="upgrade envguard",
            )
        while version < SCHEMA_VERSION:
            self.db.execute("BEGIN IMMEDIATE")
            current = self.db.execute("PRAGMA user_version").fetchone()[0]
            if current == version:  # nobody migrated it meanwhile
                for statement in MIGRATIONS[version]:
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {version + 1}")
            self.db.execute("COMMIT")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if self.db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            # An envguard 0.1 ledger (tables, no mark): adopt it now that it is known ours.
            self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def close(self) -> None:
        self.db.close()

    def add(self, record: Record) -> int:
        """Insert one record in its own transaction; return its id once committed.

        Whatever the caller redacted, the secret rules run once more here: nothing leaves
        for the file that could hold a credential."""
        record = _redacted(record)
        try:
            cursor = self.db.execute(
                "INSERT INTO records (created_at, host, profile_name, profile_version, "
                "profile_digest, fingerprint, verdict, reasons, command, metrics, setup) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.created_at,
                    record.host,
                    record.profile_name,
                    record.profile_version,
                    record.profile_digest,
                    record.fingerprint,
                    record.verdict,
                    json.dumps(list(record.reasons)),
                    json.dumps(list(record.command)),
                    json.dumps(record.metrics),
                    json.dumps(record.setup) if record.setup is not None else None,
                ),
            )
        except sqlite3.OperationalError as exc:
            raise LedgerError(
                f"{self.path}: cannot write the ledger: {exc}",
                hint="check the directory is writable (or use --ledger)",
            ) from None
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _damaged(self, exc: sqlite3.DatabaseError) -> LedgerError:
        """A ledger SQLite cannot read any more (a damaged page, a truncated file)."""
        return LedgerError(
            f"{self.path}: the ledger is damaged ({exc})",
            hint=f"see `sqlite3 {self.path} 'PRAGMA integrity_check'`; restore it from a "
            f"backup, or salvage it with `sqlite3 {self.path} .recover`",
        )

    def get(self, record_id: int) -> Record:
        try:
            row = self.db.execute("SELECT * FROM records WHERE id = ?", (record_id,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        if row is None:
            raise LedgerError(
                f"{self.path}: no record #{record_id}", hint="`envguard ledger list` shows the ids"
            )
        return _record(row)

    def select(
        self,
        *,
        profile: str | None = None,
        fingerprint: str | None = None,
        verdict: str | None = None,
        limit: int | None = None,
        before: int | None = None,
    ) -> Iterator[Record]:
        """Newest first. `fingerprint` matches a prefix (with or without `sha256:`)."""
        clauses: list[str] = []
        params: list[str | int] = []
        if profile is not None:
            clauses.append("profile_name = ?")
            params.append(profile)
        if fingerprint is not None:
            prefix = fingerprint if fingerprint.startswith("sha256:") else f"sha256:{fingerprint}"
            clauses.append("fingerprint >= ? AND fingerprint < ?")
            params += [prefix, prefix + "\uffff"]
        if verdict is not None:
            clauses.append("verdict = ?")
            params.append(verdict)
        if before is not None:
            clauses.append("id < ?")
            params.append(before)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = f"LIMIT {int(limit)}" if limit is not None else ""
        try:
            for row in self.db.execute(
                f"SELECT * FROM records {where} ORDER BY id DESC {tail}", params
            ):
                yield _record(row)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def integrity(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])


_COLUMNS = ("id", "created_at", "host", "profile_name", "profile_version", "profile_digest",
            "fingerprint", "verdict", "reasons", "command", "metrics", "setup")  # fmt: skip


def _record(row: tuple[Any, ...]) -> Record:
    """A row back into a Record: the JSON columns decoded, the rest as stored."""
    values = dict(zip(_COLUMNS, row, strict=True))
    values["reasons"] = tuple(json.loads(values["reasons"]))
    values["command"] = tuple(json.loads(values["command"]))
    values["metrics"] = json.loads(values["metrics"])
    values["setup"] = json.loads(values["setup"]) if values["setup"] is not None else None
    return Record(**values)


def _redacted(record: Record) -> Record:
    return dataclasses.replace(
        record,
        reasons=tuple(redact_value(r) for r in record.reasons),
        command=tuple(redact_argv(record.command)),
        metrics={k: v for k, v in record.metrics.items() if math.isfinite(v)},
        setup=redact_nested(record.setup),
    )


def _create(path: Path) -> None:
    """Make a new ledger where none is: built whole in a temporary file, then linked into
    place, so a concurrent reader or writer never meets a half-made file, and a file that
    appeared meanwhile (another writer's ledger) is used, not overwritten."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        db = sqlite3.connect(temporary, isolation_level=None)
        try:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute("PRAGMA journal_mode = WAL")
            ledger = Ledger(temporary, db)
            ledger._migrate()
        finally:
            db.close()
        if path.exists() and path.stat().st_size == 0:
            temporary.replace(path)  # an empty file (touch l.db) is taken as "no ledger yet"
        else:
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
    except (OSError, sqlite3.Error) as exc:
        raise LedgerError(
            f"{path}: cannot create the ledger: {exc}",
            hint="check the directory is writable (or use --ledger)",
        ) from None
    finally:
        for leftover in (temporary, Path(f"{temporary}-wal"), Path(f"{temporary}-shm")):
            leftover.unlink(missing_ok=True)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write: mode=ro; on a read-only file or directory where a
    WAL ledger's shared-memory file cannot be made, immutable=1 (nothing writes it then)."""
    # SQLite URI escaping (https://www.sqlite.org/uri.html): only these three matter in a
    # path; urllib.parse would cost ~4 ms of imports on every `ledger list`.
    escaped = str(path.absolute()).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    uri = f"file:{escaped}?mode=ro"
    for suffix in ("", "&immutable=1"):
        try:
            db = sqlite3.connect(uri + suffix, uri=True, timeout=60, isolation_level=None)
            db.execute("PRAGMA busy_timeout = 60000")
            _check_kind(path, db)
            return db
        except sqlite3.OperationalError as exc:
            error: sqlite3.Error = exc
        except sqlite3.DatabaseError as exc:
            raise LedgerError(
                f"{path}: not an envguard ledger ({exc})", hint="give the path of a ledger file"
            ) from None
    raise LedgerError(
        f"{path}: cannot open the ledger: {error}", hint="check the file's permissions"
    )


def _check_kind(path: Path, db: sqlite3.Connection) -> None:
    """Refuse a database that is not an envguard ledger (without writing to it)."""
    application = db.execute("PRAGMA application_id").fetchone()[0]
    if application == APPLICATION_ID:
        kind: FileKind = "ours"
    elif application == 0 and _looks_like_ledger(db):
        kind = "legacy"  # written by envguard 0.1, before the mark
    else:
        kind = "foreign"
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if kind == "ours" and version > SCHEMA_VERSION:
        raise LedgerError(
            f"{path}: written by a newer envguard (ledger schema {version}, "
            f"this envguard knows {SCHEMA_VERSION})",
            hint="upgrade envguard",
        )
    if kind == "foreign":
        raise LedgerError(
            f"{path}: not an envguard ledger (another application's SQLite database: "
            f"application_id {application}); left it unchanged",
            hint="give --ledger the path of an envguard ledger, or a new file",
        )


def _looks_like_ledger(db: sqlite3.Connection) -> bool:
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "records" not in tables or not tables <= {"records", "sqlite_sequence"}:
        return False
    columns = tuple(row[1] for row in db.execute("PRAGMA table_info(records)"))
    return columns == _COLUMNS


def resolve_pair(
    ledger: Ledger, first: int | None, second: int, baseline: str | None
) -> tuple[Record, Record]:
    """Records A and B of `ledger compare A B` (A is the latest valid record of B's profile
    before B with `--baseline latest`)."""
    after = ledger.get(second)
    if baseline == "latest":
        candidates = ledger.select(
            profile=after.profile_name, verdict="valid", limit=1, before=after.id
        )
        found = next(iter(candidates), None)
        if found is None:
            raise LedgerError(
                f"no valid record of {after.profile_name} before #{second}",
                hint="record a baseline with `envguard bench` first",
            )
        return found, after
    if first is None:
        raise UsageError(
            "give two records (A B), or --baseline latest B", hint="envguard ledger compare --help"
        )
    return ledger.get(first), after
