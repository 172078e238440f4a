"""The DynamoDB client plumbing every part of the timeline store shares.

* item (de)serialisation: :func:`to_item`, :func:`from_item`, :func:`episode_of`, :func:`review_of`;
* error translation: whatever client failure reaches a public method becomes a
  :class:`~episodic.domain.errors.StorageError` (503, the caller may retry) naming the error code
  only, never a raw client error (which would be a 500) and never DynamoDB's message (which
  can quote attribute values) -- :func:`storage_errors`;
* :class:`Database`, the client and table names every part of
  :class:`~episodic.adapters.dynamodb.store.DynamoTimelineStore` shares: paged queries, batched
  gets and writes, and transactions.

A transaction cancelled only for transient reasons (``TransactionConflict`` with another
transaction on the same items, ``ThrottlingError``) wrote nothing, so it is sent again, a
few times with a short jittered backoff, before it becomes a ``StorageError``; a failed
condition is a :class:`~episodic.domain.errors.ConflictError` and nothing is written.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from episodic.adapters.codec import decimal_numbers, plain_numbers
from episodic.adapters.dynamodb import tables as t
from episodic.domain import linear
from episodic.domain.errors import ConflictError, StorageError
from episodic.domain.model import Episode, Review

TRANSACTION_ATTEMPTS = 3
TRANSIENT_CANCELLATIONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})
"""Cancellation reasons that say "not now" rather than "no": nothing was written, and the same
transaction is likely to go through a moment later."""
BATCH_GET_KEYS = 100  # DynamoDB's cap on one BatchGetItem
BATCH_WRITE_REQUESTS = 25  # and on one BatchWriteItem
BATCH_ROUNDS = 8  # how often unprocessed keys or items are sent again

_REASON_LIST = linear.compile(r"\[([A-Za-z, ]*)\]")
P = ParamSpec("P")
R = TypeVar("R")

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


# ------------------------------------------------------------------ items


def to_item(attributes: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB's typed form of JSON-compatible attributes (floats become Decimals; ``Binary`` stays binary)."""
    return {
        k: {"B": bytes(v)} if isinstance(v, Binary) else _serializer.serialize(decimal_numbers(v))
        for k, v in attributes.items()
    }


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    """Plain Python values of a typed item (numbers back to ``int``/``float``)."""
    return {k: plain_numbers(_deserializer.deserialize(v)) for k, v in item.items()}


def episode_of(item: dict[str, Any]) -> Episode:
    return Episode.model_validate(plain_numbers(_deserializer.deserialize(item["ep"])))


def review_of(item: dict[str, Any]) -> Review:
    return Review.model_validate(plain_numbers(_deserializer.deserialize(item["rv"])))


# ------------------------------------------------------------------ errors


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def condition_failed(exc: ClientError) -> bool:
    """A single-item write whose condition did not hold."""
    return exc.response["Error"]["Code"] == "ConditionalCheckFailedException"


def cancellation_reasons(exc: ClientError) -> set[str]:
    """The codes of a cancelled transaction's items (``None`` for items that were fine), from
    ``CancellationReasons`` or, when a client leaves that out, from the message's ``[...]`` list."""
    reasons = {str(r.get("Code")) for r in exc.response.get("CancellationReasons", [])}
    if not reasons:
        listed = _REASON_LIST.search(str(exc.response.get("Error", {}).get("Message", "")))
        reasons = {part.strip() for part in listed[1].split(",")} if listed else set()
    return reasons - {"None", ""}


class ChainMoved(Exception):
    """Another writer appended to the audit chain a transaction was planned on (its head item's
    condition alone failed, so nothing was written): plan the transaction again."""


def is_chain_head(item: dict[str, Any]) -> bool:
    """Whether a transaction item is the update of an audit chain's head (``audit_chain.py``)."""
    update = item.get("Update") or {}
    return str(update.get("Key", {}).get("sk", {}).get("S", "")).startswith(t.AUDIT_CHAIN_SK)


def _only_chain_heads_failed(items: list[dict[str, Any]], exc: ClientError) -> bool:
    listed = exc.response.get("CancellationReasons") or []
    failed = [i for i, r in enumerate(listed) if r.get("Code") == "ConditionalCheckFailed"]
    return bool(failed) and all(i < len(items) and is_chain_head(items[i]) for i in failed)


