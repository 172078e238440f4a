"""How a scope is read on DynamoDB (the timeline and
:class:`~episodic.application.ports.ScopeReader` of :class:`~episodic.adapters.dynamodb.episodes.Episodes`).

A scope is read from the most selective index it allows (an actor's, a project's, a tag's
adjacency items, an event type's, or the whole tenant's timeline), and every scope
condition is re-checked on the episode itself: an index only narrows the read. TTL deletes
lag by up to two days, so that re-check includes ``retention.expiresAt``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.database import BATCH_GET_KEYS, Database, episode_of, to_item
from episodic.application.ports import Scope
from episodic.domain.model import Episode


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


def iter_scope(
    db: Database, scope: Scope, newest_first: bool = True, after_key: str | None = None
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
        items: Iterator[dict[str, Any]] = db.query(**query)
    else:
        items = _resolve_adjacency(db, scope.tenant_id, db.query(**query))
    for item in items:
        sort_key = item[sk_name]["S"] if index else item["_sk"]
        if sort_key == after_key:  # BETWEEN is inclusive; the cursor item was already returned
            continue
        episode = episode_of(item)
        if scope.admits(episode):
            yield sort_key, item, episode


def _resolve_adjacency(db: Database, tenant: str, adjacency: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Turn tag items into their episode items, in order, a batch get at a time; orphans drop out."""
    page: list[dict[str, Any]] = []

    def flush() -> Iterator[dict[str, Any]]:
        found = db.get_items(tenant, [a["eid"]["S"] for a in page])
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
