"""Human review of held writes: the queue, an operator's decision, and the default deny when
nobody decides in time. Every outcome is audited; approval activates and supersedes what the
write corrects, denial removes it."""

from __future__ import annotations

from datetime import datetime

from episodic.application.ports import Changes, ReviewChange, StatusChange
from episodic.application.usecases.deps import Deps, require_operator
from episodic.application.usecases.writes import Writes
from episodic.domain.errors import ConflictError, NotFoundError
from episodic.domain.model import AuditAction, Caller, Review, ReviewStatus, ReviewView, Role, Status, SystemActor


class Reviews:
    def __init__(self, deps: Deps, writes: Writes) -> None:
        self.deps = deps
        self.writes = writes

    def list_reviews(
        self, caller: Caller, status: ReviewStatus | None = ReviewStatus.PENDING, limit: int = 100
    ) -> list[ReviewView]:
        require_operator(caller)
        reviews = self.deps.reviews.list_reviews(caller.tenant_id, status, limit)
        episodes = self.deps.episodes.get_many(caller.tenant_id, [r.event_id for r in reviews])
        return [ReviewView(review=r, episode=episodes.get(r.event_id)) for r in reviews]

    def decide_review(self, caller: Caller, review_id: str, approve: bool, note: str | None = None) -> ReviewView:
        """An operator approves (activate) or denies (remove) a pending write. While the tenant's writes
        are off, a held write may be denied but not approved: approving would make it recallable."""
        require_operator(caller)
        if approve:
            self.deps.require_writes(caller.tenant_id)
        review = self.deps.reviews.get_review(caller.tenant_id, review_id)
        if review is None:
            raise NotFoundError("no such review")
        if review.status is not ReviewStatus.PENDING:
            raise ConflictError(f"review {review_id} is already {review.status.value}")
        outcome = ReviewStatus.APPROVED if approve else ReviewStatus.DENIED
        return self._close(caller, review, outcome, caller.principal_id, note)

    def expire_review(self, tenant_id: str, review_id: str) -> str:
        """The review workflow timed out: deny by default. Idempotent (a closed review stays closed)."""
        review = self.deps.reviews.get_review(tenant_id, review_id)
        if review is None:
            return "unknown"
        if review.status is not ReviewStatus.PENDING:
            return review.status.value
        system = Caller(tenant_id=tenant_id, role=Role.OPERATOR, principal_id=SystemActor.REVIEW_TIMEOUT)
        try:
            self._close(system, review, ReviewStatus.EXPIRED, SystemActor.REVIEW_TIMEOUT, "review timed out: denied")
        except ConflictError:
            return "closed-concurrently"
        return "expired"

    def time_out(self, requested_before: datetime, limit: int) -> int:
        """Deny every review still pending that was requested before ``requested_before``."""
        stale = self.deps.reviews.reviews_requested_before(requested_before, limit)
        return sum(self.expire_review(r.tenant_id, r.review_id) == "expired" for r in stale)

    def _close(
        self, caller: Caller, review: Review, outcome: ReviewStatus, reviewer: str, note: str | None
    ) -> ReviewView:
        deps = self.deps
        now = deps.clock.now()
        episode = deps.episodes.get(review.tenant_id, review.event_id)
        actor = episode.actor_id if episode is not None else None
        if episode is None and outcome is ReviewStatus.APPROVED:  # erased or expired meanwhile
            raise ConflictError("the write under review is gone (erased or expired): it cannot be approved")
        changes = Changes(tenant_id=review.tenant_id)
        changes.reviews_close.append(ReviewChange(review.review_id, outcome, now, reviewer, note))
        if episode is not None:
            if outcome is ReviewStatus.APPROVED:
                changes.status.append(StatusChange(episode.event_id, Status.PENDING_REVIEW, Status.ACTIVE))
                self.writes.stage_supersede(caller, episode, changes, now)
                episode = episode.model_copy(update={"status": Status.ACTIVE})
            else:
                changes.delete.append(episode.event_id)
                episode = None
        changes.audit.append(
            deps.audit(
                caller,
                AuditAction(f"review.{outcome.value}"),
                now,
                review.event_id,
                None,
                actor,
                reviewId=review.review_id,
                reviewer=reviewer,
                noteHash=deps.pseudonyms.text(note) if note else None,
            )
        )
        deps.episodes.apply(changes)
        closed = review.model_copy(update={"status": outcome, "decided_at": now, "reviewer": reviewer, "note": note})
        deps.notifier.review_decided(closed)
        return ReviewView(review=closed, episode=episode)
