"""The AWS timeline store: DynamoDB, single-table design (see ``tables.py`` for the keys).

Write semantics match the local store: every :class:`~episodic.ports.Changes` set becomes one
``TransactWriteItems`` call, so an episode, the status changes it causes, its review, its
idempotency record and its audit records (in the separate, append-only audit table)
commit together or not at all. Create-once writes use ``attribute_not_exists``; status
changes and review decisions are optimistic (``st = :expected``); a failed condition is a
:class:`~episodic.errors.ConflictError` and nothing is written.

A transaction cancelled only for transient reasons (``TransactionConflict`` with another
transaction on the same items, ``ThrottlingError``) wrote nothing, so it is sent again, a
few times with a short jittered backoff, before it becomes a
:class:`~episodic.errors.StorageError`. Every other DynamoDB failure that reaches a public
method -- throttling botocore gave up on, an unreachable endpoint, a missing table -- is a
:class:`~episodic.errors.StorageError` (503, the caller may retry) naming the error code
only, never a raw client error (which would be a 500) and never DynamoDB's message (which
can quote attribute values).

DynamoDB caps a transaction at 100 items. The only unbounded part of a write is its tag
and citation adjacency items; when a change would exceed the cap they are written before
the transaction (and deleted after it), which is safe because every read through them
fetches the episode item itself and drops ids that do not resolve.

TTL deletes lag by up to two days, so every read re-checks ``retention.expiresAt``.
"""

from __future__ import annotations

import functools
import json
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from ulid import ULID

from episodic.adapters.aws import tables as t
from episodic.adapters.codec import (
    decimal_numbers,
    decode_cursor,
    encode_cursor,
    pack_vector,
    plain_numbers,
    unpack_vector,
)
from episodic.citations import cite, cited_event_id
from episodic.digests import digestible
from episodic.errors import ConflictError, InvalidRequestError, StorageError
from episodic.model import AuditRecord, Episode, EventType, Review, ReviewStatus
from episodic.ports import (
    AuditQuery,
    Changes,
    IdempotencyRecord,
    NewEpisode,
    Scope,
    StoredEpisode,
    TimelineQuery,
    Vector,
)

MAX_TRANSACTION_ITEMS = 100
REVIEW_STATUSES = tuple(ReviewStatus)

TRANSACTION_ATTEMPTS = 3
TRANSIENT_CANCELLATIONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})
"""Cancellation reasons that say "not now" rather than "no": nothing was written, and the same
transaction is likely to go through a moment later."""

_REASON_LIST = re.compile(r"\[([A-Za-z, ]*)\]")
P = ParamSpec("P")
R = TypeVar("R")

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_dynamo(value: Any) -> dict[str, Any]:
    """Serialise JSON-compatible data; floats become Decimals as DynamoDB requires."""
    return _serializer.serialize(decimal_numbers(value))


def _item(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: _to_dynamo(v) if not isinstance(v, Binary) else {"B": bytes(v)} for k, v in attributes.items()}


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {k: plain_numbers(_deserializer.deserialize(v)) for k, v in item.items()}


def _episode(item: dict[str, Any]) -> Episode:
    return Episode.model_validate(plain_numbers(_deserializer.deserialize(item["ep"])))


def _review(item: dict[str, Any]) -> Review:
    return Review.model_validate(plain_numbers(_deserializer.deserialize(item["rv"])))


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def _cancellation_reasons(exc: ClientError) -> set[str]:
    """The codes of a cancelled transaction's items (``None`` for items that were fine), from
    ``CancellationReasons`` or, when a client leaves that out, from the message's ``[...]`` list."""
    reasons = {str(r.get("Code")) for r in exc.response.get("CancellationReasons", [])}
    if not reasons:
        listed = _REASON_LIST.search(str(exc.response.get("Error", {}).get("Message", "")))
        reasons = {part.strip() for part in listed[1].split(",")} if listed else set()
    return reasons - {"None", ""}


