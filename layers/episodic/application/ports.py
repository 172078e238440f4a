"""Ports: what the core needs from the outside world, as ``typing.Protocol``s.

The use cases in :mod:`episodic.application.usecases` depend only on these, each on the few it
uses. Adapters implement them, one folder per technology: ``adapters/sqlite``, ``files`` and
``minilm`` locally; ``dynamodb``, ``opensearch``, ``s3``, ``stepfunctions`` and ``bedrock`` in AWS.

Writes go through one call, :meth:`EpisodeStore.apply`, with a :class:`Changes` set
that must commit atomically: the episode, the status changes it causes, its audit
records, its review and its idempotency record succeed or fail together. That is what
makes "every decision is audited" and "nothing acknowledged is lost" hold on every
backend (a SQLite transaction locally, a DynamoDB transaction in AWS).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from episodic.domain.errors import ConflictError
from episodic.domain.model import AuditRecord, Episode, EventType, PrivacyClass, Review, ReviewStatus, Status
from episodic.domain.recall.ranking import Candidate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vector: TypeAlias = "Sequence[float] | npt.NDArray[np.float32]"
"""A unit-length embedding: a list of floats, or the float32 array an embedder or store made."""


class Clock(Protocol):
    def now(self) -> datetime: ...


class Embedder(Protocol):
    """Turns text into unit-length vectors. Identity and dimension are stored with each vector.

    An embedder may also declare ``evidence_floor``, the cosine on its own scale below which a
    recall candidate is not evidence (see ``Settings.ranking_weights``); without one, no floor."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


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
class ReviewChange:
    """Closes a review; applies only if it is still pending."""

    review_id: str
    status: ReviewStatus
    decided_at: datetime
    reviewer: str
    note: str | None


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
    idempotency: IdempotencyRecord | None = None
    durable: bool = True
    """False only for records a caller does not wait on the disk for (the read audit): a store
    may acknowledge them before they are fsynced, as long as a crash of the process cannot lose
    them (see ``sqlite_group_commit``); DynamoDB acknowledges nothing before it is durable."""


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


@dataclass(frozen=True)
class AuditQuery:
    tenant_id: str
    event_id: str | None = None
    action: str | None = None
    since: datetime | None = None
    limit: int = 100
    cursor: str | None = None


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

    def record_access(self, tenant_id: str, event_ids: Sequence[str], at: datetime) -> None: ...

    def find_idempotency(self, tenant_id: str, key: str) -> IdempotencyRecord | None: ...

    def event_ids_of_actor(self, tenant_id: str, actor_id: str) -> list[str]: ...

    def summaries_citing(self, tenant_id: str, event_ids: Sequence[str]) -> list[str]:
        """Ids of session summaries whose sourceRefs cite any of ``event_ids`` (erasure cascade)."""
        ...


class ReviewQueue(Protocol):
    """Reviews waiting for (or closed by) a human; opened and closed through :meth:`EpisodeStore.apply`."""

    def get_review(self, tenant_id: str, review_id: str) -> Review | None: ...

    def list_reviews(self, tenant_id: str, status: ReviewStatus | None, limit: int) -> list[Review]: ...

    def reviews_requested_before(self, before: datetime, limit: int) -> list[Review]:
        """Pending reviews of every tenant requested before ``before`` (for the timeout sweep)."""
        ...


class AuditLog(Protocol):
    """The append-only record of every decision; appended through :meth:`EpisodeStore.apply`."""

    def audit(self, query: AuditQuery) -> tuple[list[AuditRecord], str | None]: ...


class TenantSettings(Protocol):
    """Per-tenant switches an operator flips (today: whether the tenant accepts writes)."""

    def writes_enabled(self, tenant_id: str) -> bool: ...

    def set_writes_enabled(self, tenant_id: str, enabled: bool, audit: AuditRecord) -> None: ...


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


class ReviewTokens(Protocol):
    """The Step Functions task token a waiting review workflow gave, kept with its review."""

    def attach_review_token(self, tenant_id: str, review_id: str, token: str) -> bool:
        """Store the token; False when the review is no longer pending (nothing waits then)."""
        ...

    def review_token(self, tenant_id: str, review_id: str) -> str | None: ...


class TimelineStore(EpisodeStore, ReviewQueue, AuditLog, TenantSettings, MaintenanceScans, VectorMaintenance, Protocol):
    """Every port a timeline backend serves; both stores implement all of them in one class,
    and each use case is handed only the ones it uses (:class:`~episodic.application.usecases.deps.Deps`)."""


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


@dataclass(frozen=True)
class RecallCandidates:
    """What an index found for one recall, and what it could not do.

    ``degraded`` names each part of the search that failed or came back incomplete
    (``lexical_partial``, ``semantic_unavailable``, ``fallback_index``, ...): recall still
    answers with what it has and tells the caller, instead of failing or pretending.
    """

    items: list[Candidate] = field(default_factory=list)
    degraded: tuple[str, ...] = ()


class RecallIndex(Protocol):
    """A projection of the timeline for recall: returns scoped candidates with raw signals."""

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        """Only episodes inside ``scope``. With a query: the best ``pool_size`` by BM25 and by
        cosine, comparing the query vector only with vectors made by ``embedder`` (the model
        that made the query vector). Without a query: the newest ``pool_size``."""
        ...


class RecallProjection(Protocol):
    """A search index fed from the timeline (the stream processor keeps OpenSearch in step)."""

    def upsert(self, episode: Episode, vector: Vector | None, embedder: str | None = None) -> None: ...

    def remove(self, tenant_id: str, event_id: str) -> None: ...


class ColdArchive(Protocol):
    """Compressed records of forgotten episodes, keyed by tenant/actor/date."""

    def put(self, episode: Episode, reason: str, at: datetime) -> str: ...

    def get(self, tenant_id: str, event_id: str) -> dict[str, Any] | None:
        """The archived record ``{"archivedAt", "reason", "episode"}``, or None."""
        ...

    def delete_events(self, tenant_id: str, event_ids: Sequence[str]) -> int: ...

    def delete_actor(self, tenant_id: str, actor_id: str) -> int: ...

    def contains(self, tenant_id: str, event_id: str) -> bool: ...


class ReviewNotifier(Protocol):
    """The review workflow around the review queue: a Step Functions execution waiting on a
    task token in AWS; the server log locally (the reviews table is the queue itself)."""

    def review_requested(self, review: Review, episode: Episode) -> None: ...

    def review_decided(self, review: Review) -> None:
        """The review was closed (``review.status``): let the waiting workflow finish."""
        ...


class Summariser(Protocol):
    """Writes a digest of at most ``max_lines`` lines, using only facts in ``episodes``."""

    @property
    def name(self) -> str: ...

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]: ...
