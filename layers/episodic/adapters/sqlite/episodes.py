"""The timeline on SQLite: :class:`Episodes`, the :class:`~episodic.application.ports.EpisodeStore`
part of :class:`~episodic.adapters.sqlite.store.SqliteStore`.

Why a change set is all or nothing: :meth:`Episodes.apply_many` runs each set's statements
(:func:`~episodic.adapters.sqlite.writes.write_changes`: the idempotency key, the episodes, their
status and stats changes, deletions, reviews and audit records of one use case) as one unit
of a group commit (:mod:`.group_commit`), so they are committed (and fsynced) together or not at
all -- an acknowledged write always has its audit record and its idempotency key, and
a failed condition leaves nothing behind.

Reads name their tenant; reads over a scope go through :func:`.scope.scope_sql`; lists of ids
are queried in chunks (:func:`.reads.chunks`); stored rows become episodes through the memo of
:func:`.reads.stored`, which an erasure empties.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from episodic.adapters.codec import decode_cursor, encode_cursor
from episodic.adapters.sqlite.database import Database, from_micros
from episodic.adapters.sqlite.reads import EPISODE_COLUMNS, chunks, forget_parsed, stored
from episodic.adapters.sqlite.scope import scope_sql
from episodic.adapters.sqlite.word_index import WordIndex
from episodic.adapters.sqlite.writes import count_access, write_changes
from episodic.adapters.vectors.index import VectorSearch
from episodic.application.ports import Changes, IdempotencyRecord, TimelineQuery
from episodic.domain.digests.citations import cite
from episodic.domain.errors import ConflictError, StorageError
from episodic.domain.model import AuditRecord, Episode, EventType, Status

PAGES_AT_ONCE = 50
"""Timeline pages read in one statement: well under SQLite's 500 terms of a compound select."""


