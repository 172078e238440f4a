"""How a change set becomes DynamoDB writes (:meth:`~episodic.adapters.dynamodb.episodes.Episodes.apply`).

Every :class:`~episodic.application.ports.Changes` set becomes one ``TransactWriteItems`` call, so an
episode, the status changes it causes, its review, its idempotency record and its audit
records (in the separate, append-only audit table) commit together or not at all.
Create-once writes use ``attribute_not_exists``; status changes and review decisions are
optimistic (``st = :expected``); a failed condition is a
:class:`~episodic.domain.errors.ConflictError` and nothing is written.

DynamoDB caps a transaction at 100 items. The only unbounded part of a write is its tag
and citation adjacency items; when a change would exceed the cap they are written before
the transaction (and deleted after it), which is safe because every read through them
fetches the episode item itself and drops ids that do not resolve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.audit_chain import chained_items
from episodic.adapters.dynamodb.database import Database, episode_of, to_item
from episodic.adapters.dynamodb.items import (
    adjacency_items,
    adjacency_keys,
    episode_item,
    episode_updates,
    idempotency_item,
    review_close,
    review_item,
    review_scrub,
)
from episodic.application.ports import Changes
from episodic.domain.errors import InvalidRequestError

MAX_TRANSACTION_ITEMS = 100


@dataclass
class WritePlan:
    """One change set as DynamoDB writes: the transaction, and the adjacency items (attributes
    to put, keys to delete) that join it when they fit."""

    core: list[dict[str, Any]] = field(default_factory=list)
    adjacency_puts: list[dict[str, Any]] = field(default_factory=list)
    adjacency_deletes: list[dict[str, Any]] = field(default_factory=list)


def plan(db: Database, changes: Changes) -> WritePlan:
    """Every write of one change set: create-once puts, conditional updates, deletes (with the
    adjacency items of what they delete), reviews and audit records."""
    tenant = changes.tenant_id
    writes = WritePlan()
    if changes.idempotency is not None:
        writes.core.append(db.put(idempotency_item(tenant, changes.idempotency), create_once=True))
    for new in changes.put:
        writes.core.append(db.put(episode_item(new), create_once=True))
        writes.adjacency_puts += adjacency_items(new.episode)
    writes.core += [_update(db, update) for update in episode_updates(changes)]
    if changes.delete:
        _plan_deletes(db, tenant, changes.delete, writes)
    writes.core += [db.put(review_item(review), create_once=True) for review in changes.reviews_put]
    writes.core += [_update(db, review_close(tenant, close)) for close in changes.reviews_close]
    writes.core += [_update(db, review_scrub(tenant, review_id)) for review_id in changes.reviews_scrub]
    writes.core += chained_items(db, changes.audit)
    return writes


def _update(db: Database, update: dict[str, Any]) -> dict[str, Any]:
    """A transaction ``Update`` on the timeline from plain ``UpdateItem`` arguments."""
    typed = {**update, "Key": to_item(update["Key"])}
    typed["ExpressionAttributeValues"] = to_item(update["ExpressionAttributeValues"])
    return {"Update": {"TableName": db.table, **typed}}


def _plan_deletes(db: Database, tenant: str, event_ids: Sequence[str], writes: WritePlan) -> None:
    """Delete the episodes, and the tag and citation items of those that exist."""
    existing = db.get_items(tenant, event_ids)
    for event_id in event_ids:
        writes.core.append({"Delete": {"TableName": db.table, "Key": to_item(t.episode_key(tenant, event_id))}})
        if event_id in existing:
            writes.adjacency_deletes += adjacency_keys(episode_of(existing[event_id]))


def commit(db: Database, writes: WritePlan) -> None:
    """The transaction, with the adjacency items in it when the whole fits under the cap;
    otherwise adjacency puts before it and adjacency deletes after it, batched."""
    core = writes.core
    adjacency_in_core = len(core) + len(writes.adjacency_puts) + len(writes.adjacency_deletes) <= MAX_TRANSACTION_ITEMS
    if adjacency_in_core:
        core += [db.put(a) for a in writes.adjacency_puts]
        core += [{"Delete": {"TableName": db.table, "Key": to_item(k)}} for k in writes.adjacency_deletes]
    else:
        db.batch_write([{"PutRequest": {"Item": to_item(a)}} for a in writes.adjacency_puts])
    if len(core) > MAX_TRANSACTION_ITEMS:
        raise InvalidRequestError(
            f"one change touches {len(core)} items; DynamoDB transactions hold at most {MAX_TRANSACTION_ITEMS}"
        )
    if core:
        db.transact(core)
    if not adjacency_in_core:
        db.batch_write([{"DeleteRequest": {"Key": to_item(k)}} for k in writes.adjacency_deletes])
