"""The memory service: the use cases, bundled once over one set of dependencies.

The rules live in :mod:`episodic.application.usecases` (one class per use case over one shared
:class:`~episodic.application.usecases.deps.Deps`) and in the domain modules they call. Entry
points (the REST API, the CLI, the stream, ingestion and workflow handlers) authenticate a
:class:`~episodic.domain.model.Caller` and call a use case of the bundle:
``service.writes.remember(caller, proposal)``, ``service.reads.recall(caller, request)``.

The bundle is frozen: to run the same use cases over another dependency (a test's embedder, a
quieter notifier), :meth:`MemoryService.replacing` builds a new bundle; nothing is swapped
under a running one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from episodic.application.ports import (
    ChainCheckpoints,
    Clock,
    ColdArchive,
    Embedder,
    ErasureCompaction,
    EventOutbox,
    EventSender,
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
from episodic.application.usecases.notifications import Notifications
from episodic.application.usecases.overview import Overview
from episodic.application.usecases.proof import Proof
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.reviews import Reviews
from episodic.application.usecases.summarisation import Summarisation
from episodic.application.usecases.sweep import Sweep
from episodic.application.usecases.writes import Writes
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import ForgetReport, SweepReport
from episodic.domain.policy import WritePolicy
from episodic.domain.recall.ranking import Ranker

__all__ = ["ForgetReport", "MemoryService", "SweepReport"]


@dataclass(frozen=True, eq=False)
class MemoryService:
    """Every use case, over the same :class:`Deps`. Build it with :meth:`build` (from the
    adapters) or :meth:`over` (from a ready ``Deps``)."""

    deps: Deps
    reads: Reads
    writes: Writes
    feedbacks: Feedback
    erasure: Erasure
    archival: Archival
    reviews: Reviews
    summarisation: Summarisation
    admin: Admin
    overviews: Overview
    conversations: Conversations
    sweeper: Sweep
    proof: Proof
    notifications: Notifications | None
    """Memory events out, when the composition configured an outbox and a sender."""
    closers: list[Callable[[], None]] = field(default_factory=list)
    """What the composition root opened for this service (database connections, say):
    :meth:`close` calls each once, and the service is a context manager. Bundles built by
    :meth:`replacing` share the list, so closing either closes the resources once."""

    @classmethod
    def over(cls, deps: Deps, closers: list[Callable[[], None]] | None = None) -> MemoryService:
        reads, writes, archival = Reads(deps), Writes(deps), Archival(deps)
        reviews, erasure = Reviews(deps, writes), Erasure(deps)
        summarisation = Summarisation(deps, reads, writes, erasure)
        return cls(
            deps=deps, reads=reads, writes=writes, feedbacks=Feedback(deps), erasure=erasure,
            archival=archival, reviews=reviews, summarisation=summarisation, admin=Admin(deps),
            overviews=Overview(deps), conversations=Conversations(deps, reads, writes, summarisation),
            sweeper=Sweep(deps, archival, reviews), proof=Proof(deps),
            notifications=Notifications(deps, deps.outbox, deps.events, deps.settings.event_actor)
            if deps.outbox is not None and deps.events is not None else None,
            closers=[] if closers is None else closers,
        )  # fmt: skip

    @classmethod
    def build(
        cls,
        *,
        store: TimelineStore,
        pseudonyms: Pseudonyms,
        index: RecallIndex,
        archive: ColdArchive,
        embedder: Embedder,
        notifier: ReviewNotifier,
        summariser: Summariser | None = None,
        compaction: ErasureCompaction | None = None,
        settings: Settings | None = None,
        policy: WritePolicy | None = None,
        clock: Clock | None = None,
        backend: str = "custom",
        closers: Sequence[Callable[[], None]] = (),
        outbox: EventOutbox | None = None,
        events: EventSender | None = None,
        checkpoints: ChainCheckpoints | None = None,
    ) -> MemoryService:
        """The service over one backend: ``store``'s parts serve every store port
        (:class:`~episodic.application.ports.TimelineStore`); ``pseudonyms`` are under the store's
        key (the archive was given the same); ``compaction`` is the backend's way
        to drop erased bytes, where it keeps any."""
        settings = settings or Settings()
        deps = Deps.over_store(
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
            pseudonyms=pseudonyms,
            backend=backend,
            outbox=outbox,
            events=events,
            checkpoints=checkpoints,
        )
        return cls.over(deps, list(closers))

    def replacing(self, **dependencies: Any) -> MemoryService:
        """A new bundle over the same dependencies but those named (``embedder=``, ``clock=``…);
        it takes over this one's closers."""
        return MemoryService.over(replace(self.deps, **dependencies), self.closers)

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
