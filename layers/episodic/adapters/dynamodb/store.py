"""The AWS timeline store: DynamoDB, single-table design (see ``tables.py`` for the keys).

:class:`DynamoTimelineStore` serves every store port, composed of one part per port group, each
in its own module, all over the one :class:`~episodic.adapters.dynamodb.database.Database` (the
client, the two table names, item codec, error translation, paged queries, batches,
transactions):

| attribute | part (module) | ports |
|---|---|---|
| ``episodes`` | ``Episodes`` (``episodes``) | ``EpisodeStore``, ``ScopeReader`` |
| ``reviews``, ``review_tokens`` | ``ReviewReads`` (``reviews``) | ``ReviewQueue``, ``ReviewTokens`` |
| ``audit_log``, ``tenants`` | ``AuditAndSettings`` (``audit``) | ``AuditLog``, ``TenantSettings`` |
| ``scans``, ``vectors`` | ``Maintenance`` (``maintenance``) | ``MaintenanceScans``, ``VectorMaintenance`` |

and :meth:`DynamoTimelineStore.pseudonym_key`, the key of actor pseudonyms.

What each item holds is in :mod:`~episodic.adapters.dynamodb.items`.

Write semantics match the local store: every :class:`~episodic.application.ports.Changes` set is one
``TransactWriteItems`` call (the audit records in the append-only audit table included), so
it commits together or not at all; a failed condition is a
:class:`~episodic.domain.errors.ConflictError` and nothing is written. Every DynamoDB failure that
reaches a public method is a :class:`~episodic.domain.errors.StorageError` naming the error code
only. TTL deletes lag by up to two days, so every read re-checks ``retention.expiresAt``.
"""

from __future__ import annotations

import secrets
from typing import Any

from botocore.exceptions import ClientError

from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.audit import AuditAndSettings
from episodic.adapters.dynamodb.database import Database, condition_failed, storage_errors, to_item
from episodic.adapters.dynamodb.episodes import Episodes
from episodic.adapters.dynamodb.maintenance import Maintenance
from episodic.adapters.dynamodb.reviews import ReviewReads


class DynamoTimelineStore:
    """:class:`~episodic.application.ports.TimelineStore` on DynamoDB, as parts over one database.

    ``DynamoTimelineStore(client, timeline_table, audit_table)`` takes a boto3 DynamoDB client."""

    def __init__(self, client: Any, timeline_table: str, audit_table: str) -> None:
        self.database = Database(client, timeline_table, audit_table)
        self.episodes = Episodes(self.database)
        reviews = ReviewReads(self.database)
        self.reviews, self.review_tokens = reviews, reviews
        audit = AuditAndSettings(self.database)
        self.audit_log, self.tenants = audit, audit
        maintenance = Maintenance(self.database)
        self.scans, self.vectors = maintenance, maintenance

    @storage_errors("read")
    def pseudonym_key(self) -> bytes:
        """The key of the service's actor pseudonyms (:mod:`episodic.domain.forgetting.pseudonyms`):
        an item of the timeline table, made by the first process that asks (a conditional put, so
        racing processes agree), kept and backed up with the data it pseudonymises."""
        db = self.database
        key = to_item({"pk": t.SERVICE_PK, "sk": t.PSEUDONYM_KEY_SK})
        item = db.client.get_item(TableName=db.table, Key=key, ConsistentRead=True).get("Item")
        if item is None:
            try:
                db.client.put_item(
                    TableName=db.table,
                    Item={**key, "key": {"S": secrets.token_hex(32)}},
                    ConditionExpression="attribute_not_exists(pk)",
                )
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
            item = db.client.get_item(TableName=db.table, Key=key, ConsistentRead=True)["Item"]
        return bytes.fromhex(item["key"]["S"])

    def close(self) -> None:
        """Clients need no closing; present so entry points treat every store alike."""
