"""The statements of one change set on SQLite, each run inside the caller's transaction
(:meth:`~episodic.adapters.sqlite.episodes.Episodes.apply_many` runs each set as one unit of a group
commit).

Why the recall index cannot drift: an episode's indexed text, tags, source references and vector
are written and deleted in the same transaction as the episode row itself.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from episodic.adapters.codec import pack_vector
from episodic.adapters.sqlite.audit_chain import append_audit
from episodic.adapters.sqlite.database import micros
from episodic.adapters.sqlite.governance import close_review, insert_review, scrub_review_note
from episodic.application.ports import Changes, IdempotencyRecord, StatsChange, StatusChange, Vector
from episodic.domain.errors import ConflictError
from episodic.domain.model import Episode
from episodic.domain.recall.languages import indexed

ROWID_FLOOR = "episodes_rowid_floor"
"""``meta`` key: the highest rowid ever deleted from ``episodes``.

Why rowids are never reused: SQLite gives a new row the largest rowid plus one, so erasing the
newest episode would hand its rowid to the next write. The vector cache follows the table by a
rowid watermark (:mod:`.vectors`): it would never load the new row's vector (the episode could
not be found by meaning until a restart), and another ``--workers`` process, which still holds
the erased row's vector, would rank the new episode by it."""

NEXT_ROWID = (
    "(SELECT max(coalesce((SELECT max(rowid) FROM episodes), 0), "
    f"coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{ROWID_FLOOR}'), 0)) + 1)"
)
"""The rowid a new episode gets: above every rowid the table holds or ever held."""


SCOPE_MOVED = (
    "INSERT INTO scope_generations VALUES (?, 1) ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1"
)
"""Moves a tenant's scope generation (:mod:`.scope_cache`): what its scopes admit has changed.

An insert moves it with this statement of its own rather than a trigger: a statement that fires a
trigger could fail after it changed its rows, so SQLite keeps a journal of every page it changes to
undo it alone -- the episode row's pages and each of its indexes', for every episode and tag."""


def insert_episode(conn: sqlite3.Connection, episode: Episode, vector: Vector | None, embedder: str | None) -> None:
    """The episode row with its vector, plus its tags, source references and indexed text; its
    tenant's scope generation moved."""
    expires = episode.retention.expires_at
    cur = conn.execute(
        "INSERT INTO episodes (rowid, tenant_id, event_id, actor_id, project_id, event_type, status, privacy_class, "
        "occurred_at, expires_at, doc, vector, embedder, access_count, last_accessed_at) "
        f"VALUES ({NEXT_ROWID},?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            episode.tenant_id,
            episode.event_id,
            episode.actor_id,
            episode.project_id,
            episode.event_type.value,
            episode.status.value,
            episode.privacy_class.value,
            micros(episode.occurred_at),
            micros(expires) if expires else None,
            episode.model_dump_json(by_alias=True),
            None if vector is None else pack_vector(vector),
            embedder,
            episode.access_count,
            None if episode.last_accessed_at is None else episode.last_accessed_at.isoformat(),
        ),
    )
    rowid = cur.lastrowid
    conn.executemany(
        "INSERT INTO episode_tags (tenant_id, tag, episode_rowid) VALUES (?,?,?)",
        [(episode.tenant_id, tag, rowid) for tag in episode.tags],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO episode_refs (tenant_id, ref, episode_rowid) VALUES (?,?,?)",
        [(episode.tenant_id, ref, rowid) for ref in episode.source_refs],
    )
    conn.execute("INSERT INTO episode_texts (rowid, text) VALUES (?, ?)", (rowid, indexed(episode.search_text())))
    conn.execute(SCOPE_MOVED, (episode.tenant_id,))