def storage_errors(action: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Whatever client failure escapes a method's own handling becomes a :class:`StorageError`."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def translated(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(*args, **kwargs)
            except ClientError as exc:
                raise StorageError(f"DynamoDB {action} failed ({error_code(exc)})") from exc
            except (BotoConnectionError, HTTPClientError) as exc:
                raise StorageError(f"DynamoDB {action} failed (connection failed)") from exc

        return translated

    return decorate


# ------------------------------------------------------------------ the shared client


class Database:
    """The client, the two table names, and the calls every port of the store is built from."""

    def __init__(self, client: Any, timeline_table: str, audit_table: str) -> None:
        self.client = client
        self.table = timeline_table
        self.audit_table = audit_table

    def query(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """All items of a query (on the timeline unless ``TableName`` says otherwise), page by
        page; callers stop early by breaking out."""
        kwargs.setdefault("TableName", self.table)
        while True:
            try:
                response = self.client.query(**kwargs)
            except ClientError as exc:
                raise StorageError(f"DynamoDB query failed ({error_code(exc)})") from exc
            except (BotoConnectionError, HTTPClientError) as exc:
                raise StorageError("DynamoDB query failed (connection failed)") from exc
            yield from response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def get_items(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The raw episode items of these ids that exist, by id (batched, unprocessed keys sent again)."""
        found: dict[str, dict[str, Any]] = {}
        ids = list(dict.fromkeys(event_ids))
        for start in range(0, len(ids), BATCH_GET_KEYS):
            keys = [to_item(t.episode_key(tenant_id, i)) for i in ids[start : start + BATCH_GET_KEYS]]
            request: dict[str, Any] = {self.table: {"Keys": keys}}
            for _ in range(BATCH_ROUNDS):
                try:
                    response = self.client.batch_get_item(RequestItems=request)
                except ClientError as exc:
                    raise StorageError(f"DynamoDB read failed ({error_code(exc)})") from exc
                for item in response.get("Responses", {}).get(self.table, []):
                    found[t.event_id_of(item["pk"]["S"])] = item
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
        return found

    def put(self, attributes: dict[str, Any], create_once: bool = False) -> dict[str, Any]:
        """A transaction ``Put`` on the timeline (``create_once``: only if no such item exists)."""
        put: dict[str, Any] = {"TableName": self.table, "Item": to_item(attributes)}
        if create_once:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        return {"Put": put}

    def transact(self, items: list[dict[str, Any]]) -> None:
        """One ``TransactWriteItems``; a cancellation for transient reasons only is sent again.

        botocore gives each call one ``ClientRequestToken`` and reuses it for its own retries,
        so a retry after a lost response cannot apply the transaction twice."""
        for attempt in range(1, TRANSACTION_ATTEMPTS + 1):
            try:
                self.client.transact_write_items(TransactItems=items)
                return
            except ClientError as exc:
                if error_code(exc) != "TransactionCanceledException":
                    raise StorageError(f"DynamoDB transaction failed ({error_code(exc)})") from exc
                reasons = cancellation_reasons(exc)
                if _only_chain_heads_failed(items, exc):
                    raise ChainMoved from exc
                if "ConditionalCheckFailed" in reasons:
                    raise ConflictError("a create-once or expected-status condition failed") from exc
                if not reasons <= TRANSIENT_CANCELLATIONS or attempt == TRANSACTION_ATTEMPTS:
                    named = ", ".join(sorted(reasons)) or "no reason given"
                    raise StorageError(f"DynamoDB transaction cancelled ({named}); retry later") from exc
            time.sleep(random.uniform(0.5, 1.0) * 0.05 * 2**attempt)

    def batch_write(self, requests: list[dict[str, Any]]) -> None:
        """``PutRequest``/``DeleteRequest``s on the timeline, 25 at a time, unprocessed ones sent again."""
        for start in range(0, len(requests), BATCH_WRITE_REQUESTS):
            pending = {self.table: requests[start : start + BATCH_WRITE_REQUESTS]}
            for _ in range(BATCH_ROUNDS):
                try:
                    response = self.client.batch_write_item(RequestItems=pending)
                except ClientError as exc:
                    raise StorageError(f"DynamoDB batch write failed ({error_code(exc)})") from exc
                pending = response.get("UnprocessedItems") or {}
                if not pending:
                    break
            else:
                raise StorageError("DynamoDB kept items unprocessed; retry later")
