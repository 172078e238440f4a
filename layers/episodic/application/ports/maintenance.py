"""The ports of the service's own schedules, never reachable from a tenant's request: scans
across every tenant, re-embedding, compaction after erasure and the cold archive."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from episodic.application.ports.providers import Vector
from episodic.domain.model import Episode


class MaintenanceScans(Protocol):
    """Reads across every tenant for the service's own schedules (expiry, decay, summaries);
    never reachable from a tenant's request."""

    def expired_episodes(self, now: datetime, limit: int) -> list[Episode]:
        """Episodes of every tenant whose retention has passed (for the expiry sweep)."""
        ...

    def busy_actors(self, since: datetime, until: datetime, min_count: int) -> list[tuple[str, str, int]]:
        """``(tenant, actor, count)`` of every actor (all tenants) with at least ``min_count`` active
        episodes, session summaries excluded, that occurred in ``[since, until)``."""
        ...

    def active_page(self, after: str | None, limit: int) -> tuple[list[Episode], str | None]:
        """A page of active episodes of every tenant, for the relevance-decay sweep."""
        ...


class VectorMaintenance(Protocol):
    """Re-embedding: find vectors another model made and replace them."""

    def stale_vectors(self, embedder: str, limit: int) -> list[Episode]:
        """Episodes (any tenant) whose vector is missing or came from another embedder."""
        ...

    def set_vectors(self, vectors: Sequence[tuple[Episode, Vector]], embedder: str) -> None:
        """Replace these episodes' vectors, recording which embedder made them."""
        ...


class ErasureCompaction(Protocol):
    """Where a backend keeps erased bytes after a delete (SQLite's free pages and WAL), this
    makes sure they do not linger. Backends that do not (DynamoDB) have no such port."""

    def compact_after_erasure(self) -> None: ...


class ColdArchive(Protocol):
    """Compressed records of forgotten episodes, keyed by tenant/actor/date."""

    def put(self, episode: Episode, reason: str, at: datetime) -> str: ...

    def get(self, tenant_id: str, event_id: str) -> dict[str, Any] | None:
        """The archived record ``{"archivedAt", "reason", "episode"}``, or None."""
        ...

    def delete_events(self, tenant_id: str, event_ids: Sequence[str]) -> int: ...

    def delete_actor(self, tenant_id: str, actor_id: str) -> int: ...

    def contains(self, tenant_id: str, event_id: str) -> bool: ...
