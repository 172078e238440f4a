"""The write half of :class:`~episodic.application.ports.EpisodeStore` on DynamoDB: :meth:`EpisodeWrites.apply`
and the access counters.

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
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.base import DynamoBase, condition_failed, episode_of, storage_errors, to_item
from episodic.adapters.dynamodb.items import (
    adjacency_items,
    adjacency_keys,
    episode_item,
    episode_updates,
    idempotency_item,
    review_close,
    review_item,
)
from episodic.application.ports import Changes
from episodic.domain.errors import ConflictError, InvalidRequestError, StorageError

MAX_TRANSACTION_ITEMS = 100


@dataclass
class _WritePlan:
    """One change set as DynamoDB writes: the transaction, and the adjacency items (attributes
    to put, keys to delete) that join it when they fit."""

    core: list[dict[str, Any]] = field(default_factory=list)
    adjacency_puts: list[dict[str, Any]] = field(default_factory=list)
    adjacency_deletes: list[dict[str, Any]] = field(default_factory=list)


class EpisodeWrites(DynamoBase):
    """:meth:`apply`, the one write path, and :meth:`record_access`."""

    @storage_errors("write")
    def apply(self, changes: Changes) -> None:
        tenant = changes.tenant_id
        plan = _WritePlan()
        if changes.idempotency is not None:
            plan.core.append(self._put(idempotency_item(tenant, changes.idempotency), create_once=True))
        for new in changes.put:
            plan.core.append(self._put(episode_item(new), create_once=True))
            plan.adjacency_puts += adjacency_items(new.episode)
        plan.core += [self._update(update) for update in episode_updates(changes)]
        if changes.delete:
            self._plan_deletes(tenant, changes.delete, plan)
        plan.core += [self._put(review_item(review), create_once=True) for review in changes.reviews_put]
        plan.core += [self._update(review_close(tenant, close)) for close in changes.reviews_close]
        plan.core += [self._audit_put(record) for record in changes.audit]
        self._commit(plan)

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

    def _update(self, update: dict[str, Any]) -> dict[str, Any]:
        """A transaction ``Update`` on the timeline from plain ``UpdateItem`` arguments."""
        typed = {**update, "Key": to_item(update["Key"])}
        typed["ExpressionAttributeValues"] = to_item(update["ExpressionAttributeValues"])
        return {"Update": {"TableName": self.table, **typed}}

    def _plan_deletes(self, tenant: str, event_ids: Sequence[str], plan: _WritePlan) -> None:
        """Delete the episodes, and the tag and citation items of those that exist."""
        existing = self._get_items(tenant, event_ids)
        for event_id in event_ids:
            plan.core.append({"Delete": {"TableName": self.table, "Key": to_item(t.episode_key(tenant, event_id))}})
            if event_id in existing:
                plan.adjacency_deletes += adjacency_keys(episode_of(existing[event_id]))

    def _commit(self, plan: _WritePlan) -> None:
        """The transaction, with the adjacency items in it when the whole fits under the cap;
        otherwise adjacency puts before it and adjacency deletes after it, batched."""
        core = plan.core
        adjacency_in_core = len(core) + len(plan.adjacency_puts) + len(plan.adjacency_deletes) <= MAX_TRANSACTION_ITEMS
        if adjacency_in_core:
            core += [self._put(a) for a in plan.adjacency_puts]
            core += [{"Delete": {"TableName": self.table, "Key": to_item(k)}} for k in plan.adjacency_deletes]
        else:
            self._batch_write([{"PutRequest": {"Item": to_item(a)}} for a in plan.adjacency_puts])
        if len(core) > MAX_TRANSACTION_ITEMS:
            raise InvalidRequestError(
                f"one change touches {len(core)} items; DynamoDB transactions hold at most {MAX_TRANSACTION_ITEMS}"
            )
        if core:
            self._transact(core)
        if not adjacency_in_core:
            self._batch_write([{"DeleteRequest": {"Key": to_item(k)}} for k in plan.adjacency_deletes])

    @storage_errors("write")
    def record_access(self, tenant_id: str, event_ids: Sequence[str], at: datetime) -> None:
        for event_id in event_ids:
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=to_item(t.episode_key(tenant_id, event_id)),
                    UpdateExpression="SET ep.accessCount = ep.accessCount + :one, ep.lastAccessedAt = :at",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues=to_item({":one": 1, ":at": at.isoformat()}),
                )
            except ClientError as exc:
                if not condition_failed(exc):
                    raise StorageError("could not record access") from exc