def _storage_errors(action: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Whatever client failure escapes a method's own handling becomes a :class:`StorageError`."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def translated(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(*args, **kwargs)
            except ClientError as exc:
                raise StorageError(f"DynamoDB {action} failed ({_code(exc)})") from exc
            except (BotoConnectionError, HTTPClientError) as exc:
                raise StorageError(f"DynamoDB {action} failed (connection failed)") from exc

        return translated

    return decorate


class DynamoTimelineStore:
    """:class:`~episodic.ports.TimelineStore` on DynamoDB. Takes a boto3 DynamoDB client."""

    def __init__(self, client: Any, timeline_table: str, audit_table: str) -> None:
        self.client = client
        self.table = timeline_table
        self.audit_table = audit_table

    # ------------------------------------------------------------------ writes

    @_storage_errors("write")
    def apply(self, changes: Changes) -> None:
        tenant = changes.tenant_id
        core: list[dict[str, Any]] = []
        adjacency_puts: list[dict[str, Any]] = []
        adjacency_deletes: list[dict[str, Any]] = []

        if changes.idempotency is not None:
            rec = changes.idempotency
            core.append(
                self._put(
                    {
                        "pk": t.idempotency_pk(tenant, rec.key),
                        "sk": "IDEM",
                        "requestHash": rec.request_hash,
                        "result": json.dumps(rec.result),
                        "createdAt": t.iso(rec.created_at),
                    },
                    create_once=True,
                )
            )
        for new in changes.put:
            core.append(self._put(self._episode_item(new), create_once=True))
            adjacency_puts += self._adjacency_items(new.episode)
        # One Update per episode: DynamoDB refuses two operations on one item in a transaction.
        updates: dict[str, tuple[list[str], dict[str, Any], str]] = {}
        for change in changes.status:
            sets, values, _ = updates.setdefault(change.event_id, ([], {}, "attribute_exists(pk)"))
            sets += ["st = :new", "ep.#status = :new"]
            values.update({":new": change.new.value, ":expected": change.expected.value})
            updates[change.event_id] = (sets, values, "st = :expected")
        for stats in changes.stats:
            sets, values, condition = updates.setdefault(stats.event_id, ([], {}, "attribute_exists(pk)"))
            sets += ["ep.feedbackScore = :f", "ep.feedbackCount = :c", "ep.retentionScore = :r"]
            values.update({":f": stats.feedback_score, ":c": stats.feedback_count, ":r": stats.retention_score})
        for event_id, (sets, values, condition) in updates.items():
            update: dict[str, Any] = {
                "TableName": self.table,
                "Key": _item({"pk": t.episode_pk(tenant, event_id), "sk": "EPISODE"}),
                "UpdateExpression": "SET " + ", ".join(sets),
                "ConditionExpression": condition,
                "ExpressionAttributeValues": _item(values),
            }
            if "#status" in update["UpdateExpression"]:
                update["ExpressionAttributeNames"] = {"#status": "status"}
            core.append({"Update": update})
        if changes.delete:
            existing = self._get_items(tenant, changes.delete)
            for event_id in changes.delete:
                key = _item({"pk": t.episode_pk(tenant, event_id), "sk": "EPISODE"})
                core.append({"Delete": {"TableName": self.table, "Key": key}})
                if event_id in existing:
                    adjacency_deletes += [
                        {"pk": a["pk"], "sk": a["sk"]} for a in self._adjacency_items(_episode(existing[event_id]))
                    ]
        for review in changes.reviews_put:
            core.append(self._put(self._review_item(review), create_once=True))
        for close in changes.reviews_close:
            core.append(
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": _item({"pk": t.review_pk(tenant, close.review_id), "sk": "REVIEW"}),
                        "UpdateExpression": "SET st = :new, gsi1pk = :g, rv.#status = :new, rv.decidedAt = :d, "
                        "rv.reviewer = :r, rv.note = :n REMOVE gsi5pk, gsi5sk",
                        "ConditionExpression": "st = :pending",
                        "ExpressionAttributeNames": {"#status": "status"},
                        "ExpressionAttributeValues": _item(
                            {
                                ":new": close.status,
                                ":g": f"{tenant}#RVS#{close.status}",
                                ":d": close.decided_at.isoformat(),
                                ":r": close.reviewer,
                                ":n": close.note,
                                ":pending": ReviewStatus.PENDING,
                            }
                        ),
                    }
                }
            )
        core += [self._audit_put(record) for record in changes.audit]

        adjacency_in_core = len(core) + len(adjacency_puts) + len(adjacency_deletes) <= MAX_TRANSACTION_ITEMS
        if adjacency_in_core:
            core += [self._put(a) for a in adjacency_puts]
            core += [{"Delete": {"TableName": self.table, "Key": _item(k)}} for k in adjacency_deletes]
        else:
            self._batch_write([{"PutRequest": {"Item": _item(a)}} for a in adjacency_puts])
        if len(core) > MAX_TRANSACTION_ITEMS:
            raise InvalidRequestError(
                f"one change touches {len(core)} items; DynamoDB transactions hold at most {MAX_TRANSACTION_ITEMS}"
            )
        if core:
            self._transact(core)
        if not adjacency_in_core:
            self._batch_write([{"DeleteRequest": {"Key": _item(k)}} for k in adjacency_deletes])

    def _put(self, attributes: dict[str, Any], create_once: bool = False) -> dict[str, Any]:
        put: dict[str, Any] = {"TableName": self.table, "Item": _item(attributes)}
        if create_once:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        return {"Put": put}

    def _audit_put(self, record: AuditRecord) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "pk": record.tenant_id,
            "sk": record.audit_id,
            "action": record.action,
            "rec": record.model_dump_json(by_alias=True),
        }
        if record.event_id:
            attributes["epk"] = f"{record.tenant_id}#E#{record.event_id}"
        # Append-only: create-once here, and the deployed roles may not update or delete.
        return {
            "Put": {
                "TableName": self.audit_table,
                "Item": _item(attributes),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _episode_item(self, new: NewEpisode) -> dict[str, Any]:
        ep = new.episode
        tenant, occ = ep.tenant_id, t.occ_key(ep.occurred_at, ep.event_id)
        attributes: dict[str, Any] = {
            "pk": t.episode_pk(tenant, ep.event_id),
            "sk": "EPISODE",
            "st": ep.status.value,
            "ep": ep.to_json_dict(),
            "gsi1pk": f"{tenant}#A#{ep.actor_id}",
            "gsi1sk": occ,
            "gsi2pk": f"{tenant}#Y#{ep.event_type.value}",
            "gsi2sk": occ,
            "gsi4pk": f"{tenant}#TL",
            "gsi4sk": occ,
        }
        if ep.project_id:
            attributes.update(gsi3pk=f"{tenant}#P#{ep.project_id}", gsi3sk=occ)
        if digestible(ep):  # the day index finds busy actors for the summarisation
            attributes.update(
                gsi6pk=t.day_key(ep.occurred_at, tenant, ep.actor_id), gsi6sk=f"{tenant}#{ep.actor_id}#{occ}"
            )
        if new.vector is not None:
            attributes["vec"] = Binary(pack_vector(new.vector))
            attributes["embedder"] = new.embedder
        expires = ep.retention.expires_at
        if expires is not None:
            attributes.update(
                ttl=t.epoch_seconds(expires),
                gsi5pk=t.expiry_shard(ep.event_id),
                gsi5sk=f"{t.iso(expires)}#{tenant}#{ep.event_id}",
            )
        return attributes

    @staticmethod
    def _adjacency_items(ep: Episode) -> list[dict[str, Any]]:
        """Tag items (timeline by tag) and citation items (summaries that cite an episode)."""
        occ = t.occ_key(ep.occurred_at, ep.event_id)
        ttl = {"ttl": t.epoch_seconds(ep.retention.expires_at)} if ep.retention.expires_at else {}
        items = [{"pk": t.tag_pk(ep.tenant_id, tag), "sk": occ, "eid": ep.event_id, **ttl} for tag in ep.tags]
        items += [
            {"pk": t.ref_pk(ep.tenant_id, ref), "sk": ep.event_id, "etype": ep.event_type.value, **ttl}
            for ref in ep.source_refs
            if cited_event_id(ref) is not None
        ]
        return items

    def _review_item(self, review: Review) -> dict[str, Any]:
        requested = t.iso(review.requested_at)
        attributes: dict[str, Any] = {
            "pk": t.review_pk(review.tenant_id, review.review_id),
            "sk": "REVIEW",
            "st": review.status,
            "rv": review.to_json_dict(),
            "gsi1pk": f"{review.tenant_id}#RVS#{review.status}",
            "gsi1sk": f"{requested}#{review.review_id}",
        }
        if review.status is ReviewStatus.PENDING:
            attributes.update(gsi5pk="PENDING", gsi5sk=f"{requested}#{review.tenant_id}#{review.review_id}")
        return attributes

    def _transact(self, items: list[dict[str, Any]]) -> None:
        """One ``TransactWriteItems``; a cancellation for transient reasons only is sent again.

        botocore gives each call one ``ClientRequestToken`` and reuses it for its own retries,
        so a retry after a lost response cannot apply the transaction twice."""
        for attempt in range(1, TRANSACTION_ATTEMPTS + 1):
            try:
                self.client.transact_write_items(TransactItems=items)
                return
            except ClientError as exc:
                if _code(exc) != "TransactionCanceledException":
                    raise StorageError(f"DynamoDB transaction failed ({_code(exc)})") from exc
                reasons = _cancellation_reasons(exc)
                if "ConditionalCheckFailed" in reasons:
                    raise ConflictError("a create-once or expected-status condition failed") from exc
                if not reasons <= TRANSIENT_CANCELLATIONS or attempt == TRANSACTION_ATTEMPTS:
                    named = ", ".join(sorted(reasons)) or "no reason given"
                    raise StorageError(f"DynamoDB transaction cancelled ({named}); retry later") from exc
            time.sleep(random.uniform(0.5, 1.0) * 0.05 * 2**attempt)

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), 25):
            pending = {self.table: requests[start : start + 25]}
            for _ in range(8):
                try:
                    response = self.client.batch_write_item(RequestItems=pending)
                except ClientError as exc:
                    raise StorageError(f"DynamoDB batch write failed ({_code(exc)})") from exc
                pending = response.get("UnprocessedItems") or {}
                if not pending:
                    break
            else:
                raise StorageError("DynamoDB kept items unprocessed; retry later")

    @_storage_errors("write")
    def record_access(self, tenant_id: str, event_ids: Sequence[str], at: datetime) -> None:
        for event_id in event_ids:
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=_item({"pk": t.episode_pk(tenant_id, event_id), "sk": "EPISODE"}),
                    UpdateExpression="SET ep.accessCount = ep.accessCount + :one, ep.lastAccessedAt = :at",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues=_item({":one": 1, ":at": at.isoformat()}),
                )
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise StorageError("could not record access") from exc

    @_storage_errors("write")
    def set_writes_enabled(self, tenant_id: str, enabled: bool, audit: AuditRecord) -> None:
        self._transact(
            [
                self._put({"pk": t.settings_pk(tenant_id), "sk": "WRITES", "enabled": enabled}),
                self._audit_put(audit),
            ]
        )

    @_storage_errors("read")
    def busy_actors(self, since: datetime, until: datetime, min_count: int) -> list[tuple[str, str, int]]:
        counts: dict[tuple[str, str], int] = {}
        day = since.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        while day < until:
            for shard in range(t.DAY_SHARDS):
                query = {
                    "IndexName": "gsi6",
                    "KeyConditionExpression": "gsi6pk = :pk",
                    "ExpressionAttributeValues": _item({":pk": f"DAY#{day:%Y-%m-%d}#{shard}"}),
                }
                for item in self._query(**query):
                    tenant, actor, occ = item["gsi6sk"]["S"].split("#", 2)
                    occurred = occ.split("#", 1)[0]
                    if item.get("st", {}).get("S") == "active" and t.iso(since) <= occurred < t.iso(until):
                        counts[(tenant, actor)] = counts.get((tenant, actor), 0) + 1
            day += timedelta(days=1)
        return sorted((tenant, actor, n) for (tenant, actor), n in counts.items() if n >= min_count)

    @_storage_errors("read")
    def active_page(self, after: str | None, limit: int) -> tuple[list[Episode], str | None]:
        """A maintenance scan (the decay sweep), resumable from ``after``."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "sk = :episode AND st = :active",
            "ExpressionAttributeValues": _item({":episode": "EPISODE", ":active": "active"}),
        }
        if after:
            request["ExclusiveStartKey"] = _item(decode_cursor(after, (dict,))[0])
        episodes: list[Episode] = []
        while True:
            response = self.client.scan(**request)
            episodes += [_episode(item) for item in response.get("Items", [])]
            last = response.get("LastEvaluatedKey")
            if not last or len(episodes) >= limit:
                return episodes, encode_cursor([_plain(last)]) if last else None
            request["ExclusiveStartKey"] = last

    @_storage_errors("write")
    def attach_review_token(self, tenant_id: str, review_id: str, token: str) -> bool:
        """Keep the Step Functions task token on the review so the decision can complete it.
        False when the review is no longer pending (the token is then of no use)."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=_item({"pk": t.review_pk(tenant_id, review_id), "sk": "REVIEW"}),
                UpdateExpression="SET taskToken = :t",
                ConditionExpression="st = :pending",
                ExpressionAttributeValues=_item({":t": token, ":pending": ReviewStatus.PENDING}),
            )
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise StorageError("could not record the review task token") from exc

    @_storage_errors("read")
    def review_token(self, tenant_id: str, review_id: str) -> str | None:
        response = self.client.get_item(
            TableName=self.table, Key=_item({"pk": t.review_pk(tenant_id, review_id), "sk": "REVIEW"})
        )
        return response.get("Item", {}).get("taskToken", {}).get("S")

    @_storage_errors("read")
    def stale_vectors(self, embedder: str, limit: int) -> list[Episode]:
        """A maintenance scan (not a tenant read path): episode items whose vector is missing or
        was made by another embedder."""
        paginator = self.client.get_paginator("scan")
        pages = paginator.paginate(
            TableName=self.table,
            FilterExpression="sk = :episode AND (attribute_not_exists(vec) OR embedder <> :e)",
            ExpressionAttributeValues=_item({":episode": "EPISODE", ":e": embedder}),
        )
        found: list[Episode] = []
        for page in pages:
            for item in page.get("Items", []):
                found.append(_episode(item))
                if len(found) == limit:
                    return found
        return found

    @_storage_errors("write")
    def set_vectors(self, vectors: Sequence[tuple[Episode, Vector]], embedder: str) -> None:
        for episode, vector in vectors:
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=_item({"pk": t.episode_pk(episode.tenant_id, episode.event_id), "sk": "EPISODE"}),
                    UpdateExpression="SET vec = :v, embedder = :e",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues={
                        ":v": {"B": pack_vector(vector)},
                        ":e": {"S": embedder},
                    },
                )
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise StorageError("could not store a re-embedded vector") from exc

    # ------------------------------------------------------------------ reads

    def _get_items(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        ids = list(dict.fromkeys(event_ids))
        for start in range(0, len(ids), 100):
            keys = [_item({"pk": t.episode_pk(tenant_id, i), "sk": "EPISODE"}) for i in ids[start : start + 100]]
            request: dict[str, Any] = {self.table: {"Keys": keys}}
            for _ in range(8):
                try:
                    response = self.client.batch_get_item(RequestItems=request)
                except ClientError as exc:
                    raise StorageError(f"DynamoDB read failed ({_code(exc)})") from exc
                for item in response.get("Responses", {}).get(self.table, []):
                    event_id = item["pk"]["S"].split("#EP#", 1)[1]
                    found[event_id] = item
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
        return found

    @_storage_errors("read")
    def get(self, tenant_id: str, event_id: str) -> Episode | None:
        try:
            response = self.client.get_item(
                TableName=self.table, Key=_item({"pk": t.episode_pk(tenant_id, event_id), "sk": "EPISODE"})
            )
        except ClientError as exc:
            raise StorageError(f"DynamoDB read failed ({_code(exc)})") from exc
        item = response.get("Item")
        return _episode(item) if item else None

    @_storage_errors("read")
    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]:
        return {i: _episode(item) for i, item in self._get_items(tenant_id, event_ids).items()}

    def _query(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """All items of a query, page by page (callers stop early by breaking out)."""
        kwargs.setdefault("TableName", self.table)
        while True:
            try:
                response = self.client.query(**kwargs)
            except ClientError as exc:
                raise StorageError(f"DynamoDB query failed ({_code(exc)})") from exc
            except (BotoConnectionError, HTTPClientError) as exc:
                raise StorageError("DynamoDB query failed (connection failed)") from exc
            yield from response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def _iter_scope(
        self, scope: Scope, newest_first: bool = True, after_key: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any], Episode]]:
        """Episodes inside ``scope`` in occurrence order, from the most selective index.

        Yields ``(sort key, raw item, episode)``; the sort key resumes iteration after it.
        Every scope condition is re-checked on the episode, so an index only narrows the read.
        """
        tenant = scope.tenant_id
        if scope.actor_id:
            index, pk = "gsi1", f"{tenant}#A#{scope.actor_id}"
        elif scope.project_id:
            index, pk = "gsi3", f"{tenant}#P#{scope.project_id}"
        elif scope.tags:
            index, pk = None, t.tag_pk(tenant, scope.tags[0])
        elif len(scope.event_types) == 1:
            index, pk = "gsi2", f"{tenant}#Y#{scope.event_types[0].value}"
        else:
            index, pk = "gsi4", f"{tenant}#TL"
        low = t.iso(scope.occurred_after) if scope.occurred_after else "0"  # keys may not be empty
        high = t.iso(scope.occurred_before) if scope.occurred_before else "~"
        if after_key is not None:
            if newest_first:
                high = min(high, after_key)
            else:
                low = max(low, after_key)
        pk_name, sk_name = (f"{index}pk", f"{index}sk") if index else ("pk", "sk")
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :low AND :high",
            "ExpressionAttributeNames": {"#pk": pk_name, "#sk": sk_name},
            "ExpressionAttributeValues": _item({":pk": pk, ":low": low, ":high": high}),
            "ScanIndexForward": not newest_first,
        }
        if index:
            query["IndexName"] = index
            items: Iterator[dict[str, Any]] = self._query(**query)
        else:
            items = self._resolve_adjacency(tenant, self._query(**query))
        for item in items:
            sort_key = item[sk_name]["S"] if index else item["_sk"]
            if sort_key == after_key:  # BETWEEN is inclusive; the cursor item was already returned
                continue
            episode = _episode(item)
            if scope.admits(episode):
                yield sort_key, item, episode

    def read_scope(self, scope: Scope) -> Iterator[StoredEpisode]:
        """:class:`~episodic.ports.ScopeReader`: the scope newest first, with stored vectors."""
        for _, item, episode in self._iter_scope(scope, newest_first=True):
            raw = item.get("vec", {}).get("B")
            embedder = item.get("embedder", {}).get("S")
            yield StoredEpisode(episode, None if raw is None else unpack_vector(raw), embedder)

    def _resolve_adjacency(self, tenant: str, adjacency: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Turn tag items into their episode items, in order, 100 at a time; orphans drop out."""
        page: list[dict[str, Any]] = []

        def flush() -> Iterator[dict[str, Any]]:
            found = self._get_items(tenant, [a["eid"]["S"] for a in page])
            for a in page:
                item = found.get(a["eid"]["S"])
                if item is not None:
                    yield {**item, "_sk": a["sk"]["S"]}

        for adj in adjacency:
            page.append(adj)
            if len(page) == 100:
                yield from flush()
                page = []
        if page:
            yield from flush()

    @_storage_errors("read")
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

    @_storage_errors("read")
    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None:
        response = self.client.get_item(
            TableName=self.table, Key=_item({"pk": t.idempotency_pk(tenant_id, key), "sk": "IDEM"})
        )
        item = response.get("Item")
        if not item:
            return None
        plain = _plain(item)
        return IdempotencyRecord(
            tenant_id=tenant_id,
            key=key,
            request_hash=plain["requestHash"],
            result=json.loads(plain["result"]),
            created_at=datetime.fromisoformat(plain["createdAt"].replace("Z", "+00:00")),
        )

    @_storage_errors("read")
    def get_review(self, tenant_id: str, review_id: str) -> Review | None:
        response = self.client.get_item(
            TableName=self.table, Key=_item({"pk": t.review_pk(tenant_id, review_id), "sk": "REVIEW"})
        )
        item = response.get("Item")
        return _review(item) if item else None

    @_storage_errors("read")
    def list_reviews(self, tenant_id: str, status: ReviewStatus | None, limit: int) -> list[Review]:
        reviews: list[Review] = []
        for state in [status] if status else REVIEW_STATUSES:
            query = {
                "IndexName": "gsi1",
                "KeyConditionExpression": "gsi1pk = :pk",
                "ExpressionAttributeValues": _item({":pk": f"{tenant_id}#RVS#{state}"}),
            }
            for item in self._query(**query):
                reviews.append(_review(item))
                if len(reviews) >= limit and status:
                    break
        reviews.sort(key=lambda r: r.requested_at)
        return reviews[:limit]

    @_storage_errors("read")
    def reviews_requested_before(self, before: datetime, limit: int) -> list[Review]:
        query = {
            "IndexName": "gsi5",
            "KeyConditionExpression": "gsi5pk = :pk AND gsi5sk < :before",
            "ExpressionAttributeValues": _item({":pk": "PENDING", ":before": t.iso(before)}),
        }
        reviews = []
        for item in self._query(**query):
            reviews.append(_review(item))
            if len(reviews) == limit:
                break
        return reviews

    @_storage_errors("read")
    def expired_episodes(self, now: datetime, limit: int) -> list[Episode]:
        episodes: list[Episode] = []
        for shard in range(t.EXPIRY_SHARDS):
            query = {
                "IndexName": "gsi5",
                "KeyConditionExpression": "gsi5pk = :pk AND gsi5sk < :now",
                "ExpressionAttributeValues": _item({":pk": f"EXP#{shard}", ":now": t.iso(now)}),
            }
            for item in self._query(**query):
                episodes.append(_episode(item))
                if len(episodes) >= limit * 2:
                    break
        episodes.sort(key=lambda e: e.retention.expires_at or now)
        return episodes[:limit]

    @_storage_errors("read")
    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]:
        query = {
            "IndexName": "gsi1",
            "KeyConditionExpression": "gsi1pk = :pk",
            "ExpressionAttributeValues": _item({":pk": f"{tenant_id}#A#{actor_id}"}),
        }
        return [item["pk"]["S"].split("#EP#", 1)[1] for item in self._query(**query)]

    @_storage_errors("read")
    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        found: list[str] = []
        for event_id in event_ids:
            query = {
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": _item({":pk": t.ref_pk(tenant_id, cite(event_id))}),
            }
            found += [
                i["sk"]["S"] for i in self._query(**query) if i.get("etype", {}).get("S") == EventType.SESSION_SUMMARY
            ]
        existing = self._get_items(tenant_id, found)
        return [i for i in dict.fromkeys(found) if i in existing]

    @_storage_errors("read")
    def audit(self, query: AuditQuery) -> tuple[list[AuditRecord], str | None]:
        low = "0"  # below every ULID; key values may not be empty
        if query.since is not None:
            low = str(ULID.from_int(int(ULID.from_datetime(query.since)) >> 80 << 80))
        if query.cursor:
            low = max(low, decode_cursor(query.cursor, (str,))[0])
        request: dict[str, Any] = {"TableName": self.audit_table, "ScanIndexForward": True}
        if query.event_id:
            request.update(
                IndexName="by_event",
                KeyConditionExpression="epk = :pk AND sk > :low",
                ExpressionAttributeValues=_item({":pk": f"{query.tenant_id}#E#{query.event_id}", ":low": low}),
            )
        else:
            request.update(
                KeyConditionExpression="pk = :pk AND sk > :low",
                ExpressionAttributeValues=_item({":pk": query.tenant_id, ":low": low}),
            )
        records: list[AuditRecord] = []
        for item in self._query(**request):
            if query.action and item["action"]["S"] != query.action:
                continue
            if len(records) == query.limit:
                return records, encode_cursor([records[-1].audit_id])
            records.append(AuditRecord.model_validate_json(item["rec"]["S"]))
        return records, None

    @_storage_errors("read")
    def writes_enabled(self, tenant_id: str) -> bool:
        response = self.client.get_item(
            TableName=self.table, Key=_item({"pk": t.settings_pk(tenant_id), "sk": "WRITES"})
        )
        item = response.get("Item")
        return True if not item else bool(item["enabled"]["BOOL"])

    def close(self) -> None:
        """Clients need no closing; present so entry points treat every store alike."""
