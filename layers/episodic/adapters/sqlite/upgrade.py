"""Bringing a data dir written by an earlier version to this version's schema, once, on open.

Each step runs in one transaction: a crash part-way leaves the file as it was and the next
open starts that step again, and a second process opening the same data dir waits for the
first (the connections' busy timeout) and then finds nothing left to do.

Schemas 1 to 4 kept each episode's indexed text in an FTS5 table (``episodes_fts``, then
``episodes_search`` with a tenant word beside it); schema 5 keeps it in the plain table
``episode_texts``, since recall counts the words in memory (:mod:`.word_index`) and no longer asks
FTS5 to rank. The upgrade copies every row's indexed text, as it was stored, drops the old table
(``secure_delete`` zeroes its pages) and records the new version, all in one transaction: a crash
part-way leaves the old table whole. A schema-1 file moves its texts first, as schema 2 did, and
then takes the other steps.

Schema 4 counts recalls in two columns of ``episodes`` (``access_count``, ``last_accessed_at``)
instead of rewriting each recalled episode's document (:func:`.writes.count_access`). The upgrade
adds them and copies each document's counts into them once; the documents keep their old counts,
which reads no longer use (:func:`.reads.stored`).

Schema 6 drops the triggers that moved a tenant's scope generation on every insert into
``episodes`` and ``episode_tags``: the insert moves it itself (:data:`.writes.SCOPE_MOVED`), which
spares SQLite a journal of every page the insert changes. Nothing else changes in the file.

Schema 3 links every audit record into its tenant's hash chain (:mod:`.audit_chain`). Records
written before it are linked once, in the order they were appended, when the data dir is
upgraded: the chain then proves nothing was changed *after* the upgrade. The append-only
trigger is lifted for that one rewrite and put back as it was, in the same transaction.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from episodic.domain.chain import Head, linked
from episodic.domain.errors import StorageError
from episodic.domain.model import AuditRecord

log = logging.getLogger(__name__)


def upgrade(conn: sqlite3.Connection, version: int) -> None:
    """Upgrade the file ``conn`` (the writer, outside any transaction) has open to ``version``;
    :class:`StorageError` for a file a later version wrote (this version would misread it)."""
    if _version(conn) > version:
        raise StorageError(
            f"this data dir was written by a later version of the service (schema {_version(conn)}; this "
            f"version reads schema {version} and earlier): run that version, or restore a backup"
        )
    _plain_texts(conn, version)
    if _version(conn) < 3 <= version:
        _chain_audit(conn, version)
    if _version(conn) < 4 <= version:
        _access_columns(conn, version)
    if _version(conn) < 5 <= version:
        with _step(conn):
            _set_version(conn, 5)
    if _version(conn) < 6 <= version:
        with _step(conn):
            conn.execute("DROP TRIGGER IF EXISTS scope_on_insert")
            conn.execute("DROP TRIGGER IF EXISTS scope_on_tag_insert")
            _set_version(conn, 6)


@contextmanager
def _step(conn: sqlite3.Connection) -> Iterator[None]:
    """One upgrade step's transaction: ``BEGIN IMMEDIATE`` (a second process waits here, then
    finds the step done), committed whole or rolled back whole."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _set_version(conn: sqlite3.Connection, version: int) -> None:
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


OLD_TEXT_TABLES = ("episodes_fts", "episodes_search")
"""Where schema 1 and schemas 2-4 kept the indexed texts (FTS5 tables; the text column is ``text``)."""


