"""The timeline's ports: the episodes, read by id or in scope, and the one write path.

Writes go through one call, :meth:`EpisodeStore.apply`, with a :class:`Changes` set
that must commit atomically: the episode, the status changes it causes, its audit
records, its review and its idempotency record succeed or fail together. That is what
makes "every decision is audited" and "nothing acknowledged is lost" hold on every
backend (a SQLite transaction locally, a DynamoDB transaction in AWS)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from episodic.application.ports.governance import AuditLog, ReviewChange, ReviewQueue, TenantSettings
from episodic.application.ports.maintenance import MaintenanceScans, VectorMaintenance
from episodic.application.ports.providers import Vector
from episodic.domain.errors import ConflictError
from episodic.domain.model import AuditRecord, Episode, EventType, PrivacyClass, Review, Status


@dataclass(frozen=True)
class NewEpisode:
    episode: Episode
    vector: Vector | None
    embedder: str | None = None


@dataclass(frozen=True)
class StatusChange:
    """Optimistic concurrency: applies only if the episode still has ``expected`` status."""

    event_id: str
    expected: Status
    new: Status


@dataclass(frozen=True)
class StatsChange:
    """Feedback and retention-score updates for one episode."""

    event_id: str
    feedback_score: float
    feedback_count: int
    retention_score: float


@dataclass(frozen=True)
class IdempotencyRecord:
    tenant_id: str
    key: str
    request_hash: str
    result: Any
    created_at: datetime


@dataclass
class Changes:
    """Everything one use case writes, committed atomically or not at all."""

    tenant_id: str
    put: list[NewEpisode] = field(default_factory=list)
    status: list[StatusChange] = field(default_factory=list)
    stats: list[StatsChange] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    audit: list[AuditRecord] = field(default_factory=list)
    reviews_put: list[Review] = field(default_factory=list)
    reviews_close: list[ReviewChange] = field(default_factory=list)
    reviews_scrub: list[str] = field(default_factory=list)
    """Reviews whose reviewer's note goes (the episode they judged is being erased)."""
    idempotency: IdempotencyRecord | None = None
    durable: bool = True
    """False only for records a caller does not wait on the disk for (the read audit): a store
    may acknowledge them before they are fsynced, as long as a crash of the process cannot lose
    them (see ``adapters/sqlite/group_commit.py``); DynamoDB acknowledges nothing before it is durable."""


@dataclass(frozen=True)
class Scope:
    """The filters recall applies before any ranking. ``tenant_id`` is always set."""

    tenant_id: str
    now: datetime
    actor_id: str | None = None
    project_id: str | None = None
    event_types: tuple[EventType, ...] = ()
    tags: tuple[str, ...] = ()
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    statuses: tuple[Status, ...] = (Status.ACTIVE,)
    privacy_classes: tuple[PrivacyClass, ...] = tuple(PrivacyClass)

    def readable(self) -> Scope:
        """This scope without the request's own filters (project, kinds, tags, time window): what
        its caller may read of the tenant (its actor, statuses and privacy classes stay). A search by
        words counts its statistics over it, so that texts the caller may not read never move a
        score, and a narrow window does not make every word common."""
        return replace(self, project_id=None, event_types=(), tags=(), occurred_after=None, occurred_before=None)

    def admits(self, episode: Episode) -> bool:
        """Whether an episode is inside this scope (used to re-check what an index returned)."""
        if episode.tenant_id != self.tenant_id or episode.status not in self.statuses:
            return False
        if episode.is_expired(self.now) or episode.privacy_class not in self.privacy_classes:
            return False
        if self.actor_id and episode.actor_id != self.actor_id:
            return False
        if self.project_id and episode.project_id != self.project_id:
            return False
        if self.event_types and episode.event_type not in self.event_types:
            return False
        if self.tags and not set(self.tags).issubset(episode.tags):
            return False
        if self.occurred_after and episode.occurred_at < self.occurred_after:
            return False
        return not (self.occurred_before and episode.occurred_at >= self.occurred_before)


@dataclass(frozen=True)
class TimelineQuery:
    scope: Scope
    limit: int = 50
    cursor: str | None = None
    newest_first: bool = True


class EpisodeStore(Protocol):
    """The timeline itself: episodes, read by id or in scope, and the change sets that write them.

    :meth:`apply` is the one write path of the whole service: a change set carries the
    episodes, status changes, audit records, reviews and idempotency record of one use case,
    and commits them together or not at all."""

    def apply(self, changes: Changes) -> None:
        """Commit atomically. Raises ``ConflictError`` when a create-once or expected-status
        condition fails (nothing is written then)."""
        ...

    def apply_many(self, change_sets: Sequence[Changes]) -> list[ConflictError | None]:
        """Commit each set atomically and independently (a store may share one commit among
        them); for each, the ``ConflictError`` it failed with or ``None``. Any other failure
        raises: the sets before it may have been written (a retry with the same idempotency
        keys replays those), the one it hit and those after it were not."""
        ...

    def get(self, tenant_id: str, event_id: str) -> Episode | None: ...

    def get_many(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, Episode]: ...

    def timeline(self, query: TimelineQuery) -> tuple[list[Episode], str | None]: ...

    def timelines(self, queries: Sequence[TimelineQuery]) -> list[list[Episode]]:
        """The first page of each of ``queries`` (their cursors are not read), in one read where the
        store can: recall reads the turns around each of its items at once."""
        ...

    def record_recall(self, audit: AuditRecord, event_ids: Sequence[str], at: datetime) -> bool:
        """A served recall: its audit record appended and the access of ``event_ids`` counted, in one
        commit where the store can, neither waited on the disk for (a recall acknowledges no write).
        The record is required: when it cannot be written this raises and nothing is counted. The
        count is not: ``False`` when it could not be written (the record stays)."""
        ...

    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None: ...

    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]: ...

    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        """Ids of session summaries whose sourceRefs cite any of ``event_ids`` (erasure cascade)."""
        ...


class TimelineStore(Protocol):
    """A timeline backend: one part per port group over one shared database (both stores are
    composed so), each use case handed only the parts it uses
    (:class:`~episodic.application.usecases.deps.Deps`)."""

    @property
    def episodes(self) -> EpisodeStore: ...
    @property
    def reviews(self) -> ReviewQueue: ...
    @property
    def audit_log(self) -> AuditLog: ...
    @property
    def tenants(self) -> TenantSettings: ...
    @property
    def scans(self) -> MaintenanceScans: ...
    @property
    def vectors(self) -> VectorMaintenance: ...
    def pseudonym_key(self) -> bytes:
        """The key of actor pseudonyms (:mod:`episodic.domain.forgetting.pseudonyms`): made once,
        kept with the data (losing it would lose the way to an erased actor's archived records)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class StoredEpisode:
    """An episode as a scope read returns it, with the vector stored beside it (if any) and
    the name of the model that made that vector."""

    episode: Episode
    vector: Vector | None
    embedder: str | None


class ScopeReader(Protocol):
    """Episodes inside a scope, newest first, with their vectors: what an exact in-process
    recall index ranks when no search engine is configured."""

    def read_scope(self, scope: Scope) -> Iterator[StoredEpisode]: ...
