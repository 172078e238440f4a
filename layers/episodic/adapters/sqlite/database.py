"""The SQLite database itself: its schema, its connections and its one transaction shape.

Why one writer and a pool of readers: SQLite admits one writer at a time anyway, so all
writes share one connection under a lock, while WAL lets any number of readers see the
last commit meanwhile. A reader is borrowed for one operation and handed back, so the
number of open files depends on how many reads run *at once*, never on how many threads
or TCP connections the server has served: at most ``MAX_IDLE_READERS`` stay open between
requests.

Why a write acknowledged is a write kept: every write runs in one ``BEGIN IMMEDIATE`` ...
``COMMIT`` with ``synchronous=FULL`` (:meth:`Database.transaction`, or the group commit of
:mod:`.group_commit` that change sets share), so by the time the caller hears back the
commit has reached the WAL on disk; a crash before that rolls the open transaction back and
loses nothing that was acknowledged.

Why erased text does not linger: every connection runs with ``secure_delete``, so freed
pages are zeroed, and :meth:`Database.compact_after_erasure` truncates the WAL after an
erasure. (No full-text engine keeps segments of its own: recall's words are counted in memory
from the plain ``episode_texts`` table, :mod:`.word_index`.)

The schema is created if missing: ``meta.schema_version`` records the format a file is in, and a
file of an earlier format is upgraded once when it is opened (:mod:`.upgrade`).
"""

from __future__ import annotations

import queue
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic.adapters.sqlite.group_commit import GroupCommit
from episodic.adapters.sqlite.upgrade import upgrade
from episodic.domain.errors import StorageError

SCHEMA_VERSION = 6

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    rowid INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    project_id TEXT,
    event_type TEXT NOT NULL,
    status TEXT NOT NULL,
    privacy_class TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    expires_at INTEGER,
    doc TEXT NOT NULL,
    vector BLOB,
    embedder TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    UNIQUE (tenant_id, event_id)
);
CREATE INDEX IF NOT EXISTS episodes_by_time ON episodes (tenant_id, occurred_at);
CREATE INDEX IF NOT EXISTS episodes_by_actor ON episodes (tenant_id, actor_id, occurred_at);
CREATE INDEX IF NOT EXISTS episodes_by_type ON episodes (tenant_id, event_type, occurred_at);
CREATE INDEX IF NOT EXISTS episodes_by_project ON episodes (tenant_id, project_id, occurred_at);
CREATE INDEX IF NOT EXISTS episodes_by_expiry ON episodes (expires_at) WHERE expires_at IS NOT NULL;
-- Covering indexes for recall's scope query, so admitting a large scope reads no table rows.
CREATE INDEX IF NOT EXISTS episodes_scope_actor
    ON episodes (tenant_id, actor_id, status, privacy_class, expires_at, occurred_at);
CREATE INDEX IF NOT EXISTS episodes_scope_tenant
    ON episodes (tenant_id, status, privacy_class, expires_at, occurred_at);