def _plain_texts(conn: sqlite3.Connection, version: int) -> None:
    """Schemas 1-4 to 5: the indexed texts move from their FTS5 table to ``episode_texts``."""
    if not any(_has_table(conn, name) for name in OLD_TEXT_TABLES):
        return
    started = time.monotonic()
    with _step(conn):
        for name in OLD_TEXT_TABLES:
            if _has_table(conn, name):  # another process may have upgraded it meanwhile
                (rows,) = conn.execute(f"SELECT count(*) FROM {name}").fetchone()
                log.warning("moving the indexed texts of %d episodes to schema %d (once)", rows, version)
                conn.execute(  # an episode's text as the old table held it; none of a deleted episode
                    f"INSERT OR REPLACE INTO episode_texts (rowid, text) SELECT s.rowid, s.text FROM {name} s "
                    "JOIN episodes e ON e.rowid = s.rowid"
                )
                conn.execute("DELETE FROM episode_texts WHERE rowid NOT IN (SELECT rowid FROM episodes)")
                conn.execute(f"DROP TABLE {name}")
                if _version(conn) < 2:
                    _set_version(conn, min(version, 2))
                log.warning("moved %d episodes' indexed texts in %.1f s", rows, time.monotonic() - started)


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _chain_audit(conn: sqlite3.Connection, version: int) -> None:
    """Schema 2 to 3: every audit record linked into its tenant's chain, in append order.

    A file that says schema 2 but holds a chain already (a link in a record, or a chain's head) is
    refused: no version before 3 wrote one, so it is a chained file edited to look older, and
    linking its records again would hide whatever was removed or changed in it."""
    with _step(conn):
        if _version(conn) < 3 and _chained(conn):
            raise StorageError(
                "this data dir says its audit log predates hash chains, but its records are chained "
                "already: it was edited to look older (the audit log may have been tampered with). It "
                "will not be chained again; verify a copy against a checkpoint, or restore a backup"
            )
        if _version(conn) < 3:  # another process may have upgraded it meanwhile
            (trigger,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'audit_no_update'"
            ).fetchone()
            conn.execute("DROP TRIGGER audit_no_update")
            linked = 0
            for (tenant,) in conn.execute("SELECT DISTINCT tenant_id FROM audit").fetchall():
                linked += _link_tenant(conn, tenant)
            conn.execute(trigger)
            _set_version(conn, min(version, 3))
            if linked:
                log.warning("linked %d audit records into their tenants' hash chains (once)", linked)


def _chained(conn: sqlite3.Connection) -> bool:
    """Whether any audit record carries a chain link, or any chain has a head."""
    linked_record = conn.execute("SELECT 1 FROM audit WHERE json_extract(doc, '$.link') IS NOT NULL LIMIT 1")
    head = conn.execute("SELECT 1 FROM audit_heads LIMIT 1")
    return linked_record.fetchone() is not None or head.fetchone() is not None


def _link_tenant(conn: sqlite3.Connection, tenant: str) -> int:
    head = None
    rows = conn.execute("SELECT seq, doc FROM audit WHERE tenant_id = ? ORDER BY seq", (tenant,)).fetchall()
    for seq, doc in rows:
        record = linked(AuditRecord.model_validate_json(doc), head)
        assert record.link is not None
        conn.execute("UPDATE audit SET doc = ? WHERE seq = ?", (record.model_dump_json(by_alias=True), seq))
        head = Head(record.link.seq, record.link.digest)
    if head is not None:
        conn.execute(
            "INSERT OR REPLACE INTO audit_heads (tenant_id, shard, seq, digest) VALUES (?, 0, ?, ?)",
            (tenant, head.seq, head.digest),
        )
    return len(rows)


def _access_columns(conn: sqlite3.Connection, version: int) -> None:
    """Schema 3 to 4: the recall counts move to their own columns, with what the documents hold."""
    with _step(conn):
        if _version(conn) < 4:  # another process may have upgraded it meanwhile
            columns = {row[1] for row in conn.execute("PRAGMA table_info(episodes)")}
            if "access_count" not in columns:
                conn.execute("ALTER TABLE episodes ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0")
                conn.execute("ALTER TABLE episodes ADD COLUMN last_accessed_at TEXT")
            copied = conn.execute(
                "UPDATE episodes SET access_count = json_extract(doc, '$.accessCount'), "
                "last_accessed_at = json_extract(doc, '$.lastAccessedAt') "
                "WHERE json_extract(doc, '$.lastAccessedAt') IS NOT NULL"
            ).rowcount
            _set_version(conn, min(version, 4))
            if copied:
                log.warning("moved the recall counts of %d episodes into their own columns (once)", copied)
