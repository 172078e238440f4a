"""The timeline on DynamoDB: :class:`Episodes`, the :class:`~episodic.application.ports.EpisodeStore`
(and :class:`~episodic.application.ports.ScopeReader`) part of
:class:`~episodic.adapters.dynamodb.store.DynamoTimelineStore`.

Every :class:`~episodic.application.ports.Changes` set is one ``TransactWriteItems`` call
(:mod:`.writes`), so it commits together or not at all; a scope is read from its most selective
index and re-checked on each episode (:mod:`.reads`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime

from botocore.exceptions import ClientError

from episodic.adapters.codec import decode_cursor, encode_cursor, unpack_vector
from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.audit_chain import CHAIN_ATTEMPTS
from episodic.adapters.dynamodb.database import (
    ChainMoved,
    Database,
    condition_failed,
    episode_of,
    from_item,
    storage_errors,
    to_item,
)
from episodic.adapters.dynamodb.reads import iter_scope
from episodic.adapters.dynamodb.writes import commit, plan
from episodic.application.ports import Changes, IdempotencyRecord, Scope, StoredEpisode, TimelineQuery
from episodic.domain.digests.citations import cite
from episodic.domain.errors import ConflictError, StorageError
from episodic.domain.model import AuditRecord, Episode, EventType


class Episodes:
    """The one write path (:meth:`apply`), access counts, episodes by id and in scope,
    idempotency records, and the erasure lookups."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @storage_errors("write")
    def apply(self, changes: Changes) -> None:
        """One transaction, planned again (after the new head) when another writer appended to
        its audit chain first."""
        for _ in range(CHAIN_ATTEMPTS):
            try:
                commit(self.db, plan(self.db, changes))
                return
            except ChainMoved:
                time.sleep(random.uniform(0.0, 0.02))
        raise StorageError("the tenant's audit chain kept moving under this write; retry later")

    def apply_many(self, change_sets: Sequence[Changes]) -> list[ConflictError | None]:
        """One transaction per set: DynamoDB has no savepoints, and a set may hold up to its
        100-item cap on its own."""
        outcomes: list[ConflictError | None] = []
        for changes in change_sets:
            try:
                self.apply(changes)
                outcomes.append(None)
            except ConflictError as exc:
                outcomes.append(exc)
        return outcomes

    @storage_errors("write")
    def _count_access(self, tenant_id: str, event_ids: Sequence[str], at: datetime) -> None:
        for event_id in event_ids:
            try:
                self.db.client.update_item(
                    TableName=self.db.table,
                    Key=to_item(t.episode_key(tenant_id, event_id)),
                    UpdateExpression="SET ep.accessCount = ep.accessCount + :one, ep.lastAccessedAt = :at",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues=to_item({":one": 1, ":at": at.isoformat()}),
                )
            except ClientError as exc:
                if not condition_failed(exc):
                    raise StorageError("could not record access") from exc

    def record_recall(self, audit: AuditRecord, event_ids: Sequence[str], at: datetime) -> bool:
        """The record's transaction, then the counts (DynamoDB has no savepoints to share one)."""
        self.apply(Changes(tenant_id=audit.tenant_id, audit=[audit], durable=False))
        try:
            self._count_access(audit.tenant_id, event_ids, at)
        except StorageError:
            return False
        return True

    @storage_errors("read")
    def get(self, tenant_id: str, event_id: str) -> Episode | None:
        response = self.db.client.get_item(TableName=self.db.table, Key=to_item(t.episode_key(tenant_id, event_id)))
        item = response.get("Item")
        return episode_of(item) if item else None

    @storage_errors("read")
    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]:
        return {i: episode_of(item) for i, item in self.db.get_items(tenant_id, event_ids).items()}

    @storage_errors("read")
    def timeline(self, query: TimelineQuery) -> tuple[list[Episode], str | None]:
        after = decode_cursor(query.cursor, (str,))[0] if query.cursor else None
        episodes: list[Episode] = []
        last_key = None
        for sort_key, _, episode in iter_scope(self.db, query.scope, query.newest_first, after):
            if len(episodes) == query.limit:
                return episodes, encode_cursor([last_key])
            episodes.append(episode)
            last_key = sort_key
        return episodes, None

    def timelines(self, queries: Sequence[TimelineQuery]) -> list[list[Episode]]:
        """Each query's first page, one after another: each is its own query of the table."""
        return [self.timeline(replace(query, cursor=None))[0] for query in queries]

    def read_scope(self, scope: Scope) -> Iterator[StoredEpisode]:
        """:class:`~episodic.application.ports.ScopeReader`: the scope newest first, with stored vectors."""
        for _, item, episode in iter_scope(self.db, scope, newest_first=True):
            raw = item.get("vec", {}).get("B")
            embedder = item.get("embedder", {}).get("S")
            yield StoredEpisode(episode, None if raw is None else unpack_vector(raw), embedder)

    @storage_errors("read")
    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None:
        response = self.db.client.get_item(TableName=self.db.table, Key=to_item(t.idempotency_key(tenant_id, key)))
        item = response.get("Item")
        if not item:
            return None
        plain = from_item(item)
        return IdempotencyRecord(
            tenant_id=tenant_id,
            key=key,
            request_hash=plain["requestHash"],
            result=json.loads(plain["result"]),
            created_at=datetime.fromisoformat(plain["createdAt"].replace("Z", "+00:00")),
        )

    @storage_errors("read")
    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]:
        query = {
            "IndexName": t.BY_ACTOR.name,
            "KeyConditionExpression": f"{t.BY_ACTOR.pk} = :pk",
            "ExpressionAttributeValues": to_item({":pk": t.actor_pk(tenant_id, actor_id)}),
        }
        return [t.event_id_of(item["pk"]["S"]) for item in self.db.query(**query)]

    @storage_errors("read")
    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        found: list[str] = []
        for event_id in event_ids:
            query = {
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": to_item({":pk": t.ref_pk(tenant_id, cite(event_id))}),
            }
            found += [
                i["sk"]["S"] for i in self.db.query(**query) if i.get("etype", {}).get("S") == EventType.SESSION_SUMMARY
            ]
        existing = self.db.get_items(tenant_id, found)
        return [i for i in dict.fromkeys(found) if i in existing]
