"""Memory events: what business systems are told when memory changes (webhook locally,
EventBridge in AWS).

Every event comes from one audit record (:data:`EVENT_OF`): the change and its audit record commit
together, so there is an event for exactly the changes that happened, and none for a denied
write, a recall or a verification. An event carries ids, the tenant, the type, the decision and
its reasons -- never episode text -- and its id is its audit record's, so a delivery repeated
after a failure repeats the same id. An erasure event names nothing of what was erased beyond
its id.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from episodic.domain.model.audit import AuditAction, AuditRecord
from episodic.domain.model.episode import CamelModel, UtcDatetime


class MemoryEventType(StrEnum):
    EPISODE_WRITTEN = "episode.written"
    EPISODE_REVIEW_REQUESTED = "episode.review_requested"
    REVIEW_DECIDED = "review.decided"
    EPISODE_SUPERSEDED = "episode.superseded"
    EPISODE_EXPIRED = "episode.expired"
    EPISODE_ARCHIVED = "episode.archived"
    EPISODE_ERASED = "episode.erased"
    WRITES_SWITCHED = "writes.switched"


EVENT_OF: dict[AuditAction, tuple[MemoryEventType, str | None]] = {
    AuditAction.EPISODE_WRITTEN: (MemoryEventType.EPISODE_WRITTEN, "allow"),
    AuditAction.EPISODE_REVIEW_REQUESTED: (MemoryEventType.EPISODE_REVIEW_REQUESTED, "review"),
    AuditAction.REVIEW_APPROVED: (MemoryEventType.REVIEW_DECIDED, "approved"),
    AuditAction.REVIEW_DENIED: (MemoryEventType.REVIEW_DECIDED, "denied"),
    AuditAction.REVIEW_EXPIRED: (MemoryEventType.REVIEW_DECIDED, "expired"),
    AuditAction.EPISODE_SUPERSEDED: (MemoryEventType.EPISODE_SUPERSEDED, None),
    AuditAction.EPISODE_EXPIRED: (MemoryEventType.EPISODE_EXPIRED, None),
    AuditAction.EPISODE_ARCHIVED: (MemoryEventType.EPISODE_ARCHIVED, None),
    AuditAction.EPISODE_ERASED: (MemoryEventType.EPISODE_ERASED, None),
    AuditAction.WRITES_ENABLED: (MemoryEventType.WRITES_SWITCHED, "enabled"),
    AuditAction.WRITES_DISABLED: (MemoryEventType.WRITES_SWITCHED, "disabled"),
}
"""Which audit actions are memory events, and the decision each reports."""

EVENT_SOURCE = "episodic.memory"
"""The ``source`` of every memory event on EventBridge (its ``detail-type`` is the event type)."""


class MemoryEvent(CamelModel):
    """One change to a tenant's memory, as business systems receive it."""

    id: str = Field(description="The change's audit record id: the same on every delivery of this event")
    type: MemoryEventType
    tenant_id: str
    at: UtcDatetime
    episode_id: str | None = None
    actor: str | None = Field(
        default=None, description="The episode's actor: its pseudonym, or its id where the service is so configured"
    )
    decision: str | None = None
    reasons: list[str] = []
    policy_version: str | None = None
    principal_id: str = Field(description="Who made the change (a credential's principal or a system actor)")
    superseded_by: str | None = Field(default=None, description="episode.superseded: the episode that replaced it")


ActorShown = Literal["pseudonym", "id", "none"]


def event_of(record: AuditRecord, actor_id: str | None = None, shown: ActorShown = "pseudonym") -> MemoryEvent | None:
    """The memory event ``record`` stands for, or None (a denial, a recall, ...). ``actor_id``:
    the episode's actor where it is still known, shown as ``shown`` says (``id`` falls back to the
    pseudonym when the episode is gone); an erasure never names its actor."""
    found = EVENT_OF.get(record.action)
    if found is None:
        return None
    kind, decision = found
    actor = None
    if kind is not MemoryEventType.EPISODE_ERASED and shown != "none":
        pseudonym = record.detail.get("actor")
        actor = actor_id if shown == "id" and actor_id else (str(pseudonym) if pseudonym else None)
    replaced_by = record.detail.get("supersededBy")
    return MemoryEvent(
        id=record.audit_id,
        type=kind,
        tenant_id=record.tenant_id,
        at=record.at,
        episode_id=record.event_id,
        actor=actor,
        decision=decision,
        reasons=record.reasons,
        policy_version=record.policy_version,
        principal_id=record.principal_id,
        superseded_by=str(replaced_by) if replaced_by else None,
    )
