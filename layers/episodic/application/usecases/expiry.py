"""One rule for what an expired episode leaves behind, whoever notices the expiry: the local
sweep (which also takes the episode out of the timeline) and the DynamoDB stream processor
(which sees DynamoDB's time to live take it out).

A copy goes to the cold archive (not a digest's, nor a write still held for review: see
:mod:`episodic.domain.forgetting.expiry`) and an ``episode.expired`` audit record says when,
by whom, under the policy that admitted it, and what it held -- a hash, never the text.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from episodic.application.ports import Changes, ColdArchive, EpisodeStore
from episodic.domain.errors import ConflictError
from episodic.domain.forgetting.expiry import archived_on_expiry, expiry_detail
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import AuditAction, AuditRecord, Episode, SystemActor


class ExpiryOutcome(StrEnum):
    ARCHIVED = "archived"
    """Recorded, with a copy in the cold archive."""
    NOT_ARCHIVED = "expired_unarchived"
    """Recorded; a digest or a held write leaves no copy."""
    ALREADY_RECORDED = "already_archived"
    """The audit record exists: this expiry was seen before (a redelivered stream record)."""
    CHANGED = "changed"
    """The episode changed (or went) since it was read: left to the next sweep, no copy kept."""


class Expiry:
    """Records expiries into the timeline's store and the cold archive."""

    def __init__(self, episodes: EpisodeStore, archive: ColdArchive, pseudonyms: Pseudonyms) -> None:
        self.episodes = episodes
        self.archive = archive
        self.pseudonyms = pseudonyms

    def record_expiry(
        self, episode: Episode, at: datetime, *, by: SystemActor, audit_id: str, removed: bool, **detail: str
    ) -> ExpiryOutcome:
        """Archive ``episode`` (when the rule keeps a copy) and audit its expiry as ``audit_id``.

        ``removed`` says the timeline has already let it go (DynamoDB's TTL); otherwise it is
        deleted in the same commit as the audit record, and only if it is still the version
        read. The archive key is fixed by the episode and the audit record is created once, so
        recording the same expiry twice stores nothing new."""
        key = self.archive.put(episode, "retention_expired", at) if archived_on_expiry(episode) else None
        audit = AuditRecord(
            audit_id=audit_id,
            tenant_id=episode.tenant_id,
            at=at,
            action=AuditAction.EPISODE_EXPIRED,
            principal_id=by,
            event_id=episode.event_id,
            policy_version=episode.policy_version,
            detail={k: v for k, v in (expiry_detail(episode, key, self.pseudonyms) | detail).items() if v is not None},
        )
        delete = [] if removed else [episode.event_id]
        try:
            self.episodes.apply(Changes(tenant_id=episode.tenant_id, delete=delete, audit=[audit]))
        except ConflictError:
            if removed:
                return ExpiryOutcome.ALREADY_RECORDED
            if key is not None:
                self.archive.delete_events(episode.tenant_id, [episode.event_id])
            return ExpiryOutcome.CHANGED
        return ExpiryOutcome.ARCHIVED if key is not None else ExpiryOutcome.NOT_ARCHIVED
