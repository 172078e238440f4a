"""The maintenance ports (:class:`~episodic.application.ports.MaintenanceScans`,
:class:`~episodic.application.ports.VectorMaintenance`) on DynamoDB.

Reads across every tenant, for the service's own schedules and never reachable from a
tenant's request: the expiry sweep (``by_expiry``, sharded), the summarisation's busy
actors (``by_day``, sharded), and the two table scans -- the relevance-decay sweep and the
re-embedding of vectors another model made.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from episodic.adapters.codec import decode_cursor, encode_cursor, pack_vector
from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.database import (
    Database,
    condition_failed,
    episode_of,
    from_item,
    storage_errors,
    to_item,
)
from episodic.application.ports import Vector
from episodic.domain.errors import StorageError
from episodic.domain.model import Episode


class Maintenance:
    """The sweeps' reads, and the re-embedding's vector writes."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @storage_errors("read")
    def expired_episodes(self, now: datetime, limit: int) -> list[Episode]:
        episodes: list[Episode] = []
        for shard in range(t.EXPIRY_SHARDS):
            query = {
                "IndexName": t.BY_EXPIRY.name,
                "KeyConditionExpression": f"{t.BY_EXPIRY.pk} = :pk AND {t.BY_EXPIRY.sk} < :now",
                "ExpressionAttributeValues": to_item({":pk": t.expiry_pk(shard), ":now": t.iso(now)}),
            }
            for item in self.db.query(**query):
                episodes.append(episode_of(item))
                if len(episodes) >= limit * 2:
                    break
        episodes.sort(key=lambda e: e.retention.expires_at or now)
        return episodes[:limit]

    @storage_errors("read")
    def busy_actors(self, since: datetime, until: datetime, min_count: int) -> list[tuple[str, str, int]]:
        counts: dict[tuple[str, str], int] = {}
        day = since.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        while day < until:
            for shard in range(t.DAY_SHARDS):
                query = {
                    "IndexName": t.BY_DAY.name,
                    "KeyConditionExpression": f"{t.BY_DAY.pk} = :pk",
                    "ExpressionAttributeValues": to_item({":pk": t.day_pk(day, shard)}),
                }
                for item in self.db.query(**query):
                    tenant, actor, occurred = t.parse_day_sk(item[t.BY_DAY.sk]["S"])
                    if item.get("st", {}).get("S") == "active" and t.iso(since) <= occurred < t.iso(until):
                        counts[(tenant, actor)] = counts.get((tenant, actor), 0) + 1
            day += timedelta(days=1)
        return sorted((tenant, actor, n) for (tenant, actor), n in counts.items() if n >= min_count)

    @storage_errors("read")
    def active_page(self, after: str | None, limit: int) -> tuple[list[Episode], str | None]:
        """A maintenance scan (the decay sweep), resumable from ``after``."""
        request: dict[str, Any] = {
            "TableName": self.db.table,
            "FilterExpression": "sk = :episode AND st = :active",
            "ExpressionAttributeValues": to_item({":episode": t.EPISODE_SK, ":active": "active"}),
        }
        if after:
            request["ExclusiveStartKey"] = to_item(decode_cursor(after, (dict,))[0])
        episodes: list[Episode] = []
        while True:
            response = self.db.client.scan(**request)
            episodes += [episode_of(item) for item in response.get("Items", [])]
            last = response.get("LastEvaluatedKey")
            if not last or len(episodes) >= limit:
                return episodes, encode_cursor([from_item(last)]) if last else None
            request["ExclusiveStartKey"] = last

    @storage_errors("read")
    def stale_vectors(self, embedder: str, limit: int) -> list[Episode]:
        """A maintenance scan (not a tenant read path): episode items whose vector is missing or
        was made by another embedder."""
        paginator = self.db.client.get_paginator("scan")
        pages = paginator.paginate(
            TableName=self.db.table,
            FilterExpression="sk = :episode AND (attribute_not_exists(vec) OR embedder <> :e)",
            ExpressionAttributeValues=to_item({":episode": t.EPISODE_SK, ":e": embedder}),
        )
        found: list[Episode] = []
        for page in pages:
            for item in page.get("Items", []):
                found.append(episode_of(item))
                if len(found) == limit:
                    return found
        return found

    @storage_errors("write")
    def set_vectors(self, vectors: Sequence[tuple[Episode, Vector]], embedder: str) -> None:
        for episode, vector in vectors:
            try:
                self.db.client.update_item(
                    TableName=self.db.table,
                    Key=to_item(t.episode_key(episode.tenant_id, episode.event_id)),
                    UpdateExpression="SET vec = :v, embedder = :e",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues={
                        ":v": {"B": pack_vector(vector)},
                        ":e": {"S": embedder},
                    },
                )
            except ClientError as exc:
                if not condition_failed(exc):
                    raise StorageError("could not store a re-embedded vector") from exc
