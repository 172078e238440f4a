"""Reads across every tenant for the service's own schedules, and re-embedding
(the :class:`~episodic.application.ports.MaintenanceScans` and
:class:`~episodic.application.ports.VectorMaintenance` ports).

Why these are apart from the tenant-facing reads: apart from the review-timeout sweep's
:meth:`~.governance.Governance.reviews_requested_before`, they are the only queries that do
not start with a tenant. The ports promise they are never reachable from a tenant's request,
so they are kept together, where that is easy to check.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from episodic.adapters.codec import decode_cursor, encode_cursor, pack_vector
from episodic.adapters.sqlite.database import Database, micros
from episodic.adapters.sqlite.reads import EPISODE_COLUMNS, scanned
from episodic.adapters.sqlite.word_index import WordIndex
from episodic.adapters.vectors.index import VectorSearch
from episodic.application.ports import Vector
from episodic.domain.digests.rules import DIGEST_PRIVACY_ORDER
from episodic.domain.model import Episode, EventType, Status
from episodic.domain.recall import languages

INDEXED_TEXT_VERSION = f"{Episode.SEARCH_TEXT_VERSION}.{languages.INDEXED_VERSION}"
"""The shape of what ``episode_texts`` holds for an episode: its search text's, then the
stems' (:func:`~episodic.domain.recall.languages.indexed`); a store that holds another re-indexes."""


class Maintenance:
    """Expiry, decay and digest scans over all tenants, and vector replacement."""

    def __init__(self, db: Database, vectors: VectorSearch, words: WordIndex) -> None:
        self.db, self.vector_search, self.words = db, vectors, words

    def expired_episodes(self, now: datetime, limit: int) -> list[Episode]:
        rows = self.db.query(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE expires_at IS NOT NULL AND expires_at <= ? "
            "ORDER BY expires_at LIMIT ?",
            (micros(now), limit),
        )
        return [scanned(*r) for r in rows]

    def busy_actors(self, since: datetime, until: datetime, min_count: int) -> list[tuple[str, str, int]]:
        rows = self.db.query(
            # episodic.domain.digests.rules.digestible: no digests, only the privacy classes a digest may repeat
            "SELECT tenant_id, actor_id, COUNT(*) FROM episodes WHERE status = ? AND event_type != ? "
            f"AND privacy_class IN ({','.join('?' * len(DIGEST_PRIVACY_ORDER))}) "
            "AND occurred_at >= ? AND occurred_at < ? "
            "GROUP BY tenant_id, actor_id HAVING COUNT(*) >= ? ORDER BY tenant_id, actor_id",
            (
                Status.ACTIVE,
                EventType.SESSION_SUMMARY,
                *DIGEST_PRIVACY_ORDER,
                micros(since),
                micros(until),
                min_count,
            ),
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def active_page(self, after: str | None, limit: int) -> tuple[list[Episode], str | None]:
        """A page in rowid order; the cursor is the last rowid served."""
        start = decode_cursor(after, (int,))[0] if after else 0
        rows = self.db.query(
            f"SELECT rowid, {EPISODE_COLUMNS} FROM episodes WHERE status = 'active' AND rowid > ? "
            "ORDER BY rowid LIMIT ?",
            (start, limit + 1),
        )
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = encode_cursor([rows[-1][0]]) if more and rows else None
        return [scanned(*r[1:]) for r in rows], cursor

    def stale_vectors(self, embedder: str, limit: int) -> list[Episode]:
        rows = self.db.query(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE embedder IS NOT ? OR vector IS NULL ORDER BY rowid LIMIT ?",
            (embedder, limit),
        )
        return [scanned(*r) for r in rows]

    def set_vectors(self, vectors: Sequence[tuple[Episode, Vector]], embedder: str) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "UPDATE episodes SET vector = ?, embedder = ? WHERE tenant_id = ? AND event_id = ?",
                [(pack_vector(v), embedder, ep.tenant_id, ep.event_id) for ep, v in vectors],
            )
        self.vector_search.invalidate()  # rows changed in place: the rowid watermark cannot see that

    def refresh_search_text(self, batch: int = 1000) -> int:
        """Re-index the lexical text of every episode written under an earlier shape of
        :meth:`Episode.search_text` or of its stems (:data:`INDEXED_TEXT_VERSION`: a one-time step
        when an upgraded service opens an older data dir; no model needed). Returns how many were
        re-indexed. Their vectors keep the text they were made from: they stay comparable."""
        wanted = INDEXED_TEXT_VERSION
        if self.db.query("SELECT 1 FROM meta WHERE key = 'search_text_version' AND value = ?", (wanted,)):
            return 0
        done, last = 0, 0
        while rows := self.db.query(
            "SELECT rowid, doc FROM episodes WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, batch)
        ):
            texts = [(languages.indexed(Episode.model_validate_json(doc).search_text()), rowid) for rowid, doc in rows]
            with self.db.transaction() as conn:
                conn.executemany("UPDATE episode_texts SET text = ? WHERE rowid = ?", texts)
            done, last = done + len(rows), rows[-1][0]
        with self.db.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('search_text_version', ?)", (wanted,))
        self.words.invalidate()  # texts changed in place: the rowid watermark cannot see that
        return done
