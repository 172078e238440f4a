"""Reviews (episodic.application.usecases.reviews): the queue of held writes, an operator's approve or deny,
and the default deny when a review times out; every outcome audited and told to the waiting
workflow (the notifier double records it)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.application.ports import AuditQuery
from episodic.application.usecases.erasure import Erasure
from episodic.application.usecases.reviews import Reviews
from episodic.domain.errors import ConflictError, ForbiddenError, NotFoundError
from episodic.domain.model import Caller, ReviewStatus, Role, Status, SystemActor
from tests.support.factories import AGENT, OPERATOR, OTHER_TENANT_AGENT, proposal

OTHER_OPERATOR = Caller(tenant_id="globex", role=Role.OPERATOR, principal_id="operator:globex")


@pytest.fixture
def reviews(deps, writes) -> Reviews:
    return Reviews(deps, writes)


def _held(writes, caller=AGENT, **overrides):
    result = writes.remember(caller, proposal(sourceTrust="untrusted_content", **overrides))
    assert result.review_id is not None, result.reasons
    return result


def test_given_a_held_write_when_approved_then_it_is_active_audited_and_the_workflow_told(
    writes, reviews, store, notifier, deps
):
    held = _held(writes)
    view = reviews.decide_review(OPERATOR, held.review_id, approve=True, note="checked the vendor page")
    assert view.review.status is ReviewStatus.APPROVED and view.episode.status is Status.ACTIVE
    assert store.episodes.get("acme", held.event_id).status is Status.ACTIVE
    assert [(r.review_id, r.status, r.reviewer) for r in notifier.decided] == [
        (held.review_id, ReviewStatus.APPROVED, OPERATOR.principal_id)
    ]
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="review.approved"))
    assert records[0].detail == {
        "reviewId": held.review_id,
        "reviewer": OPERATOR.principal_id,
        "noteHash": deps.pseudonyms.text("checked the vendor page"),
        "actor": deps.pseudonyms.actor("acme", "user-1"),  # the episode's actor, never in clear
    }


def test_given_a_held_write_when_denied_then_the_workflow_is_told_it_was_denied(writes, reviews, store, notifier):
    held = _held(writes)
    view = reviews.decide_review(OPERATOR, held.review_id, approve=False)
    assert view.episode is None and store.episodes.get("acme", held.event_id) is None
    assert [r.status for r in notifier.decided] == [ReviewStatus.DENIED]
    assert store.reviews.get_review("acme", held.review_id).status is ReviewStatus.DENIED


def test_given_the_queue_when_listed_then_views_carry_their_episodes_and_closed_ones_need_no_filter(writes, reviews):
    first, second = _held(writes), _held(writes, summary="Forum says the SDK supports Python 3.8")
    reviews.decide_review(OPERATOR, first.review_id, approve=False)
    pending = reviews.list_reviews(OPERATOR)
    assert [(v.review.review_id, v.episode.event_id) for v in pending] == [(second.review_id, second.event_id)]
    everything = reviews.list_reviews(OPERATOR, status=None)
    assert [(v.review.review_id, v.review.status, v.episode is None) for v in everything] == [
        (first.review_id, ReviewStatus.DENIED, True),
        (second.review_id, ReviewStatus.PENDING, False),
    ]
    with pytest.raises(ForbiddenError):
        reviews.list_reviews(AGENT)


def test_given_another_tenants_review_when_decided_then_it_is_not_found(writes, reviews, store):
    theirs = _held(writes, caller=OTHER_TENANT_AGENT)
    with pytest.raises(NotFoundError):
        reviews.decide_review(OPERATOR, theirs.review_id, approve=True)
    assert store.reviews.get_review("globex", theirs.review_id).status is ReviewStatus.PENDING
    assert reviews.list_reviews(OTHER_OPERATOR)[0].review.review_id == theirs.review_id


def test_given_a_held_write_erased_meanwhile_when_approved_then_it_is_refused_for_erasure_denied_it(
    writes, reviews, deps, store, notifier
):
    held = _held(writes)
    Erasure(deps).erase(AGENT, held.event_id)
    assert [(r.review_id, r.status, r.reviewer) for r in notifier.decided] == [
        (held.review_id, ReviewStatus.DENIED, "system:erasure")
    ]  # the waiting workflow is let go
    with pytest.raises(ConflictError):
        reviews.decide_review(OPERATOR, held.review_id, approve=True)
    assert store.episodes.get("acme", held.event_id) is None and len(notifier.decided) == 1


def test_given_a_decided_review_when_it_times_out_then_its_decision_stands(writes, reviews, store):
    held = _held(writes)
    reviews.decide_review(OPERATOR, held.review_id, approve=True)
    assert reviews.expire_review("acme", held.review_id) == "approved"
    assert store.episodes.get("acme", held.event_id).status is Status.ACTIVE


def test_given_reviews_of_different_ages_when_timed_out_then_only_the_stale_ones_are_denied_by_the_system(
    writes, reviews, store, notifier, clock
):
    stale = _held(writes)
    clock.advance(days=3)
    recent = _held(writes, summary="Forum says the SDK supports Python 3.8")
    elsewhere = _held(writes, caller=OTHER_TENANT_AGENT)
    assert reviews.time_out(clock.now() - timedelta(days=1), limit=10) == 1
    assert store.episodes.get("acme", stale.event_id) is None
    assert store.reviews.get_review("acme", recent.review_id).status is ReviewStatus.PENDING
    assert store.reviews.get_review("globex", elsewhere.review_id).status is ReviewStatus.PENDING
    assert [(r.review_id, r.status, r.reviewer) for r in notifier.decided] == [
        (stale.review_id, ReviewStatus.EXPIRED, SystemActor.REVIEW_TIMEOUT)
    ]
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="review.expired"))
    assert records[0].principal_id == SystemActor.REVIEW_TIMEOUT and records[0].event_id == stale.event_id
    later = clock.now() + timedelta(seconds=1)
    assert reviews.time_out(later, limit=10) == 2  # the other tenant's too: the sweep is service-wide


def test_given_a_review_closed_between_read_and_write_when_it_times_out_then_it_reports_a_concurrent_close(
    writes, reviews, deps, store, notifier
):
    held = _held(writes)
    snapshot = store.reviews.get_review("acme", held.review_id)
    reviews.decide_review(OPERATOR, held.review_id, approve=True)

    class StaleReviewQueueDouble:
        """TEST DOUBLE: answers with the review as it was read before the operator decided."""

        def get_review(self, tenant_id, review_id):
            return snapshot

    deps.reviews = StaleReviewQueueDouble()
    assert reviews.expire_review("acme", held.review_id) == "closed-concurrently"
    assert store.episodes.get("acme", held.event_id).status is Status.ACTIVE and len(notifier.decided) == 1


def test_given_a_correction_of_another_actor_when_denied_then_the_corrected_episode_stays_active(
    writes, reviews, store
):
    theirs = writes.remember(AGENT, proposal(actorId="cust-alice"))
    attempt = writes.remember(
        AGENT, proposal(actorId="cust-mallory", summary="Mallory wants XML", supersedesEventIds=[theirs.event_id])
    )
    reviews.decide_review(OPERATOR, attempt.review_id, approve=False)
    assert store.episodes.get("acme", theirs.event_id).status is Status.ACTIVE
    with pytest.raises(ConflictError):
        reviews.decide_review(OPERATOR, attempt.review_id, approve=True)


def test_given_a_held_write_past_its_retention_when_swept_then_it_is_gone_without_an_archive_copy(
    writes, reviews, deps, store, archive, clock
):
    """Never admitted to memory: an archive copy would let a restore activate what no reviewer
    approved. Its review, still open, finds nothing to activate."""
    from episodic.application.usecases.archival import Archival

    held = _held(writes, retention={"expiresAt": (clock.now() + timedelta(hours=1)).isoformat()})
    clock.advance(hours=2)
    assert Archival(deps).expire(clock.now(), 10) == 1
    assert store.episodes.get("acme", held.event_id) is None and not archive.contains("acme", held.event_id)
    [expired], _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="episode.expired", event_id=held.event_id))
    assert expired.detail["archived"] is False
    with pytest.raises(NotFoundError):
        Archival(deps).restore(OPERATOR, held.event_id, expires_at=clock.now() + timedelta(days=30))
    with pytest.raises(ConflictError, match="gone"):  # nothing left to activate
        reviews.decide_review(OPERATOR, held.review_id, approve=True)
    view = reviews.decide_review(OPERATOR, held.review_id, approve=False)
    assert view.review.status is ReviewStatus.DENIED and view.episode is None
    assert store.episodes.get("acme", held.event_id) is None