CREATE TABLE IF NOT EXISTS episode_tags (
    tenant_id TEXT NOT NULL, tag TEXT NOT NULL, episode_rowid INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, tag, episode_rowid)
) WITHOUT ROWID;
-- A tenant's scope generation moves whenever anything a scope filters on changes: a cached scope
-- (scope_cache.py) is valid while its generation is. Triggers move it on every update and delete,
-- so no such path can forget it; the one insert path (writes.insert_episode) moves it itself, as a
-- trigger on an insert made SQLite journal every page the insert touched (see writes.py).
CREATE TABLE IF NOT EXISTS scope_generations (
    tenant_id TEXT PRIMARY KEY, generation INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS scope_on_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO scope_generations VALUES (OLD.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS scope_on_update AFTER UPDATE OF
    tenant_id, actor_id, project_id, event_type, status, privacy_class, occurred_at, expires_at ON episodes BEGIN
    INSERT INTO scope_generations VALUES (OLD.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1;
    INSERT INTO scope_generations VALUES (NEW.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS scope_on_tag_delete AFTER DELETE ON episode_tags BEGIN
    INSERT INTO scope_generations VALUES (OLD.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1;
END;
-- How many episodes each tenant has lost (erasure, expiry, rejection): a process's in-memory words
-- of a tenant (word_index.py) are read again once this count moved, whichever process deleted.
CREATE TABLE IF NOT EXISTS tenant_erasures (tenant_id TEXT PRIMARY KEY, erased INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS erasures_on_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO tenant_erasures VALUES (OLD.tenant_id, 1) ON CONFLICT (tenant_id) DO UPDATE SET erased = erased + 1;
END;
CREATE TABLE IF NOT EXISTS episode_refs (
    tenant_id TEXT NOT NULL, ref TEXT NOT NULL, episode_rowid INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, ref, episode_rowid)
) WITHOUT ROWID;
-- Each episode's indexed text under the episode's rowid, read by recall's word index (word_index.py).
CREATE TABLE IF NOT EXISTS episode_texts (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reviews (
    review_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    status TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reviews_by_status ON reviews (tenant_id, status, requested_at);
CREATE INDEX IF NOT EXISTS reviews_pending ON reviews (requested_at) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS idempotency (
    tenant_id TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL,
    result TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, key)
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    audit_id TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    action TEXT NOT NULL,
    event_id TEXT,
    doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_tenant ON audit (tenant_id, seq);
CREATE INDEX IF NOT EXISTS audit_by_event ON audit (tenant_id, event_id, seq);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
-- Each tenant's audit chain head (audit_chain.py): the newest record's position and digest.
CREATE TABLE IF NOT EXISTS audit_heads (
    tenant_id TEXT NOT NULL, shard INTEGER NOT NULL, seq INTEGER NOT NULL, digest TEXT NOT NULL,
    PRIMARY KEY (tenant_id, shard)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tenant_settings (tenant_id TEXT PRIMARY KEY, writes_enabled INTEGER NOT NULL);
"""
"""Every table, index and trigger, each created only if missing (so opening an existing file
changes nothing). The audit triggers make the log append-only for every connection, not only
for this code."""


def micros(value: datetime) -> int:
    """A time as the integer microseconds since the epoch (UTC) that every time column holds:
    integers compare and index exactly, whatever offset the caller's datetime carried."""
    return int(value.astimezone(UTC).timestamp() * 1_000_000)


def from_micros(value: int) -> datetime:
    """The UTC datetime a time column holds (the inverse of :func:`micros`)."""
    return datetime.fromtimestamp(value / 1_000_000, UTC)


class Database:
    """One SQLite file in WAL mode: a writer connection under a lock and a pool of readers."""

    MAX_IDLE_READERS = 8

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._writer = self._open()
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._idle_count = 0
        self._pool_lock = threading.Lock()
        self._closed = False
        self.group = GroupCommit(self._writer, self._write_lock)
        """The group commit change sets share (:mod:`.group_commit`)."""
        with self._write_lock:
            self._writer.executescript(SCHEMA)
            self._writer.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            upgrade(self._writer, SCHEMA_VERSION)

    def pseudonym_key(self) -> bytes:
        """The key of this file's actor pseudonyms, made on first use and kept in ``meta``
        (every process opening the file reads the same one)."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('pseudonym_key', ?)", (secrets.token_hex(32),)
            )
            (value,) = conn.execute("SELECT value FROM meta WHERE key = 'pseudonym_key'").fetchone()
        return bytes.fromhex(value)

    def _open(self) -> sqlite3.Connection:
        """A connection with the settings durability and erasure rely on. ``isolation_level=None``
        leaves transactions to :meth:`_transaction`, so none is opened behind its back."""
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A reader connection for one operation, returned to the pool afterwards."""
        if self._closed:
            raise StorageError("the store is closed")
        try:
            conn = self._idle.get_nowait()
            with self._pool_lock:
                self._idle_count -= 1
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        finally:
            self._give_back(conn)

    def _give_back(self, conn: sqlite3.Connection) -> None:
        """Keep a returned reader for the next operation, or close it when enough are idle
        already (or the store is closed), so idle readers never pile up."""
        if conn.in_transaction:
            conn.rollback()
        with self._pool_lock:
            keep = not self._closed and self._idle_count < self.MAX_IDLE_READERS
            if keep:
                self._idle_count += 1
        if keep:
            self._idle.put(conn)
        else:
            conn.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one read, on a borrowed reader."""
        with self.reading() as conn:
            return conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of one read (None when there is none), on a borrowed reader."""
        with self.reading() as conn:
            return conn.execute(sql, params).fetchone()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer inside ``BEGIN IMMEDIATE``: committed when the block ends, rolled back
        (nothing written) when it raises. ``IMMEDIATE`` takes the write lock up front, so a
        busy database fails here, before any work, rather than at commit."""
        with self._write_lock:
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StorageError(f"database is busy: {exc}") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def close(self) -> None:
        """Close every idle reader and the writer; readers still lent out close when returned."""
        with self._pool_lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break
        with self._write_lock:
            self._writer.close()

    def compact_after_erasure(self) -> None:
        """:class:`~episodic.application.ports.ErasureCompaction`: checkpoint and truncate the WAL
        (``secure_delete`` has zeroed the freed pages already), so no erased byte lingers in the
        file or its journal."""
        with self._write_lock:
            self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_ok(self) -> bool:
        """Whether SQLite's own integrity check passes (used after a crash, and by tests)."""
        row = self.one("PRAGMA integrity_check")
        return row is not None and row[0] == "ok"