class Episodes:
    """Change sets and access counts; episodes by id and in scope, idempotency records, the
    lookups erasure needs, and counts."""

    def __init__(
        self, db: Database, vectors: VectorSearch, words: WordIndex, on_erasures: Callable[[str], None] | None = None
    ) -> None:
        """``vectors`` and ``words`` are the in-memory indexes recall searches: an erasure drops its rows.
        ``on_erasures`` hears at once of a tenant whose episodes this process deleted."""
        self.db, self.vectors, self.words, self.on_erasures = db, vectors, words, on_erasures

    def apply(self, changes: Changes) -> None:
        """Commit ``changes`` atomically; :class:`ConflictError` (and nothing written) when a
        create-once or expected-status condition fails."""
        (conflict,) = self.apply_many([changes])
        if conflict is not None:
            raise conflict

    def apply_many(self, change_sets: Sequence[Changes]) -> list[ConflictError | None]:
        """Each set atomically, all in one group commit (one fsync for the lot; none when no set
        is ``durable``)."""
        durable = any(c.durable for c in change_sets)
        erased: list[list[int]] = [[] for _ in change_sets]
        writes = [partial(_write, changes=c, erased=e) for c, e in zip(change_sets, erased, strict=True)]
        errors = self.db.group.run(writes, durable=durable)
        if any(c.delete for c in change_sets):
            forget_parsed()  # no parsed copy of a deleted episode outlives it here, nor its vector:
            for changes, rowids, error in zip(change_sets, erased, errors, strict=True):
                if error is None and rowids:
                    self.vectors.forget(changes.tenant_id, rowids)
                    self.words.forget(changes.tenant_id, rowids)
                    if self.on_erasures is not None:
                        self.on_erasures(changes.tenant_id)
        written: dict[str, list[str]] = {}  # a batch's episodes are a set each: told once a tenant
        for changes, error in zip(change_sets, errors, strict=True):
            active = [new.episode.summary for new in changes.put if new.episode.status is Status.ACTIVE]
            if error is None and active:
                written.setdefault(changes.tenant_id, []).extend(active)
        for tenant, summaries in written.items():
            self.words.written(tenant, summaries)
        for error in errors:
            if error is not None and not isinstance(error, ConflictError):
                raise error
        return [e if isinstance(e, ConflictError) else None for e in errors]

    def record_recall(self, audit: AuditRecord, event_ids: Sequence[str], at: datetime) -> bool:
        """Both in one group commit, as two change sets: the count runs only after the record was
        written, and its failure leaves the record."""
        audited: list[bool] = []
        record = Changes(tenant_id=audit.tenant_id, audit=[audit], durable=False)

        def append(conn: Any) -> None:
            audited.clear()  # a run the group rolled back does not count
            write_changes(conn, record, [])
            audited.append(True)

        def count(conn: Any) -> None:
            if audited:
                count_access(conn, audit.tenant_id, event_ids, at)

        errors = self.db.group.run([append, count] if event_ids else [append], durable=False)
        if errors[0] is not None:
            raise errors[0] if isinstance(errors[0], StorageError) else StorageError(f"could not audit: {errors[0]}")
        return len(errors) == 1 or errors[1] is None

    def get(self, tenant_id: str, event_id: str) -> Episode | None:
        row = self.db.one(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE tenant_id = ? AND event_id = ?", (tenant_id, event_id)
        )
        return stored(*row) if row else None

    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]:
        result: dict[str, Episode] = {}
        for chunk, marks in chunks(list(dict.fromkeys(event_ids))):
            rows = self.db.query(
                f"SELECT event_id, {EPISODE_COLUMNS} FROM episodes WHERE tenant_id = ? AND event_id IN ({marks})",
                (tenant_id, *chunk),
            )
            for event_id, doc, count, last in rows:
                result[event_id] = stored(doc, count, last)
        return result

    def timeline(self, query: TimelineQuery) -> tuple[list[Episode], str | None]:
        """A page of the scope by time; the cursor is ``(occurred_at, event_id)`` of the last
        episode served, so pages stay stable while episodes are written meanwhile."""
        sql, params = _page_sql(query, "", query.limit + 1, with_cursor=True)
        rows = self.db.query(sql, params)
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        cursor = encode_cursor([rows[-1][0], rows[-1][1]]) if more and rows else None
        return [stored(*r[2:]) for r in rows], cursor

    def timelines(self, queries: Sequence[TimelineQuery]) -> list[list[Episode]]:
        """Each query's first page, in one statement for up to :data:`PAGES_AT_ONCE` of them (each
        page a subquery with its own order and limit, tagged with its place)."""
        pages: list[list[tuple[int, str, Episode]]] = [[] for _ in queries]
        for start in range(0, len(queries), PAGES_AT_ONCE):
            parts, params = [], []
            for n, query in enumerate(queries[start : start + PAGES_AT_ONCE], start):
                sql, page_params = _page_sql(query, f"{n}, ", query.limit, with_cursor=False)
                parts.append(f"SELECT * FROM ({sql})")
                params += page_params
            for n, occurred, event_id, *row in self.db.query(" UNION ALL ".join(parts), params):
                pages[n].append((occurred, event_id, stored(*row)))
        for page, query in zip(pages, queries, strict=True):  # a compound select keeps no order
            page.sort(key=lambda entry: entry[:2], reverse=query.newest_first)
        return [[episode for _, _, episode in page] for page in pages]

    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None:
        row = self.db.one(
            "SELECT request_hash, result, created_at FROM idempotency WHERE tenant_id = ? AND key = ?", (tenant_id, key)
        )
        if row is None:
            return None
        return IdempotencyRecord(
            tenant_id=tenant_id,
            key=key,
            request_hash=row[0],
            result=json.loads(row[1]),
            created_at=from_micros(row[2]),
        )

    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]:
        rows = self.db.query(
            "SELECT event_id FROM episodes WHERE tenant_id = ? AND actor_id = ?", (tenant_id, actor_id)
        )
        return [r[0] for r in rows]

    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        """Session summaries citing any of ``event_ids``, found through the ``episode_refs`` index."""
        found: list[str] = []
        for chunk, marks in chunks([cite(i) for i in event_ids]):
            rows = self.db.query(
                "SELECT DISTINCT e.event_id FROM episode_refs r JOIN episodes e ON e.rowid = r.episode_rowid "
                f"WHERE r.tenant_id = ? AND r.ref IN ({marks}) AND e.event_type = ?",
                (tenant_id, *chunk, EventType.SESSION_SUMMARY),
            )
            found += [r[0] for r in rows]
        return found

    def count(self, tenant_id: str, status: Status | None = None) -> int:
        """How many episodes the tenant has (in ``status``, if given): for operators and tests."""
        sql = "SELECT COUNT(*) FROM episodes WHERE tenant_id = ?"
        params: list[Any] = [tenant_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status.value)
        row = self.db.one(sql, params)
        return int(row[0]) if row else 0


def _page_sql(query: TimelineQuery, tag: str, limit: int, with_cursor: bool) -> tuple[str, list[Any]]:
    """The SELECT of one timeline page: ``tag`` (columns put first), then occurred_at, event_id and
    the columns :func:`.reads.stored` reads, in ``query``'s scope and order (after its cursor,
    ``with_cursor``), at most ``limit`` rows."""
    where, params = scope_sql(query.scope)
    order = "DESC" if query.newest_first else "ASC"
    if with_cursor and query.cursor:
        occurred, event_id = decode_cursor(query.cursor, (int, str))
        where += f" AND (e.occurred_at, e.event_id) {'<' if query.newest_first else '>'} (?, ?)"
        params += [occurred, event_id]
    sql = (
        f"SELECT {tag}e.occurred_at, e.event_id, e.doc, e.access_count, e.last_accessed_at FROM episodes e "
        f"WHERE {where} ORDER BY e.occurred_at {order}, e.event_id {order} LIMIT ?"
    )
    return sql, [*params, limit]


def _write(conn: Any, changes: Changes, erased: list[int]) -> None:
    """``changes``' statements, with ``erased`` holding the rowids of this run's deletions only (the
    group commit may roll a run back and run the set again)."""
    erased.clear()
    write_changes(conn, changes, erased)
