"""Erasure on request: an episode, or everything about an actor, removed everywhere -- the
cold archive, the timeline, the index and the digests that cite it -- leaving tombstones
with a content hash, never the text."""

from __future__ import annotations

import threading
from datetime import datetime

from episodic.application.ports import Changes, ReviewChange
from episodic.application.usecases.deps import Deps, hash_text, require_operator
from episodic.domain.access import require_changeable
from episodic.domain.errors import ForbiddenError, NotFoundError
from episodic.domain.forgetting.expiry import content_hash
from episodic.domain.model import AuditAction, Caller, Episode, ErasureResult, Review, ReviewStatus, SystemActor

ERASURE_CHUNK = 20
"""Episodes erased per change set. A set commits at once, and on DynamoDB in one transaction
of at most 100 items: per episode a delete, a tombstone, and for a write still under review its
review's closing and that closing's audit record, plus the audit chain's head."""


class Erasure:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._lock = threading.Lock()

    def erase(self, caller: Caller, event_id: str, reason: str | None = None) -> ErasureResult:
        """Erase one episode everywhere, and the summaries that cite it; leave tombstones."""
        deps = self.deps
        episode = deps.episodes.get(caller.tenant_id, event_id)
        if episode is None:  # archived (expired or decayed): its retention travels with the record
            record = deps.archive.get(caller.tenant_id, event_id)
            if record is None:
                raise NotFoundError("no such episode")
            episode = Episode.model_validate(record["episode"])
        require_changeable(caller, episode, "erase an episode", pending=True)
        if not episode.retention.delete_on_request and not caller.is_operator:
            raise ForbiddenError("this episode is retained (deleteOnRequest=false); an operator must erase it")
        return self._erase_ids(caller, [event_id], reason or "erasure_requested", scope="episode")

    def erase_actor(self, caller: Caller, actor_id: str, reason: str | None = None) -> ErasureResult:
        """Erase everything about an actor: timeline, index, archive, derived summaries."""
        require_operator(caller)
        deps = self.deps
        ids = deps.episodes.event_ids_of_actor(caller.tenant_id, actor_id)
        archived = deps.archive.delete_actor(caller.tenant_id, actor_id)  # copies first: see _erase_ids
        result = self._erase_ids(caller, ids, reason or "actor_erasure_requested", scope="actor")
        now = deps.clock.now()
        erased = deps.audit(
            caller,
            AuditAction.ACTOR_ERASED,
            now,
            None,
            None,
            actorHash=hash_text(f"{caller.tenant_id}/{actor_id}"),
            erasedEpisodes=len(result.erased),
            archivedRecordsDeleted=archived,
        )
        deps.episodes.apply(Changes(tenant_id=caller.tenant_id, audit=[erased]))
        return result.model_copy(update={"archived_records_deleted": result.archived_records_deleted + archived})

    def _erase_ids(self, caller: Caller, ids: list[str], reason: str, scope: str) -> ErasureResult:
        """Archive copies go first, then the timeline with its tombstones, in change sets of
        :data:`ERASURE_CHUNK` episodes: if a step fails the caller gets an error and a retry
        finishes the job, and no failure leaves a copy of erased text behind a tombstone that
        says it is gone."""
        deps = self.deps
        with self._lock:
            now = deps.clock.now()
            cascade = deps.episodes.summaries_citing(caller.tenant_id, ids) if ids else []
            all_ids = list(dict.fromkeys([*ids, *cascade]))
            reviews = deps.reviews.reviews_of(caller.tenant_id, all_ids) if all_ids else []
            archived = 0
            for start in range(0, len(all_ids), ERASURE_CHUNK):
                chunk = all_ids[start : start + ERASURE_CHUNK]
                cascaded = {i for i in chunk if i in cascade and i not in ids}
                archived += self._erase_chunk(caller, chunk, cascaded, reviews, reason, scope, now)
            if deps.compaction is not None:
                deps.compaction.compact_after_erasure()
            forget_tenant = getattr(deps.embedder, "forget_tenant", None)
            if forget_tenant is not None:  # names recall widened with may be words of what went
                forget_tenant(caller.tenant_id)
        return ErasureResult(
            erased=all_ids, cascaded=[i for i in cascade if i not in ids], archived_records_deleted=archived
        )

    def _erase_chunk(
        self,
        caller: Caller,
        chunk: list[str],
        cascaded: set[str],
        reviews: list[Review],
        reason: str,
        scope: str,
        now: datetime,
    ) -> int:
        """Erase one change set's episodes; the number of archive records deleted."""
        deps = self.deps
        found = deps.episodes.get_many(caller.tenant_id, chunk)
        changes = Changes(tenant_id=caller.tenant_id, delete=list(found))
        for event_id in chunk:
            episode = found.get(event_id)
            changes.audit.append(
                deps.audit(
                    caller,
                    AuditAction.EPISODE_ERASED,
                    now,
                    event_id,
                    None,
                    reason=reason,
                    scope=scope,
                    cascade=event_id in cascaded,
                    contentHash=content_hash(episode) if episode else None,
                )
            )
        closed = self._stage_reviews(caller, [r for r in reviews if r.event_id in chunk], found, changes, now)
        archived = deps.archive.delete_events(caller.tenant_id, chunk)
        deps.episodes.apply(changes)
        for review in closed:
            deps.notifier.review_decided(review)
        return archived

    def _stage_reviews(
        self, caller: Caller, reviews: list[Review], found: dict[str, Episode], changes: Changes, now: datetime
    ) -> list[Review]:
        """The erased writes' reviews: a pending one is denied (nobody may approve a write that
        is gone), a closed one loses its reviewer's note (it may quote what was erased). The
        reviews denied here, to let their waiting workflows finish."""
        closed = []
        for review in reviews:
            if review.status is not ReviewStatus.PENDING:
                if review.note is not None:
                    changes.reviews_scrub.append(review.review_id)
                continue
            reviewer = SystemActor.ERASURE
            changes.reviews_close.append(ReviewChange(review.review_id, ReviewStatus.DENIED, now, reviewer, None))
            episode = found.get(review.event_id)
            changes.audit.append(
                self.deps.audit(
                    caller,
                    AuditAction.REVIEW_DENIED,
                    now,
                    review.event_id,
                    None,
                    episode.actor_id if episode else None,
                    reviewId=review.review_id,
                    reviewer=reviewer,
                )
            )
            closed.append(
                review.model_copy(update={"status": ReviewStatus.DENIED, "decided_at": now, "reviewer": reviewer})
            )
        return closed
