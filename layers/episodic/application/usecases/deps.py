"""What every use case shares: the ports, the settings, the policy, the clock, the ids, and
the two helpers every one of them needs (building an audit record, requiring an operator).

The store's ports are separate fields (episodes, reviews, audit log, tenant settings,
maintenance scans, vector maintenance) so each use case reaches only the ones it needs;
:meth:`Deps.over_store` fills them from the parts of one
:class:`~episodic.application.ports.TimelineStore`."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ulid import ULID

from episodic.application.ports import (
    AuditLog,
    ChainCheckpoints,
    Clock,
    ColdArchive,
    Embedder,
    EpisodeStore,
    ErasureCompaction,
    EventOutbox,
    EventSender,
    MaintenanceScans,
    RecallIndex,
    ReviewNotifier,
    ReviewQueue,
    Summariser,
    TenantSettings,
    TimelineStore,
    VectorMaintenance,
)
from episodic.application.settings import Settings
from episodic.domain.access import may_read
from episodic.domain.errors import ForbiddenError, NotFoundError, WritesDisabledError
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import AuditAction, AuditRecord, Caller, Episode, PolicyDecision
from episodic.domain.policy import WritePolicy
from episodic.domain.recall.ranking import Ranker


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class MonotonicIds:
    """ULIDs that sort in creation order, even within one millisecond.

    The audit log and the timelines order by id; plain ULIDs made in the same millisecond
    sort randomly, so an id that would not sort after the previous one is the previous + 1.
    One generator per service (and all its use cases)."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self, now: datetime) -> str:
        candidate = int(ULID.from_datetime(now))
        with self._lock:
            self._last = max(candidate, self._last + 1)
            return str(ULID.from_int(self._last))


def hash_text(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()


@dataclass
class Deps:
    episodes: EpisodeStore
    reviews: ReviewQueue
    audit_log: AuditLog
    tenants: TenantSettings
    scans: MaintenanceScans
    vectors: VectorMaintenance
    index: RecallIndex
    archive: ColdArchive
    embedder: Embedder
    notifier: ReviewNotifier
    summariser: Summariser | None
    settings: Settings
    policy: WritePolicy
    clock: Clock
    ranker: Ranker
    pseudonyms: Pseudonyms
    backend: str = "custom"
    compaction: ErasureCompaction | None = None
    checkpoints: ChainCheckpoints | None = None
    outbox: EventOutbox | None = None
    events: EventSender | None = None
    ids: MonotonicIds = field(default_factory=MonotonicIds)

    @classmethod
    def over_store(cls, store: TimelineStore, compaction: ErasureCompaction | None = None, **rest: Any) -> Deps:
        """Every store port served by ``store``'s parts."""
        return cls(
            episodes=store.episodes, reviews=store.reviews, audit_log=store.audit_log, tenants=store.tenants,
            scans=store.scans, vectors=store.vectors, compaction=compaction, **rest,
        )  # fmt: skip

    def audit(
        self,
        caller: Caller,
        action: AuditAction,
        now: datetime,
        event_id: str | None,
        decision: PolicyDecision | None,
        actor: str | None = None,
        **detail: Any,
    ) -> AuditRecord:
        """An audit record of ``action`` by ``caller``: ids, reason codes and hashes only. ``actor``
        (the episode's) is kept as its pseudonym (:meth:`~episodic.domain.forgetting.pseudonyms.Pseudonyms.actor`),
        never in clear: the record outlives an erasure of the actor."""
        if actor is not None:
            detail["actor"] = self.pseudonyms.actor(caller.tenant_id, actor)
        return AuditRecord(
            audit_id=self.ids(now),
            tenant_id=caller.tenant_id,
            at=now,
            action=action,
            principal_id=caller.principal_id,
            event_id=event_id,
            reasons=decision.reasons if decision else [],
            policy_version=decision.policy_version if decision else self.policy.version,
            detail={k: v for k, v in detail.items() if v is not None}
            | (
                {"redactions": [r.to_json_dict() for r in decision.redactions]}
                if decision and decision.redactions
                else {}
            ),
        )

    def require_writes(self, tenant_id: str) -> None:
        """Refuse (503) what would change the tenant's memory while an operator has turned its writes
        off (or the deployment's): new episodes and corrections, feedback, approvals of held writes."""
        if self.settings.writes_disabled or not self.tenants.writes_enabled(tenant_id):
            raise WritesDisabledError("writes are disabled by an operator; recall still works")

    def visible(self, caller: Caller, event_id: str) -> Episode:
        """The caller's tenant's episode, unexpired, if the caller may read it
        (:func:`episodic.domain.access.may_read`); anything else is not found."""
        episode = self.episodes.get(caller.tenant_id, event_id)
        if episode is None or episode.is_expired(self.clock.now()) or not may_read(caller, episode):
            raise NotFoundError("no such episode")
        return episode


def require_operator(caller: Caller) -> None:
    if not caller.is_operator:
        raise ForbiddenError("this operation needs the operator role")
