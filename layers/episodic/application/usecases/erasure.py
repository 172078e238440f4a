"""Erasure on request: an episode, or everything about an actor, removed everywhere -- the
cold archive, the timeline, the index and the digests that cite it -- leaving tombstones
with a content hash, never the text."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import TypeVar

from episodic.application.ports import Changes, ReviewChange
from episodic.application.usecases.deps import Deps, require_operator
from episodic.domain.access import may_read, require_changeable
from episodic.domain.errors import ConflictError, ForbiddenError, NotFoundError
from episodic.domain.forgetting.expiry import content_hash
from episodic.domain.model import (
    AuditAction,
    Caller,
    Episode,
    ErasureResult,
    Review,
    ReviewStatus,
    Role,
    SystemActor,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

CHUNK_ATTEMPTS = 3
"""How often a change set is staged again when a review it closes was decided meanwhile."""
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
        return self._erase_ids(caller, [event_id], self._reason("erasure_requested", reason), scope="episode")

    def erase_actor(self, caller: Caller, actor_id: str, reason: str | None = None) -> ErasureResult:
        """Erase every episode of an actor and what derives from them: timeline, index, archive,
        summaries citing them, notes on their reviews."""
        require_operator(caller)
        deps = self.deps
        ids = deps.episodes.event_ids_of_actor(caller.tenant_id, actor_id)
        archived = deps.archive.delete_actor(caller.tenant_id, actor_id)  # copies first: see _erase_ids
        why = self._reason("actor_erasure_requested", reason)
        result = self._erase_ids(caller, ids, why, scope="actor", actor_id=actor_id)
        now = deps.clock.now()
        erased = deps.audit(
            caller,
            AuditAction.ACTOR_ERASED,
            now,
            None,
            None,
            actorHash=deps.pseudonyms.actor(caller.tenant_id, actor_id),
            **why,
            erasedEpisodes=len(result.erased),
            archivedRecordsDeleted=archived,
        )
        deps.episodes.apply(Changes(tenant_id=caller.tenant_id, audit=[erased]))
        return result.model_copy(update={"archived_records_deleted": result.archived_records_deleted + archived})

    def erase_orphaned_summary(self, tenant_id: str, event_id: str) -> None:
        """A summary written while a source it cites was being erased (from the source as read
        before): erased, as that erasure's cascade would have erased it had it been there."""
        system = Caller(tenant_id=tenant_id, role=Role.OPERATOR, principal_id=SystemActor.ERASURE)
        self._erase_ids(system, [event_id], {"reason": "sources_erased", "reasonHash": None}, scope="cascade")

    def _reason(self, code: str, given: str | None) -> dict[str, str | None]:
        """What the audit keeps of why: a reason code, and the caller's own words only as a keyed
        hash (they may name the person whose data goes: "request from alice@example.com")."""
        return {"reason": code, "reasonHash": self.deps.pseudonyms.text(given) if given else None}

    def _erase_ids(
        self, caller: Caller, ids: list[str], reason: dict[str, str | None], scope: str, actor_id: str | None = None
    ) -> ErasureResult:
        """Archive copies go first, then the timeline with its tombstones, in change sets of
        :data:`ERASURE_CHUNK` episodes, the summaries citing the episodes before the episodes
        themselves: if a step fails the caller gets an error and a retry (which finds the
        episodes still there, and what still cites them) finishes the job, and no failure leaves
        a copy of erased text behind a tombstone that says it is gone. Erasing an actor
        (``actor_id``) also reaches the reviews of its writes that are gone already (denied)."""
        deps = self.deps
        with self._lock:
            now = deps.clock.now()
            cited = deps.episodes.summaries_citing(caller.tenant_id, ids) if ids else []
            asked = set(ids)
            cascaded = [i for i in dict.fromkeys(cited) if i not in asked]
            named = self._readable(caller, cascaded)
            order = [*cascaded, *dict.fromkeys(ids)]
            actor = deps.pseudonyms.actor(caller.tenant_id, actor_id) if actor_id is not None else None
            reviews = deps.reviews.reviews_of(caller.tenant_id, order, actor) if order or actor else []
            closed: list[Review] = []
            archived = sum(
                self._erase_chunk(caller, chunk, set(cascaded), reviews, reason, scope, now, closed)
                for chunk in _chunks(order)
            )
            done = set(order)
            late = [i for i in deps.episodes.summaries_citing(caller.tenant_id, ids) if i not in done] if ids else []
            if late:  # written while this erasure ran, from sources read before it (the summariser)
                named |= self._readable(caller, late)
                late_reviews = deps.reviews.reviews_of(caller.tenant_id, late)
                archived += sum(
                    self._erase_chunk(caller, chunk, set(late), late_reviews, reason, scope, now, closed)
                    for chunk in _chunks(late)
                )
                cascaded += late
            done.update(late)
            for gone in _chunks([r for r in reviews if r.event_id not in done]):  # writes denied before
                changes = Changes(tenant_id=caller.tenant_id)
                closed += self._stage_reviews(caller, gone, {}, changes, now)
                deps.episodes.apply(changes)
            if deps.compaction is not None:
                deps.compaction.compact_after_erasure()
            forget_tenant = getattr(deps.embedder, "forget_tenant", None)
            if forget_tenant is not None:  # names recall widened with may be words of what went
                forget_tenant(caller.tenant_id)
        self._let_workflows_go(closed)
        cascaded = [i for i in cascaded if i in named]
        return ErasureResult(
            erased=[*dict.fromkeys(ids), *cascaded], cascaded=cascaded, archived_records_deleted=archived
        )

    def _readable(self, caller: Caller, event_ids: list[str]) -> set[str]:
        """Those of ``event_ids`` the caller may read, which its answer names. A summary citing what
        it erases goes with it whoever may read the summary (it repeats the erased text), but another
        actor's private summary is not named to a caller that could not read it (its audit says all)."""
        if caller.is_operator or not event_ids:
            return set(event_ids)
        episodes = self.deps.episodes.get_many(caller.tenant_id, event_ids)
        return {i for i, episode in episodes.items() if may_read(caller, episode)}

    def _let_workflows_go(self, closed: list[Review]) -> None:
        """Tell the review workflows of the reviews erasure denied; one that cannot be told is
        logged, not raised (the erasure is done; its workflow ends at its timeout, which finds
        the review closed)."""
        for review in closed:
            try:
                self.deps.notifier.review_decided(review)
            except Exception:
                log.warning("could not tell a review's workflow that erasure closed it", exc_info=True)

    def _erase_chunk(
        self,
        caller: Caller,
        chunk: list[str],
        cascaded: set[str],
        reviews: list[Review],
        reason: dict[str, str | None],
        scope: str,
        now: datetime,
        closed: list[Review],
    ) -> int:
        """Erase one change set's episodes; the number of archive records deleted. The reviews
        it denies join ``closed``. A review of the set decided meanwhile (its closing's condition
        fails) is read again and the set staged again, a few times, rather than failing the
        erasure half-way."""
        deps = self.deps
        archived = deps.archive.delete_events(caller.tenant_id, chunk)
        reviews = [r for r in reviews if r.event_id in chunk]
        for attempt in range(1, CHUNK_ATTEMPTS + 1):
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
                        scope=scope,
                        **reason,
                        cascade=event_id in cascaded,
                        contentHash=content_hash(episode, deps.pseudonyms) if episode else None,
                    )
                )
            denied = self._stage_reviews(caller, reviews, found, changes, now)
            try:
                deps.episodes.apply(changes)
            except ConflictError:
                if attempt == CHUNK_ATTEMPTS or not reviews:
                    raise
                reviews = deps.reviews.reviews_of(caller.tenant_id, chunk)
                continue
            closed.extend(denied)
            break
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


def _chunks(items: list[T]) -> list[list[T]]:
    """``items`` in change sets of :data:`ERASURE_CHUNK`."""
    return [items[start : start + ERASURE_CHUNK] for start in range(0, len(items), ERASURE_CHUNK)]
