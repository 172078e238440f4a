"""The memory service: one object for entry points to call, a thin facade over the use cases.

The rules live in :mod:`episodic.application.usecases` (one module per use case over one shared
:class:`~episodic.application.usecases.deps.Deps`) and in the domain modules they call. Entry points
(the REST API, the CLI, the stream, ingestion and workflow handlers) authenticate a
:class:`~episodic.domain.model.Caller` and call one method here; adapters behind the ports do I/O.
The dependencies can be read and replaced through the facade (``service.embedder = ...``):
every use case sees the change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from episodic.application.ports import (
    ColdArchive,
    Embedder,
    ErasureCompaction,
    RecallIndex,
    ReviewNotifier,
    Summariser,
    TimelineStore,
)
from episodic.application.settings import Settings
from episodic.application.usecases.admin import Admin
from episodic.application.usecases.archival import Archival
from episodic.application.usecases.conversations import Conversations
from episodic.application.usecases.deps import Deps, SystemClock
from episodic.application.usecases.erasure import Erasure
from episodic.application.usecases.feedback import Feedback
from episodic.application.usecases.overview import Overview
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.reviews import Reviews
from episodic.application.usecases.summarisation import Summarisation
from episodic.application.usecases.writes import Writes
from episodic.domain.model import (
    AuditAction,
    AuditRecord,
    BusyActor,
    Caller,
    DigestOutcome,
    Episode,
    EpisodeProposal,
    ErasureResult,
    EventType,
    ForgetReport,
    Health,
    OperatorOverview,
    RecallRequest,
    RecallResponse,
    RememberResult,
    ReviewStatus,
    ReviewView,
    Status,
    SweepReport,
    TimelinePage,
    WritesStatus,
)
from episodic.domain.model.conversations import TurnsRequest, TurnsResult
from episodic.domain.policy import WritePolicy
from episodic.domain.recall.ranking import Ranker

__all__ = ["ForgetReport", "MemoryService", "SweepReport"]

T = TypeVar("T")


class _Dependency(Generic[T]):
    """A dependency read and replaced through the facade, kept in the shared ``Deps``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, service: MemoryService, owner: type | None = None) -> T:
        value: T = getattr(service.deps, self.name)
        return value

    def __set__(self, service: MemoryService, value: T) -> None:
        setattr(service.deps, self.name, value)


