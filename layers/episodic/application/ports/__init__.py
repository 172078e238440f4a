"""Ports: what the core needs from the outside world, as ``typing.Protocol``s, in groups.

The use cases in :mod:`episodic.application.usecases` depend only on these, each on the few it
uses. Adapters implement them, one folder per technology: ``adapters/sqlite``, ``files`` and
``minilm`` locally; ``dynamodb``, ``opensearch``, ``s3``, ``stepfunctions`` and ``bedrock`` in AWS.

* :mod:`~episodic.application.ports.store` -- the timeline and its one atomic write path;
* :mod:`~episodic.application.ports.governance` -- reviews, the audit log, tenant switches;
* :mod:`~episodic.application.ports.maintenance` -- cross-tenant scans, re-embedding, the archive;
* :mod:`~episodic.application.ports.search` -- the recall index and its projection;
* :mod:`~episodic.application.ports.providers` -- the clock, the embedder, the summariser;
* :mod:`~episodic.application.ports.events` -- memory events going out: the outbox and the sender.
"""

from episodic.application.ports.events import DeliveryError, EventOutbox, EventSender, OutboxEntry
from episodic.application.ports.governance import (
    AuditLog,
    AuditQuery,
    ChainCheckpoints,
    ReviewChange,
    ReviewNotifier,
    ReviewQueue,
    ReviewTokens,
    TenantSettings,
)
from episodic.application.ports.maintenance import ColdArchive, ErasureCompaction, MaintenanceScans, VectorMaintenance
from episodic.application.ports.providers import Clock, Embedder, Summariser, Vector
from episodic.application.ports.search import (
    Leaning,
    PendingVector,
    RecallCandidates,
    RecallIndex,
    RecallProjection,
    SearchesApart,
    resolved,
)
from episodic.application.ports.store import (
    Changes,
    EpisodeStore,
    IdempotencyRecord,
    NewEpisode,
    Scope,
    ScopeReader,
    StatsChange,
    StatusChange,
    StoredEpisode,
    TimelineQuery,
    TimelineStore,
)

__all__ = [
    "AuditLog",
    "AuditQuery",
    "ChainCheckpoints",
    "Changes",
    "Clock",
    "ColdArchive",
    "DeliveryError",
    "Embedder",
    "EpisodeStore",
    "ErasureCompaction",
    "EventOutbox",
    "EventSender",
    "IdempotencyRecord",
    "Leaning",
    "MaintenanceScans",
    "NewEpisode",
    "OutboxEntry",
    "PendingVector",
    "RecallCandidates",
    "RecallIndex",
    "RecallProjection",
    "ReviewChange",
    "ReviewNotifier",
    "ReviewQueue",
    "ReviewTokens",
    "Scope",
    "ScopeReader",
    "SearchesApart",
    "StatsChange",
    "StatusChange",
    "StoredEpisode",
    "Summariser",
    "TenantSettings",
    "TimelineQuery",
    "TimelineStore",
    "Vector",
    "VectorMaintenance",
    "resolved",
]
