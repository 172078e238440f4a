"""Bringing a data dir written by an earlier version to this version's schema, once, on open.

Schema 1 kept each episode's full-text row in ``episodes_fts``, its text only; schema 2 keeps
it in ``episodes_search`` with the tenant's word beside the text (:mod:`.fts_match`), so that a
tenant's BM25 search can be limited to its own rows. The upgrade copies every row's indexed
text, as it was stored, with its tenant's word, drops the old table (``secure_delete`` zeroes
its pages) and records the new version, all in one transaction: a crash part-way leaves the old
table whole and the next open starts again, and a second process opening the same data dir
waits for the first (the connections' busy timeout) and then finds nothing left to do.
"""

from __future__ import annotations

import logging
import sqlite3
import time

from episodic.adapters.sqlite.fts_match import tenant_token

log = logging.getLogger(__name__)


def upgrade(conn: sqlite3.Connection, version: int) -> None:
    """Upgrade the file ``conn`` (the writer, outside any transaction) has open to ``version``."""
    if not _has_table(conn, "episodes_fts"):
        return
    started = time.monotonic()
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _has_table(conn, "episodes_fts"):  # another process may have upgraded it meanwhile
            (rows,) = conn.execute("SELECT count(*) FROM episodes_fts").fetchone()
            log.warning("upgrading the full-text index of %d episodes to schema %d (once)", rows, version)
            conn.create_function("episodic_tenant_token", 1, tenant_token, deterministic=True)
            conn.execute("DELETE FROM episodes_search")
            conn.execute(
                "INSERT INTO episodes_search (rowid, tenant, text) SELECT f.rowid, "
                "episodic_tenant_token(e.tenant_id), f.text FROM episodes_fts f JOIN episodes e ON e.rowid = f.rowid"
            )
            conn.execute("DROP TABLE episodes_fts")
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
            log.warning("upgraded %d episodes' full-text rows in %.1f s", rows, time.monotonic() - started)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