class MemoryService:
    index: _Dependency[RecallIndex] = _Dependency()
    archive: _Dependency[ColdArchive] = _Dependency()
    embedder: _Dependency[Embedder] = _Dependency()
    notifier: _Dependency[ReviewNotifier] = _Dependency()
    summariser: _Dependency[Summariser | None] = _Dependency()
    settings: _Dependency[Settings] = _Dependency()
    policy: _Dependency[WritePolicy] = _Dependency()
    clock: _Dependency[Any] = _Dependency()
    ranker: _Dependency[Ranker] = _Dependency()
    backend: _Dependency[str] = _Dependency()

    def __init__(
        self,
        *,
        store: TimelineStore,
        index: RecallIndex,
        archive: ColdArchive,
        embedder: Embedder,
        notifier: ReviewNotifier,
        summariser: Summariser | None = None,
        compaction: ErasureCompaction | None = None,
        settings: Settings | None = None,
        policy: WritePolicy | None = None,
        clock: Any = None,
        backend: str = "custom",
        closers: Sequence[Callable[[], None]] = (),
    ) -> None:
        """``store`` serves every store port (:class:`~episodic.application.ports.TimelineStore`); ``compaction``
        is the backend's way to drop erased bytes, where it keeps any. ``closers`` release what
        the composition root opened for this service (database connections, say); :meth:`close`
        calls them, and the service is a context manager."""
        settings = settings or Settings()
        self.store = store  # the composed store, for tools and tests that inspect the backend
        self.deps = Deps.over_store(
            store,
            compaction=compaction,
            index=index,
            archive=archive,
            embedder=embedder,
            notifier=notifier,
            summariser=summariser,
            settings=settings,
            policy=policy or WritePolicy(private_disclosures=settings.sensitive_disclosures == "private"),
            clock=clock or SystemClock(),
            ranker=Ranker(settings.ranking_weights(embedder)),
            backend=backend,
        )
        self.reads = Reads(self.deps)
        self.writes = Writes(self.deps)
        self.feedbacks = Feedback(self.deps)
        self.erasure = Erasure(self.deps)
        self.archival = Archival(self.deps)
        self.reviews = Reviews(self.deps, self.writes)
        self.summarisation = Summarisation(self.deps, self.reads, self.writes)
        self.admin = Admin(self.deps)
        self.overviews = Overview(self.deps)
        self.conversations = Conversations(self.deps, self.reads, self.writes, self.summarisation)
        self._closers = list(closers)

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # writes
    def remember(self, caller: Caller, proposal: EpisodeProposal, idempotency_key: str | None = None) -> RememberResult:
        return self.writes.remember(caller, proposal, idempotency_key)

    def remember_batch(
        self, caller: Caller, proposals: Sequence[EpisodeProposal], idempotency_key: str | None = None
    ) -> list[RememberResult]:
        return self.writes.remember_batch(caller, proposals, idempotency_key)

    def correct(
        self, caller: Caller, event_id: str, proposal: EpisodeProposal, idempotency_key: str | None = None
    ) -> RememberResult:
        return self.writes.correct(caller, event_id, proposal, idempotency_key)

    def add_turns(
        self, caller: Caller, session_id: str, request: TurnsRequest, idempotency_key: str | None = None
    ) -> TurnsResult:
        return self.conversations.add_turns(caller, session_id, request, idempotency_key)

    # reads
    def get(self, caller: Caller, event_id: str) -> Episode:
        return self.reads.get(caller, event_id)

    def timeline(
        self,
        caller: Caller,
        *,
        actor_id: str | None = None,
        project_id: str | None = None,
        event_types: Sequence[EventType] = (),
        tags: Sequence[str] = (),
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        statuses: Sequence[Status] = (Status.ACTIVE,),
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = True,
    ) -> TimelinePage:
        return self.reads.timeline(
            caller, actor_id=actor_id, project_id=project_id, event_types=event_types, tags=tags,
            occurred_after=occurred_after, occurred_before=occurred_before, statuses=statuses, limit=limit,
            cursor=cursor, newest_first=newest_first,
        )  # fmt: skip

    def recall(self, caller: Caller, request: RecallRequest) -> RecallResponse:
        return self.reads.recall(caller, request)

    # feedback, erasure, archival
    def feedback(self, caller: Caller, event_id: str, helpful: bool, note: str | None = None) -> Episode:
        return self.feedbacks.feedback(caller, event_id, helpful, note)

    def erase(self, caller: Caller, event_id: str, reason: str | None = None) -> ErasureResult:
        return self.erasure.erase(caller, event_id, reason)

    def erase_actor(self, caller: Caller, actor_id: str, reason: str | None = None) -> ErasureResult:
        return self.erasure.erase_actor(caller, actor_id, reason)

    def restore(self, caller: Caller, event_id: str, expires_at: datetime | None = None) -> Episode:
        return self.archival.restore(caller, event_id, expires_at)

    def forget(self, *, dry_run: bool = False, cursor: str | None = None, page_size: int = 500) -> ForgetReport:
        return self.archival.forget(dry_run=dry_run, cursor=cursor, page_size=page_size)

    def sweep(self, limit: int = 500) -> SweepReport:
        """Forget what retention says must go, and time out stale reviews (default: deny).

        Runs in-process on a schedule locally; in AWS, TTL and the review workflow's timeout
        do the same work."""
        now = self.clock.now()
        expired = self.archival.expire(now, limit)
        timed_out = self.reviews.time_out(now - timedelta(days=self.settings.review_timeout_days), limit)
        return SweepReport(expired=expired, reviews_timed_out=timed_out)

    # summarisation
    def busy_actors(self, now: datetime) -> list[BusyActor]:
        return self.summarisation.busy_actors(now)

    def summarise_actor(
        self, tenant_id: str, actor_id: str, window_start: datetime, window_end: datetime
    ) -> RememberResult:
        return self.summarisation.summarise_actor(tenant_id, actor_id, window_start, window_end)

    def summarise(self) -> list[DigestOutcome]:
        return self.summarisation.summarise()

    # reviews
    def list_reviews(
        self, caller: Caller, status: ReviewStatus | None = ReviewStatus.PENDING, limit: int = 100
    ) -> list[ReviewView]:
        return self.reviews.list_reviews(caller, status, limit)

    def decide_review(self, caller: Caller, review_id: str, approve: bool, note: str | None = None) -> ReviewView:
        return self.reviews.decide_review(caller, review_id, approve, note)

    def expire_review(self, tenant_id: str, review_id: str) -> str:
        return self.reviews.expire_review(tenant_id, review_id)

    # administration
    def audit(
        self,
        caller: Caller,
        *,
        event_id: str | None = None,
        action: AuditAction | None = None,
        since: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> tuple[list[AuditRecord], str | None]:
        return self.admin.audit(caller, event_id=event_id, action=action, since=since, limit=limit, cursor=cursor)

    def set_writes(self, caller: Caller, enabled: bool, reason: str | None = None) -> WritesStatus:
        return self.admin.set_writes(caller, enabled, reason)

    def writes_status(self, tenant_id: str) -> WritesStatus:
        return self.admin.writes_status(tenant_id)

    def health(self) -> Health:
        return self.admin.health()

    def overview(self, caller: Caller, days: int = 14) -> OperatorOverview:
        """The tenant at a glance for the operator console (see :mod:`episodic.application.usecases.overview`)."""
        return self.overviews.overview(caller, days)

    def reembed(self, batch_size: int = 256, progress: Callable[[int], Any] | None = None) -> int:
        return self.admin.reembed(batch_size, progress)
