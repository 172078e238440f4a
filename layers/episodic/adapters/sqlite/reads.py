"""The read side of :class:`~episodic.application.ports.EpisodeStore`: episodes by id, the timeline,
idempotency keys and the lookups erasure needs.

Every read here names its tenant; reads over a scope go through :func:`.sqlite_scope.scope_sql`.
Lists of ids are queried in chunks of :data:`CHUNK` so no statement exceeds SQLite's limit
on bound parameters, whatever the caller passes.

Why parsed episodes are memoised: a recall reads every candidate of its pool (a few hundred
episodes) to admit and rank them, and turning each stored JSON document back into a validated
:class:`~episodic.domain.model.Episode` was a fifth of its time. :func:`parsed` keeps the most recent
documents' episodes, keyed by the document itself, so a changed episode (a new status, an
access count) is a new key and never answered from an old copy. Nothing mutates an episode in
place (changes are ``model_copy``), so a shared instance is safe. An erasure empties the memo
in the process that erases (:mod:`.sqlite_writes`); another ``--workers`` process keeps its
parsed copy until it is evicted, and never serves it, since no row holds that document any more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from episodic.adapters.codec import decode_cursor, encode_cursor
from episodic.adapters.sqlite.database import Database, from_micros
from episodic.adapters.sqlite.scope import scope_sql
from episodic.application.ports import IdempotencyRecord, TimelineQuery
from episodic.domain.digests.citations import cite
from episodic.domain.model import Episode, EventType, Status

CHUNK = 500
PARSED_EPISODES = 4096
"""How many parsed episodes :func:`parsed` keeps (a few MiB)."""


@lru_cache(maxsize=PARSED_EPISODES)
def parsed(doc: str) -> Episode:
    """The episode a stored document holds (memoised: see the module docstring)."""
    return Episode.model_validate_json(doc)


def chunks(values: Sequence[str]) -> Iterator[tuple[Sequence[str], str]]:
    """``(chunk, marks)``: slices of at most :data:`CHUNK` values, with their ``?,?,...`` list."""
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        yield chunk, ",".join("?" * len(chunk))


class EpisodeReads(Database):
    """Episodes by id and in scope, idempotency records, and counts."""

    def get(self, tenant_id: str, event_id: str) -> Episode | None:
        row = self._one("SELECT doc FROM episodes WHERE tenant_id = ? AND event_id = ?", (tenant_id, event_id))
        return parsed(row[0]) if row else None

    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]:
        result: dict[str, Episode] = {}
        for chunk, marks in chunks(list(dict.fromkeys(event_ids))):
            rows = self._query(
                f"SELECT event_id, doc FROM episodes WHERE tenant_id = ? AND event_id IN ({marks})",
                (tenant_id, *chunk),
            )
            for event_id, doc in rows:
                result[event_id] = parsed(doc)
        return result

    def timeline(self, query: TimelineQuery) -> tuple[list[Episode], str | None]:
        """A page of the scope by time; the cursor is ``(occurred_at, event_id)`` of the last
        episode served, so pages stay stable while episodes are written meanwhile."""
        where, params = scope_sql(query.scope)
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
        return [parsed(r[2]) for r in rows], cursor

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
            created_at=from_micros(row[2]),
        )

    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]:
        rows = self._query("SELECT event_id FROM episodes WHERE tenant_id = ? AND actor_id = ?", (tenant_id, actor_id))
        return [r[0] for r in rows]

    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        """Session summaries citing any of ``event_ids``, found through the ``episode_refs`` index."""
        found: list[str] = []
        for chunk, marks in chunks([cite(i) for i in event_ids]):
            rows = self._query(
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
        row = self._one(sql, params)
        return int(row[0]) if row else 0
