"""The AWS timeline store: DynamoDB, single-table design (see ``tables.py`` for the keys).

:class:`DynamoTimelineStore` serves every store port, composed of one part per port group,
each in its own module over the shared client plumbing of
:mod:`~episodic.adapters.dynamodb.base` (item codec, error translation, paged queries,
batches, transactions):

| module | part | ports it serves |
|---|---|---|
| ``dynamodb_writes`` | ``EpisodeWrites`` | ``EpisodeStore.apply`` and ``record_access`` |
| ``dynamodb_reads`` | ``EpisodeReads`` | the rest of ``EpisodeStore``; ``ScopeReader`` |
| ``dynamodb_reviews`` | ``ReviewReads`` | ``ReviewQueue``, ``ReviewTokens`` |
| ``dynamodb_audit`` | ``AuditAndSettings`` | ``AuditLog``, ``TenantSettings`` |
| ``dynamodb_maintenance`` | ``Maintenance`` | ``MaintenanceScans``, ``VectorMaintenance`` |

What each item holds is in :mod:`~episodic.adapters.dynamodb.items`.

Write semantics match the local store: every :class:`~episodic.application.ports.Changes` set is one
``TransactWriteItems`` call (the audit records in the append-only audit table included), so
it commits together or not at all; a failed condition is a
:class:`~episodic.domain.errors.ConflictError` and nothing is written. Every DynamoDB failure that
reaches a public method is a :class:`~episodic.domain.errors.StorageError` naming the error code
only. TTL deletes lag by up to two days, so every read re-checks ``retention.expiresAt``.
"""

from __future__ import annotations

from episodic.adapters.dynamodb.audit import AuditAndSettings
from episodic.adapters.dynamodb.maintenance import Maintenance
from episodic.adapters.dynamodb.reads import EpisodeReads
from episodic.adapters.dynamodb.reviews import ReviewReads
from episodic.adapters.dynamodb.writes import EpisodeWrites


class DynamoTimelineStore(EpisodeWrites, EpisodeReads, ReviewReads, AuditAndSettings, Maintenance):
    """:class:`~episodic.application.ports.TimelineStore` (and ``ReviewTokens``, ``ScopeReader``) on DynamoDB.

    ``DynamoTimelineStore(client, timeline_table, audit_table)`` takes a boto3 DynamoDB client."""

    def close(self) -> None:
        """Clients need no closing; present so entry points treat every store alike."""
