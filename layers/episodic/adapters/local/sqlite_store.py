"""The embedded backend's store: one SQLite database in WAL mode.

It is both the :class:`~episodic.ports.TimelineStore` (episodes, reviews, idempotency
keys, the append-only audit log, the kill-switch) and the
:class:`~episodic.ports.RecallIndex` (FTS5 for BM25, embeddings stored with each
episode and searched exactly with numpy over the scoped candidate set).

Why it is durable: every ``apply`` is one ``BEGIN IMMEDIATE`` transaction with
``synchronous=FULL``, so a write acknowledged to a caller has reached the WAL on disk;
a crash mid-write rolls the open transaction back and loses nothing acknowledged.
The recall index (FTS rows, tags, vectors) is written in the same transaction as the
episode, so it can never drift from the timeline.

Why erased text does not linger: ``secure_delete`` zeroes freed pages, the FTS index is
optimised (its segments rewritten without deleted rows) and the WAL is checkpointed
and truncated after every erasure.
"""

from __future__ import annotations

import json
import queue
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from episodic.adapters.codec import decode_cursor, encode_cursor, pack_vector
from episodic.adapters.local.vectors import DEFAULT_ANN_THRESHOLD, VectorSearch
from episodic.citations import cite
from episodic.digests import DIGEST_PRIVACY_ORDER
from episodic.errors import ConflictError, StorageError
from episodic.model import AuditRecord, Episode, EventType, Review, ReviewStatus, Status
from episodic.ports import AuditQuery, Changes, IdempotencyRecord, RecallCandidates, Scope, TimelineQuery, Vector
from episodic.ranking import Candidate

SCHEMA_VERSION = 1

_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS episode_refs (
    tenant_id TEXT NOT NULL, ref TEXT NOT NULL, episode_rowid INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, ref, episode_rowid)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS episodes_fts USING fts5 (text, tokenize = 'porter unicode61');
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
CREATE TABLE IF NOT EXISTS tenant_settings (tenant_id TEXT PRIMARY KEY, writes_enabled INTEGER NOT NULL);
"""

_WORD = re.compile(r"\w+", re.UNICODE)


def _micros(value: datetime) -> int:
    return int(value.astimezone(UTC).timestamp() * 1_000_000)


def fts_query(text: str) -> str | None:
    """Turn free text into a safe FTS5 query: every word, quoted, OR-ed (BM25 grades the rest)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:32]
    return " OR ".join(f'"{w}"' for w in words) or None