def delete_episode(conn: sqlite3.Connection, tenant: str, event_id: str) -> int | None:
    """The episode and everything indexed from it (its rowid); nothing when it is already gone."""
    row = conn.execute("SELECT rowid FROM episodes WHERE tenant_id = ? AND event_id = ?", (tenant, event_id)).fetchone()
    if row is None:
        return None
    rowid = row[0]
    conn.execute("DELETE FROM episode_texts WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM episode_tags WHERE tenant_id = ? AND episode_rowid = ?", (tenant, rowid))
    conn.execute("DELETE FROM episode_refs WHERE tenant_id = ? AND episode_rowid = ?", (tenant, rowid))
    conn.execute("DELETE FROM episodes WHERE rowid = ?", (rowid,))
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
        "SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
        (ROWID_FLOOR, rowid),
    )
    return int(rowid)


def insert_idempotency(conn: sqlite3.Connection, tenant: str, record: IdempotencyRecord) -> None:
    """The key and the result it answered with (a key already used fails the transaction)."""
    conn.execute(
        "INSERT INTO idempotency (tenant_id, key, request_hash, result, created_at) VALUES (?,?,?,?,?)",
        (tenant, record.key, record.request_hash, json.dumps(record.result), micros(record.created_at)),
    )


def change_status(conn: sqlite3.Connection, tenant: str, change: StatusChange) -> None:
    """Move an episode to its new status, or :class:`ConflictError` if it left the expected one."""
    cur = conn.execute(
        "UPDATE episodes SET status = ?, doc = json_set(doc, '$.status', ?) "
        "WHERE tenant_id = ? AND event_id = ? AND status = ?",
        (change.new.value, change.new.value, tenant, change.event_id, change.expected.value),
    )
    if cur.rowcount != 1:
        raise ConflictError(f"episode {change.event_id} is no longer {change.expected.value}", eventId=change.event_id)


def write_changes(conn: sqlite3.Connection, changes: Changes, erased: list[int]) -> None:
    """Every statement of one change set, in the order their conditions need; the rowids of
    the episodes it deletes are appended to ``erased``."""
    tenant = changes.tenant_id
    try:
        if changes.idempotency is not None:
            insert_idempotency(conn, tenant, changes.idempotency)
        for new in changes.put:
            insert_episode(conn, new.episode, new.vector, new.embedder)
        for change in changes.status:
            change_status(conn, tenant, change)
        for stats in changes.stats:
            update_stats(conn, tenant, stats)
        for event_id in changes.delete:
            if (rowid := delete_episode(conn, tenant, event_id)) is not None:
                erased.append(rowid)
        for review in changes.reviews_put:
            insert_review(conn, tenant, review)
        for close in changes.reviews_close:
            if not close_review(conn, tenant, close):
                raise ConflictError(f"review {close.review_id} is no longer pending")
        for review_id in changes.reviews_scrub:
            scrub_review_note(conn, tenant, review_id)
        for record in changes.audit:
            append_audit(conn, record)
    except sqlite3.IntegrityError as exc:
        raise ConflictError(f"create-once condition failed: {exc}") from exc


def count_access(conn: sqlite3.Connection, tenant_id: str, event_ids: Sequence[str], at: datetime) -> None:
    """One more recall of each episode, in its own columns: the document is not rewritten, so a
    recall leaves every parsed copy of it good (:mod:`.reads`) and writes a few bytes a row."""
    marks = ",".join("?" * len(event_ids))
    conn.execute(
        "UPDATE episodes SET access_count = access_count + 1, last_accessed_at = ? "
        f"WHERE tenant_id = ? AND event_id IN ({marks})",
        (at.isoformat(), tenant_id, *event_ids),
    )


def update_stats(conn: sqlite3.Connection, tenant: str, stats: StatsChange) -> None:
    conn.execute(
        "UPDATE episodes SET doc = json_set(doc, '$.feedbackScore', ?, '$.feedbackCount', ?, "
        "'$.retentionScore', ?) WHERE tenant_id = ? AND event_id = ?",
        (stats.feedback_score, stats.feedback_count, stats.retention_score, tenant, stats.event_id),
    )
