"""Forgetting that keeps a way back: retention expiry into the cold archive, relevance decay
(archived, out of default recall), and restore on an operator's explicit request."""

from __future__ import annotations

from datetime import datetime, timedelta

from episodic.application.ports import Changes, NewEpisode, StatsChange, StatusChange
from episodic.application.usecases.deps import Deps, require_operator
from episodic.application.usecases.expiry import Expiry, ExpiryOutcome
from episodic.domain.errors import ConflictError, InvalidRequestError, NotFoundError
from episodic.domain.forgetting.expiry import content_hash
from episodic.domain.forgetting.retention import retention_score
from episodic.domain.model import AuditAction, Caller, Episode, ForgetReport, Role, Status, SystemActor


class Archival:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def expire(self, now: datetime, limit: int) -> int:
        """Move episodes whose retention has passed to the cold archive (by the one rule of
        :class:`~episodic.application.usecases.expiry.Expiry`); returns how many. In AWS, TTL
        and the stream processor do this."""
        deps = self.deps
        expiry = Expiry(deps.episodes, deps.archive, deps.pseudonyms)
        expired = 0
        for episode in deps.scans.expired_episodes(now, limit):
            outcome = expiry.record_expiry(episode, now, by=SystemActor.SWEEP, audit_id=deps.ids(now), removed=False)
            expired += outcome is not ExpiryOutcome.CHANGED
        return expired

    def forget(self, *, dry_run: bool = False, cursor: str | None = None, page_size: int = 500) -> ForgetReport:
        """Archive episodes whose retention score fell below the threshold and that nobody
        recalled for ``decay_idle_days``: a copy goes to cold storage with an audit record
        (when, why, what -- a hash, never the text), the episode leaves default recall as
        ``archived`` and can be listed (timeline ``status=archived``) and restored.

        Works a page at a time; ``ForgetReport.next_cursor`` resumes. ``dry_run`` only lists.
        """
        deps = self.deps
        now = deps.clock.now()
        idle_cutoff = now - timedelta(days=deps.settings.decay_idle_days)
        episodes, next_cursor = deps.scans.active_page(cursor, page_size)
        chosen: list[tuple[Episode, float]] = []
        for episode in episodes:
            score = retention_score(episode, now, deps.settings.tag_weights)
            last_seen = episode.last_accessed_at or episode.recorded_at
            if score < deps.settings.decay_threshold and last_seen <= idle_cutoff:
                chosen.append((episode, score))
        if dry_run:
            return ForgetReport(examined=len(episodes), archived=[e.event_id for e, _ in chosen], dry_run=True,
                                next_cursor=next_cursor)  # fmt: skip
        archived = []
        for episode, score in chosen:
            key = deps.archive.put(episode, "relevance_decay", now)
            system = Caller(tenant_id=episode.tenant_id, role=Role.OPERATOR, principal_id=SystemActor.DECAY_SWEEP)
            audit = deps.audit(
                system, AuditAction.EPISODE_ARCHIVED, now, episode.event_id, None, episode.actor_id,
                reason="relevance_decay", retentionScore=score, archiveKey=key,
                contentHash=content_hash(episode, deps.pseudonyms),
                lastAccessedAt=(episode.last_accessed_at or episode.recorded_at).isoformat(),
            )  # fmt: skip
            try:
                deps.episodes.apply(
                    Changes(
                        tenant_id=episode.tenant_id,
                        status=[StatusChange(episode.event_id, Status.ACTIVE, Status.ARCHIVED)],
                        stats=[StatsChange(episode.event_id, episode.feedback_score, episode.feedback_count, score)],
                        audit=[audit],
                    )
                )
                archived.append(episode.event_id)
            except ConflictError:
                deps.archive.delete_events(episode.tenant_id, [episode.event_id])  # changed meanwhile: keep it
        return ForgetReport(examined=len(episodes), archived=archived, dry_run=False, next_cursor=next_cursor)

    def restore(self, caller: Caller, event_id: str, expires_at: datetime | None = None) -> Episode:
        """Bring an archived episode back to the timeline, on an operator's explicit request.

        The episode returns ``active`` and is re-embedded (vectors are not archived); one whose
        retention has passed needs a new ``expiresAt``, or it would be forgotten again at once.
        The archive copy is removed once the episode is back, so no second copy lingers; if that
        removal failed, asking again finishes it (the episode is back already: only the copy goes).

        An episode archived by relevance decay is still in the timeline: without a new expiry it
        goes back to ``active`` where it stands; with one, it leaves the timeline for its archive
        copy and comes back from there the way an expired one does, with the new expiry. The two
        steps are two commits, and a crash between them leaves it in the archive, where asking
        again restores it.
        """
        require_operator(caller)
        deps = self.deps
        now = deps.clock.now()
        if expires_at is not None and expires_at <= now:
            raise InvalidRequestError("expiresAt must be in the future")
        held = deps.episodes.get(caller.tenant_id, event_id)
        if held is not None and held.status is Status.ARCHIVED:
            if expires_at is None and held.is_expired(now):
                raise ConflictError("this episode's retention has passed; restore it with a new expiresAt")
            if expires_at is None:
                return self._unarchive(caller, held, now)
            self._to_archive_only(held, now)
            held = None
        if held is not None and deps.archive.contains(caller.tenant_id, event_id):
            deps.archive.delete_events(caller.tenant_id, [event_id])
            return held
        return self._from_archive(caller, event_id, expires_at, now)

    def _from_archive(self, caller: Caller, event_id: str, expires_at: datetime | None, now: datetime) -> Episode:
        """The archived record back in the timeline, re-embedded, then its archive copy removed."""
        deps = self.deps
        record = deps.archive.get(caller.tenant_id, event_id)
        if record is None:
            raise NotFoundError("no such archived episode")
        episode = Episode.model_validate(record["episode"])
        retention = episode.retention
        if expires_at is not None:
            retention = retention.model_copy(update={"expires_at": expires_at})
        elif episode.is_expired(now):
            raise ConflictError("this episode's retention has passed; restore it with a new expiresAt")
        episode = episode.model_copy(update={"status": Status.ACTIVE, "retention": retention})
        vector = deps.embedder.embed([episode.search_text()])[0]
        audit = deps.audit(
            caller,
            AuditAction.EPISODE_RESTORED,
            now,
            event_id,
            None,
            archivedReason=record.get("reason"),
            expiresAt=retention.expires_at.isoformat() if retention.expires_at else None,
        )
        deps.episodes.apply(
            Changes(
                tenant_id=caller.tenant_id,
                put=[NewEpisode(episode=episode, vector=vector, embedder=deps.embedder.name)],
                audit=[audit],
            )
        )
        deps.archive.delete_events(caller.tenant_id, [event_id])
        return episode

    def _to_archive_only(self, episode: Episode, now: datetime) -> None:
        """Take a decay-archived episode out of the timeline, its archive copy (written again
        from the timeline's current version first) left as the one way back."""
        deps = self.deps
        deps.archive.put(episode, "relevance_decay", now)
        deps.episodes.apply(Changes(tenant_id=episode.tenant_id, delete=[episode.event_id]))

    def _unarchive(self, caller: Caller, episode: Episode, now: datetime) -> Episode:
        """An episode archived by relevance decay goes back to ``active`` where it stands."""
        deps = self.deps
        audit = deps.audit(
            caller, AuditAction.EPISODE_RESTORED, now, episode.event_id, None, archivedReason="relevance_decay"
        )
        deps.episodes.apply(
            Changes(
                tenant_id=caller.tenant_id,
                status=[StatusChange(episode.event_id, Status.ARCHIVED, Status.ACTIVE)],
                audit=[audit],
            )
        )
        deps.archive.delete_events(caller.tenant_id, [episode.event_id])
        return episode.model_copy(update={"status": Status.ACTIVE})