class SqliteStore:
    """Timeline store, audit log and recall index in one SQLite file."""

    def __init__(
        self, path: Path | str, embedder: str | None = None, ann_threshold: int = DEFAULT_ANN_THRESHOLD
    ) -> None:
        """``embedder`` names the model whose vectors recall compares with a query's: episodes
        embedded by another model take part by BM25 only until they are re-embedded."""
        self.path = Path(path)
        self.embedder = embedder
        self.vectors = VectorSearch(ann_threshold=ann_threshold)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._writer = self._open()
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._idle_count = 0
        self._pool_lock = threading.Lock()
        self._closed = False
        with self._write_lock:
            self._writer.executescript(_SCHEMA)
            self._writer.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    # ------------------------------------------------------------------ connections
    #
    # One writer connection, used under the write lock (SQLite has one writer at a time anyway),
    # and a small pool of reader connections (WAL lets them read while the writer commits).
    # A reader is borrowed for one operation and handed back, so the number of open files
    # depends on how many reads run *at once*, never on how many threads or TCP connections
    # the server has served: at most MAX_IDLE_READERS stay open between requests.

    MAX_IDLE_READERS = 8

    def _open(self) -> sqlite3.Connection:
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

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self.reading() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self.reading() as conn:
            return conn.execute(sql, params).fetchone()

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break
        with self._write_lock:
            self._writer.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
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

    # ------------------------------------------------------------------ writes

    def apply(self, changes: Changes) -> None:
        tenant = changes.tenant_id
        with self._transaction() as conn:
            try:
                if changes.idempotency is not None:
                    rec = changes.idempotency
                    conn.execute(
                        "INSERT INTO idempotency (tenant_id, key, request_hash, result, created_at) VALUES (?,?,?,?,?)",
                        (tenant, rec.key, rec.request_hash, json.dumps(rec.result), _micros(rec.created_at)),
                    )
                for new in changes.put:
                    self._insert_episode(conn, new.episode, new.vector, new.embedder)
                for change in changes.status:
                    cur = conn.execute(
                        "UPDATE episodes SET status = ?, doc = json_set(doc, '$.status', ?) "
                        "WHERE tenant_id = ? AND event_id = ? AND status = ?",
                        (change.new.value, change.new.value, tenant, change.event_id, change.expected.value),
                    )
                    if cur.rowcount != 1:
                        raise ConflictError(
                            f"episode {change.event_id} is no longer {change.expected.value}",
                            eventId=change.event_id,
                        )
                for stats in changes.stats:
                    conn.execute(
                        "UPDATE episodes SET doc = json_set(doc, '$.feedbackScore', ?, '$.feedbackCount', ?, "
                        "'$.retentionScore', ?) WHERE tenant_id = ? AND event_id = ?",
                        (stats.feedback_score, stats.feedback_count, stats.retention_score, tenant, stats.event_id),
                    )
                for event_id in changes.delete:
                    self._delete_episode(conn, tenant, event_id)
                for review in changes.reviews_put:
                    conn.execute(
                        "INSERT INTO reviews (review_id, tenant_id, event_id, status, requested_at, doc) "
                        "VALUES (?,?,?,?,?,?)",
                        (
                            review.review_id,
                            tenant,
                            review.event_id,
                            review.status,
                            _micros(review.requested_at),
                            review.model_dump_json(by_alias=True),
                        ),
                    )
                for close in changes.reviews_close:
                    cur = conn.execute(
                        "UPDATE reviews SET status = ?, doc = json_set(doc, '$.status', ?, '$.decidedAt', ?, "
                        "'$.reviewer', ?, '$.note', ?) WHERE tenant_id = ? AND review_id = ? AND status = 'pending'",
                        (
                            close.status,
                            close.status,
                            close.decided_at.isoformat(),
                            close.reviewer,
                            close.note,
                            tenant,
                            close.review_id,
                        ),
                    )
                    if cur.rowcount != 1:
                        raise ConflictError(f"review {close.review_id} is no longer pending")
                for record in changes.audit:
                    self._append_audit(conn, record)
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"create-once condition failed: {exc}") from exc

    def _insert_episode(
        self, conn: sqlite3.Connection, episode: Episode, vector: Vector | None, embedder: str | None
    ) -> None:
        blob = None if vector is None else pack_vector(vector)
        expires = episode.retention.expires_at
        cur = conn.execute(
            "INSERT INTO episodes (tenant_id, event_id, actor_id, project_id, event_type, status, privacy_class, "
            "occurred_at, expires_at, doc, vector, embedder) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                episode.tenant_id,
                episode.event_id,
                episode.actor_id,
                episode.project_id,
                episode.event_type.value,
                episode.status.value,
                episode.privacy_class.value,
                _micros(episode.occurred_at),
                _micros(expires) if expires else None,
                episode.model_dump_json(by_alias=True),
                blob,
                embedder,
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
        conn.execute("INSERT INTO episodes_fts (rowid, text) VALUES (?, ?)", (rowid, episode.search_text()))

    @staticmethod
    def _delete_episode(conn: sqlite3.Connection, tenant: str, event_id: str) -> None:
        row = conn.execute(
            "SELECT rowid FROM episodes WHERE tenant_id = ? AND event_id = ?", (tenant, event_id)
        ).fetchone()
        if row is None:
            return
        rowid = row[0]
        conn.execute("DELETE FROM episodes_fts WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM episode_tags WHERE tenant_id = ? AND episode_rowid = ?", (tenant, rowid))
        conn.execute("DELETE FROM episode_refs WHERE tenant_id = ? AND episode_rowid = ?", (tenant, rowid))
        conn.execute("DELETE FROM episodes WHERE rowid = ?", (rowid,))

    @staticmethod
    def _append_audit(conn: sqlite3.Connection, record: AuditRecord) -> None:
        conn.execute(
            "INSERT INTO audit (audit_id, tenant_id, at, action, event_id, doc) VALUES (?,?,?,?,?,?)",
            (
                record.audit_id,
                record.tenant_id,
                _micros(record.at),
                record.action,
                record.event_id,
                record.model_dump_json(by_alias=True),
            ),
        )

    def record_access(self, tenant_id: str, event_ids: Sequence[str], at: datetime) -> None:
        if not event_ids:
            return
        marks = ",".join("?" * len(event_ids))
        with self._transaction() as conn:
            conn.execute(
                "UPDATE episodes SET doc = json_set(doc, '$.accessCount', json_extract(doc, '$.accessCount') + 1, "
                f"'$.lastAccessedAt', ?) WHERE tenant_id = ? AND event_id IN ({marks})",
                (at.isoformat(), tenant_id, *event_ids),
            )

    def set_writes_enabled(self, tenant_id: str, enabled: bool, audit: AuditRecord) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO tenant_settings (tenant_id, writes_enabled) VALUES (?, ?) "
                "ON CONFLICT (tenant_id) DO UPDATE SET writes_enabled = excluded.writes_enabled",
                (tenant_id, int(enabled)),
            )
            self._append_audit(conn, audit)

    def busy_actors(self, since: datetime, until: datetime, min_count: int) -> list[tuple[str, str, int]]:
        rows = self._query(
            # episodic.digests.digestible: no digests, only the privacy classes a digest may repeat
            "SELECT tenant_id, actor_id, COUNT(*) FROM episodes WHERE status = ? AND event_type != ? "
            f"AND privacy_class IN ({','.join('?' * len(DIGEST_PRIVACY_ORDER))}) "
            "AND occurred_at >= ? AND occurred_at < ? "
            "GROUP BY tenant_id, actor_id HAVING COUNT(*) >= ? ORDER BY tenant_id, actor_id",
            (
                Status.ACTIVE,
                EventType.SESSION_SUMMARY,
                *DIGEST_PRIVACY_ORDER,
                _micros(since),
                _micros(until),
                min_count,
            ),
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def active_page(self, after: str | None, limit: int) -> tuple[list[Episode], str | None]:
        start = decode_cursor(after, (int,))[0] if after else 0
        rows = self._query(
            "SELECT rowid, doc FROM episodes WHERE status = 'active' AND rowid > ? ORDER BY rowid LIMIT ?",
            (start, limit + 1),
        )
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = encode_cursor([rows[-1][0]]) if more and rows else None
        return [Episode.model_validate_json(r[1]) for r in rows], cursor

    def stale_vectors(self, embedder: str, limit: int) -> list[Episode]:
        rows = self._query(
            "SELECT doc FROM episodes WHERE embedder IS NOT ? OR vector IS NULL ORDER BY rowid LIMIT ?",
            (embedder, limit),
        )
        return [Episode.model_validate_json(r[0]) for r in rows]

    def set_vectors(self, vectors: Sequence[tuple[Episode, Vector]], embedder: str) -> None:
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE episodes SET vector = ?, embedder = ? WHERE tenant_id = ? AND event_id = ?",
                [(pack_vector(v), embedder, ep.tenant_id, ep.event_id) for ep, v in vectors],
            )
        self.vectors.invalidate()  # rows changed in place: the rowid watermark cannot see that

    def compact_after_erasure(self) -> None:
        with self._write_lock:
            self._writer.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('optimize')")
            self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # ------------------------------------------------------------------ reads

    def get(self, tenant_id: str, event_id: str) -> Episode | None:
        row = self._one("SELECT doc FROM episodes WHERE tenant_id = ? AND event_id = ?", (tenant_id, event_id))
        return Episode.model_validate_json(row[0]) if row else None

    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]:
        result: dict[str, Episode] = {}
        ids = list(dict.fromkeys(event_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT event_id, doc FROM episodes WHERE tenant_id = ? AND event_id IN ({marks})",
                (tenant_id, *chunk),
            )
            for event_id, doc in rows:
                result[event_id] = Episode.model_validate_json(doc)
        return result

    def _scope_sql(self, scope: Scope, alias: str = "e") -> tuple[str, list[Any]]:
        """The WHERE clause every read uses. The tenant is always the first condition."""
        clauses = [f"{alias}.tenant_id = ?"]
        params: list[Any] = [scope.tenant_id]
        clauses.append(f"{alias}.status IN ({','.join('?' * len(scope.statuses))})")
        params += [s.value for s in scope.statuses]
        if len(scope.privacy_classes) < 4:
            clauses.append(f"{alias}.privacy_class IN ({','.join('?' * len(scope.privacy_classes))})")
            params += [p.value for p in scope.privacy_classes]
        clauses.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
        params.append(_micros(scope.now))
        if scope.actor_id:
            clauses.append(f"{alias}.actor_id = ?")
            params.append(scope.actor_id)
        if scope.project_id:
            clauses.append(f"{alias}.project_id = ?")
            params.append(scope.project_id)
        if scope.event_types:
            clauses.append(f"{alias}.event_type IN ({','.join('?' * len(scope.event_types))})")
            params += [t.value for t in scope.event_types]
        if scope.occurred_after:
            clauses.append(f"{alias}.occurred_at >= ?")
            params.append(_micros(scope.occurred_after))
        if scope.occurred_before:
            clauses.append(f"{alias}.occurred_at < ?")
            params.append(_micros(scope.occurred_before))
        for tag in scope.tags:
            clauses.append(f"{alias}.rowid IN (SELECT episode_rowid FROM episode_tags WHERE tenant_id = ? AND tag = ?)")
            params += [scope.tenant_id, tag]
        return " AND ".join(clauses), params

    def timeline(self, query: TimelineQuery) -> tuple[list[Episode], str | None]:
        where, params = self._scope_sql(query.scope)
        order = "DESC" if query.newest_first else "ASC"
        if query.cursor:
            occurred, event_id = decode_cursor(query.cursor, (int, str))
            op = "<" if query.newest_first else ">"
            where += f" AND (e.occurred_at, e.event_id) {op} (?, ?)"
            params += [occurred, event_id]
        rows = self._query(
            f"SELECT e.occurred_at, e.event_id, e.doc FROM episodes e WHERE {where} "
            f"ORDER BY e.occurred_at {order}, e.event_id {order} LIMIT ?",
            (*params, query.limit + 1),
        )
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        cursor = encode_cursor([rows[-1][0], rows[-1][1]]) if more and rows else None
        return [Episode.model_validate_json(r[2]) for r in rows], cursor

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        with self.reading() as conn:
            return self._candidates(conn, scope, query_text, query_vector, pool_size, embedder or self.embedder)

    def _candidates(
        self,
        conn: sqlite3.Connection,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | None,
        pool_size: int,
        embedder: str | None,
    ) -> RecallCandidates:
        where, params = self._scope_sql(scope)
        if query_text is None and query_vector is None:
            rows = conn.execute(
                f"SELECT e.event_id FROM episodes e WHERE {where} ORDER BY e.occurred_at DESC LIMIT ?",
                (*params, pool_size),
            ).fetchall()
            return RecallCandidates([Candidate(event_id=r[0]) for r in rows])

        lexical: dict[str, float] = {}
        match = fts_query(query_text or "")
        if match:
            rows = conn.execute(
                f"SELECT e.event_id, -bm25(episodes_fts) FROM episodes_fts JOIN episodes e "
                f"ON e.rowid = episodes_fts.rowid WHERE episodes_fts MATCH ? AND {where} "
                f"ORDER BY bm25(episodes_fts) LIMIT ?",
                (match, *params, pool_size),
            ).fetchall()
            lexical = {event_id: float(score) for event_id, score in rows}

        semantic: dict[str, float] = {}
        if query_vector is not None and embedder is not None:
            cursor = conn.execute(f"SELECT e.rowid FROM episodes e WHERE {where}", params)
            rowids = np.fromiter((r[0] for r in cursor), dtype=np.int64)
            if len(rowids):
                query = np.asarray(query_vector, dtype=np.float32)
                top, sims, _ = self.vectors.search(conn, scope.tenant_id, embedder, rowids, query, pool_size)
                marks = ",".join("?" * len(top))
                named = conn.execute(f"SELECT rowid, event_id FROM episodes WHERE rowid IN ({marks})", top.tolist())
                names = dict(named.fetchall())
                semantic = {names[int(r)]: float(v) for r, v in zip(top, sims, strict=True) if int(r) in names}

        ids = list(dict.fromkeys([*semantic, *lexical]))
        return RecallCandidates(
            [Candidate(event_id=i, lexical=lexical.get(i, 0.0), semantic=semantic.get(i, 0.0)) for i in ids]
        )

    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None:
        row = self._one(
            "SELECT request_hash, result, created_at FROM idempotency WHERE tenant_id = ? AND key = ?", (tenant_id, key)
        )
        if row is None:
            return None
        return IdempotencyRecord(
            tenant_id=tenant_id,
            key=key,
            request_hash=row[0],
            result=json.loads(row[1]),
            created_at=datetime.fromtimestamp(row[2] / 1_000_000, UTC),
        )

    def get_review(self, tenant_id: str, review_id: str) -> Review | None:
        row = self._one("SELECT doc FROM reviews WHERE tenant_id = ? AND review_id = ?", (tenant_id, review_id))
        return Review.model_validate_json(row[0]) if row else None

    def list_reviews(self, tenant_id: str, status: ReviewStatus | None, limit: int) -> list[Review]:
        sql = "SELECT doc FROM reviews WHERE tenant_id = ?"
        params: list[Any] = [tenant_id]
        if status:
            sql += " AND status = ?"
            params.append(status)
        rows = self._query(sql + " ORDER BY requested_at LIMIT ?", (*params, limit))
        return [Review.model_validate_json(r[0]) for r in rows]

    def reviews_requested_before(self, before: datetime, limit: int) -> list[Review]:
        rows = self._query(
            "SELECT doc FROM reviews WHERE status = 'pending' AND requested_at < ? ORDER BY requested_at LIMIT ?",
            (_micros(before), limit),
        )
        return [Review.model_validate_json(r[0]) for r in rows]

    def expired_episodes(self, now: datetime, limit: int) -> list[Episode]:
        rows = self._query(
            "SELECT doc FROM episodes WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?",
            (_micros(now), limit),
        )
        return [Episode.model_validate_json(r[0]) for r in rows]

    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]:
        rows = self._query("SELECT event_id FROM episodes WHERE tenant_id = ? AND actor_id = ?", (tenant_id, actor_id))
        return [r[0] for r in rows]

    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        refs = [cite(i) for i in event_ids]
        found: list[str] = []
        for start in range(0, len(refs), 500):
            chunk = refs[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                "SELECT DISTINCT e.event_id FROM episode_refs r JOIN episodes e ON e.rowid = r.episode_rowid "
                f"WHERE r.tenant_id = ? AND r.ref IN ({marks}) AND e.event_type = ?",
                (tenant_id, *chunk, EventType.SESSION_SUMMARY),
            )
            found += [r[0] for r in rows]
        return found

    def audit(self, query: AuditQuery) -> tuple[list[AuditRecord], str | None]:
        sql = "SELECT seq, doc FROM audit WHERE tenant_id = ?"
        params: list[Any] = [query.tenant_id]
        if query.event_id:
            sql += " AND event_id = ?"
            params.append(query.event_id)
        if query.action:
            sql += " AND action = ?"
            params.append(query.action)
        if query.since:
            sql += " AND at >= ?"
            params.append(_micros(query.since))
        if query.cursor:
            sql += " AND seq > ?"
            params.append(decode_cursor(query.cursor, (int,))[0])
        rows = self._query(sql + " ORDER BY seq LIMIT ?", (*params, query.limit + 1))
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        cursor = encode_cursor([rows[-1][0]]) if more and rows else None
        return [AuditRecord.model_validate_json(r[1]) for r in rows], cursor

    def writes_enabled(self, tenant_id: str) -> bool:
        row = self._one("SELECT writes_enabled FROM tenant_settings WHERE tenant_id = ?", (tenant_id,))
        return True if row is None else bool(row[0])

    def integrity_ok(self) -> bool:
        row = self._one("PRAGMA integrity_check")
        return row is not None and row[0] == "ok"

    def count(self, tenant_id: str, status: Status | None = None) -> int:
        sql = "SELECT COUNT(*) FROM episodes WHERE tenant_id = ?"
        params: list[Any] = [tenant_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status.value)
        row = self._one(sql, params)
        return int(row[0]) if row else 0
