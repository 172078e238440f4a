"""The audit trail's vocabulary: what happened (:class:`AuditAction`), who did it when no caller
did (:class:`SystemActor`), and the record itself (:class:`AuditRecord`).

The audit log is the product's proof -- what was written, denied, reviewed, recalled, expired
and erased, by whom, under which policy -- so its words are typed: a record's action is one of
these, never a free string, and what reads the trail back (the overview, the console) matches
on them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, JsonValue

from episodic.domain.model.episode import CamelModel, UtcDatetime


class AuditAction(StrEnum):
    EPISODE_WRITTEN = "episode.written"
    """Allowed by the policy and stored."""
    EPISODE_DENIED = "episode.denied"
    """Refused by the policy: nothing stored but this record."""
    EPISODE_REVIEW_REQUESTED = "episode.review_requested"
    """Stored ``pending_review``; a human decides."""
    REVIEW_APPROVED = "review.approved"
    REVIEW_DENIED = "review.denied"
    REVIEW_EXPIRED = "review.expired"
    """Nobody decided in time: denied by default."""
    EPISODE_SUPERSEDED = "episode.superseded"
    """A correction replaced it."""
    EPISODE_EXPIRED = "episode.expired"
    """Its retention passed: out of the timeline, a copy in the cold archive (not a digest's)."""
    EPISODE_ARCHIVED = "episode.archived"
    """Relevance decay: out of default recall, restorable."""
    EPISODE_RESTORED = "episode.restored"
    EPISODE_ERASED = "episode.erased"
    """Erased everywhere; this tombstone keeps a hash, never the text."""
    ACTOR_ERASED = "actor.erased"
    RECALL_SERVED = "recall.served"
    """What a recall returned to whom (ids and a hash of the question)."""
    FEEDBACK_RECORDED = "feedback.recorded"
    WRITES_ENABLED = "writes.enabled"
    WRITES_DISABLED = "writes.disabled"
    AUDIT_VERIFIED = "audit.verified"
    """An operator had the tenant's audit chains verified: the outcome, never the records."""


SERVICE_PRINCIPAL_PREFIXES = ("system:", "eventbridge:")
"""How the principals of the service's own work begin (:class:`SystemActor`; ``eventbridge:<source>``
for what a business system sends): a credential whose principal begins so is refused, so no caller
shares their idempotency keys or audit entries."""


def reserved_principal(principal: str) -> bool:
    """Whether ``principal`` is spelled like one of the service's own (:data:`SERVICE_PRINCIPAL_PREFIXES`)."""
    return principal.lower().startswith(SERVICE_PRINCIPAL_PREFIXES)


class SystemActor(StrEnum):
    """The principals of the service's own work, named in the audit as callers are."""

    SWEEP = "system:sweep"
    """The local retention sweep."""
    DYNAMODB_TTL = "system:dynamodb-ttl"
    """DynamoDB's time to live, seen by the stream processor."""
    DECAY_SWEEP = "system:decay-sweep"
    REVIEW_TIMEOUT = "system:review-timeout"
    ERASURE = "system:erasure"
    """Closes the pending review of a write that was erased before anyone decided."""
    SUMMARISER = "system:summariser"
    SESSION_HANDOFF = "system:session-handoff"


class AuditLink(CamelModel):
    """Where a record sits in its tenant's hash chain (:mod:`episodic.domain.chain`)."""

    shard: int = Field(default=0, ge=0, description="Which of the tenant's chains the record is in")
    seq: int = Field(ge=1, description="The record's position in its chain, from 1")
    prev: str = Field(description="The digest of the record before it in the chain (the genesis digest for the first)")
    digest: str = Field(description="SHA-256 of the previous digest and this record's canonical content")


class AuditRecord(CamelModel):
    """One append-only audit entry. Never holds erased text: only ids, codes and hashes."""

    audit_id: str
    tenant_id: str
    at: UtcDatetime
    action: AuditAction
    principal_id: str
    event_id: str | None = None
    reasons: list[str] = []
    policy_version: str | None = None
    detail: dict[str, JsonValue] = {}
    link: AuditLink | None = Field(
        default=None, description="The record's place in the tenant's hash chain, set by the store that appends it"
    )


class ChainHeadView(CamelModel):
    """A chain's newest link as verification found it."""

    shard: int
    seq: int
    digest: str


class ChainBreakView(CamelModel):
    """The first place a chain does not verify."""

    shard: int
    kind: Literal["altered", "removed", "inserted", "reordered", "unchained", "truncated"]
    audit_id: str | None = Field(description="The record where the break was found (none: past the last record)")
    position: int = Field(description="The chain position where the break was found, from 1")
    message: str


class AuditVerification(CamelModel):
    """What verifying a tenant's audit chains found: every chain intact, or the first break."""

    tenant_id: str
    verified: bool
    checked_at: UtcDatetime
    records: int = Field(description="Records read and checked, across the tenant's chains")
    chains: int
    heads: list[ChainHeadView] = []
    first_break: ChainBreakView | None = None
