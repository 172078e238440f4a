"""The read half of :class:`~episodic.application.ports.EpisodeStore` on DynamoDB, and
:class:`~episodic.application.ports.ScopeReader`.

A scope is read from the most selective index it allows (an actor's, a project's, a tag's
adjacency items, an event type's, or the whole tenant's timeline), and every scope
condition is re-checked on the episode itself: an index only narrows the read. TTL deletes
lag by up to two days, so that re-check includes ``retention.expiresAt``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from episodic.adapters.codec import decode_cursor, encode_cursor, unpack_vector
from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.base import (
    BATCH_GET_KEYS,
    DynamoBase,
    episode_of,
    from_item,
    storage_errors,
    to_item,
)
from episodic.application.ports import IdempotencyRecord, Scope, StoredEpisode, TimelineQuery
from episodic.domain.digests.citations import cite
from episodic.domain.model import Episode, EventType


def _scope_partition(scope: Scope) -> tuple[t.Index | None, str]:
    """The most selective partition holding the scope: an index and its partition key, or
    ``None`` and a tag's adjacency partition in the table itself."""
    tenant = scope.tenant_id
    if scope.actor_id:
        return t.BY_ACTOR, t.actor_pk(tenant, scope.actor_id)
    if scope.project_id:
        return t.BY_PROJECT, t.project_pk(tenant, scope.project_id)
    if scope.tags:
        return None, t.tag_pk(tenant, scope.tags[0])
    if len(scope.event_types) == 1:
        return t.BY_TYPE, t.type_pk(tenant, scope.event_types[0].value)
    return t.BY_TENANT, t.tenant_timeline_pk(tenant)


def _occurrence_range(scope: Scope, newest_first: bool, after_key: str | None) -> tuple[str, str]:
    """The ``BETWEEN`` bounds of the ``occ#id`` sort keys: the scope's time window, narrowed to
    what comes after ``after_key`` in reading order."""
    low = t.iso(scope.occurred_after) if scope.occurred_after else "0"  # keys may not be empty
    high = t.iso(scope.occurred_before) if scope.occurred_before else "~"
    if after_key is not None:
        if newest_first:
            high = min(high, after_key)
        else:
            low = max(low, after_key)
    return low, high


class EpisodeReads(DynamoBase):
    """Episodes by id and in scope, idempotency records, and the erasure lookups."""

    @storage_errors("read")
    def get(self, tenant_id: str, event_id: str) -> Episode | None:
        response = self.client.get_item(TableName=self.table, Key=to_item(t.episode_key(tenant_id, event_id)))
        item = response.get("Item")
        return episode_of(item) if item else None

    @storage_errors("read")
    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]:
        return {i: episode_of(item) for i, item in self._get_items(tenant_id, event_ids).items()}

    @storage_errors("read")
    def timeline(self, query: TimelineQuery) -> tuple[list[Episode], str | None]:
        after = decode_cursor(query.cursor, (str,))[0] if query.cursor else None
        episodes: list[Episode] = []
        last_key = None
        for sort_key, _, episode in self._iter_scope(query.scope, query.newest_first, after):
            if len(episodes) == query.limit:
                return episodes, encode_cursor([last_key])
            episodes.append(episode)
            last_key = sort_key
        return episodes, None

    def read_scope(self, scope: Scope) -> Iterator[StoredEpisode]:
        """:class:`~episodic.application.ports.ScopeReader`: the scope newest first, with stored vectors."""
        for _, item, episode in self._iter_scope(scope, newest_first=True):
            raw = item.get("vec", {}).get("B")
            embedder = item.get("embedder", {}).get("S")
            yield StoredEpisode(episode, None if raw is None else unpack_vector(raw), embedder)

    def _iter_scope(
        self, scope: Scope, newest_first: bool = True, after_key: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any], Episode]]:
        """Episodes inside ``scope`` in occurrence order, from the most selective index.

        Yields ``(sort key, raw item, episode)``; the sort key resumes iteration after it.
        """
        index, pk = _scope_partition(scope)
        low, high = _occurrence_range(scope, newest_first, after_key)
        pk_name, sk_name = (index.pk, index.sk) if index else ("pk", "sk")
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :low AND :high",
            "ExpressionAttributeNames": {"#pk": pk_name, "#sk": sk_name},
            "ExpressionAttributeValues": to_item({":pk": pk, ":low": low, ":high": high}),
            "ScanIndexForward": not newest_first,
        }
        if index:
            query["IndexName"] = index.name
            items: Iterator[dict[str, Any]] = self._query(**query)
        else:
            items = self._resolve_adjacency(scope.tenant_id, self._query(**query))
        for item in items:
            sort_key = item[sk_name]["S"] if index else item["_sk"]
            if sort_key == after_key:  # BETWEEN is inclusive; the cursor item was already returned
                continue
            episode = episode_of(item)
            if scope.admits(episode):
                yield sort_key, item, episode

    def _resolve_adjacency(self, tenant: str, adjacency: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Turn tag items into their episode items, in order, a batch get at a time; orphans drop out."""
        page: list[dict[str, Any]] = []

        def flush() -> Iterator[dict[str, Any]]:
            found = self._get_items(tenant, [a["eid"]["S"] for a in page])
            for a in page:
                item = found.get(a["eid"]["S"])
                if item is not None:
                    yield {**item, "_sk": a["sk"]["S"]}

        for adj in adjacency:
            page.append(adj)
            if len(page) == BATCH_GET_KEYS:
                yield from flush()
                page = []
        if page:
            yield from flush()

    @storage_errors("read")
    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None:
        response = self.client.get_item(TableName=self.table, Key=to_item(t.idempotency_key(tenant_id, key)))
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
        return [t.event_id_of(item["pk"]["S"]) for item in self._query(**query)]

    @storage_errors("read")
    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        found: list[str] = []
        for event_id in event_ids:
            query = {
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": to_item({":pk": t.ref_pk(tenant_id, cite(event_id))}),
            }
            found += [
                i["sk"]["S"] for i in self._query(**query) if i.get("etype", {}).get("S") == EventType.SESSION_SUMMARY
            ]
        existing = self._get_items(tenant_id, found)
        return [i for i in dict.fromkeys(found) if i in existing]
