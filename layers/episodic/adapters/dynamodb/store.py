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

What each item holds is in :mod:`~episodic.adapters.dynamodb.items`.

Write semantics match the local store: every :class:`~episodic.application.ports.Changes` set is one
``TransactWriteItems`` call (the audit records in the append-only audit table included), so
it commits together or not at all; a failed condition is a
:class:`~episodic.domain.errors.ConflictError` and nothing is written. Every DynamoDB failure that
reaches a public method is a :class:`~episodic.domain.errors.StorageError` naming the error code
only. TTL deletes lag by up to two days, so every read re-checks ``retention.expiresAt``.
"""

from __future__ import annotations

from typing import Any

from episodic.adapters.dynamodb.audit import AuditAndSettings
from episodic.adapters.dynamodb.database import Database
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

    def close(self) -> None:
        """Clients need no closing; present so entry points treat every store alike."""
