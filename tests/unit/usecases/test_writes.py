"""Writes (episodic.application.usecases.writes): one proposal, a batch, a correction -- each judged by the
real write policy and committed item by item with its audit record, over the real SQLite store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.adapters.sqlite.writes import delete_episode
from episodic.application.ports import AuditQuery
from episodic.application.settings import Settings
from episodic.application.usecases.idempotency import stored_idempotency_key
from episodic.application.usecases.writes import Writes
from episodic.domain.errors import (
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    WritesDisabledError,
)
from episodic.domain.forgetting.retention import retention_score
from episodic.domain.model import Decision, ReviewStatus, Status
from tests.support.factories import AGENT, OPERATOR, proposal
from tests.unit.usecases.doubles import StoreSpyDouble


def _actions(store, event_id=None):
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", event_id=event_id, limit=100))
    return [r.action for r in records]


def test_given_the_deployment_kill_switch_when_remembering_then_writes_fail_and_nothing_is_embedded(
    writes, deps, store, embedder
):
    deps.settings = Settings(writes_disabled=True)
    with pytest.raises(WritesDisabledError):
        writes.remember(AGENT, proposal())
    assert store.episodes.count("acme") == 0 and embedder.calls == [] and _actions(store) == []


def test_given_a_denied_proposal_when_remembered_then_only_its_audit_is_stored_and_nothing_is_embedded(
    writes, store, embedder
):
    result = writes.remember(AGENT, proposal(actorId=None))
    assert result.decision is Decision.DENY and "not_an_episode" in result.reasons
    assert result.event_id is None and result.episode is None
    assert store.episodes.count("acme") == 0 and embedder.calls == []
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme"))
    assert [(r.action, r.event_id) for r in records] == [("episode.denied", None)]
    assert records[0].reasons == result.reasons and records[0].principal_id == AGENT.principal_id


def test_given_an_allowed_proposal_when_remembered_then_it_is_stored_with_its_vector_score_and_audit(
    writes, store, embedder, clock
):
    result = writes.remember(AGENT, proposal())
    stored = store.episodes.get("acme", result.event_id)
    assert result.decision is Decision.ALLOW and stored == result.episode
    assert stored.tenant_id == "acme" and stored.recorded_at == clock.now() and stored.status is Status.ACTIVE
    assert stored.retention_score == retention_score(stored, clock.now())
    assert store.vectors.stale_vectors(embedder.name, 10) == []  # the vector came from this embedder
    assert _actions(store, result.event_id) == ["episode.written"]


def test_given_tag_weights_when_remembered_then_the_retention_score_uses_them(writes, deps, store):
    plain = writes.remember(AGENT, proposal(importance=0.1))
    deps.settings = Settings(tag_weights={"billing": 1.0})
    weighted = writes.remember(AGENT, proposal(importance=0.1, summary="User wants invoices emailed on the 1st"))
    assert (
        store.episodes.get("acme", weighted.event_id).retention_score
        > store.episodes.get("acme", plain.event_id).retention_score
    )


def test_given_an_empty_batch_when_remembered_then_it_is_refused(writes):
    with pytest.raises(InvalidRequestError):
        writes.remember_batch(AGENT, [])


def test_given_a_batch_with_one_item_naming_another_tenant_when_remembered_then_nothing_is_written(writes, store):
    with pytest.raises(ForbiddenError):
        writes.remember_batch(AGENT, [proposal(), proposal(tenantId="globex")])
    assert store.episodes.count("acme") == 0 and store.episodes.count("globex") == 0


def test_given_a_batch_item_superseding_an_unknown_episode_when_remembered_then_only_that_item_is_refused(
    writes, store
):
    results = writes.remember_batch(
        AGENT,
        [proposal(summary="User's timezone is Europe/Lisbon"), proposal(supersedesEventIds=["01NOSUCHEPISODE"])],
    )
    assert results[0].decision is Decision.ALLOW
    assert results[1].decision is Decision.DENY and results[1].reasons[:2] == ["invalid_reference", "01NOSUCHEPISODE"]
    assert store.episodes.count("acme") == 1


def test_given_two_batch_items_superseding_the_same_episode_when_remembered_then_the_second_conflicts_alone(
    writes, store
):
    old = writes.remember(AGENT, proposal())
    first, second = writes.remember_batch(
        AGENT,
        [
            proposal(summary="User now wants invoices as XML", supersedesEventIds=[old.event_id]),
            proposal(summary="User now wants invoices by post", supersedesEventIds=[old.event_id]),
        ],
    )
    assert first.decision is Decision.ALLOW
    assert second.decision is Decision.DENY and second.reasons[0] == "conflict" and second.event_id is None
    assert store.episodes.get("acme", old.event_id).status is Status.SUPERSEDED
    assert store.episodes.count("acme") == 2  # the old one and the first correction; nothing of the second


def test_given_a_correction_when_written_then_it_inherits_the_actor_and_supersedes_in_the_same_commit(deps, store):
    spy = StoreSpyDouble(store.episodes)
    deps.episodes = spy
    writes = Writes(deps)
    old = writes.remember(AGENT, proposal(actorId="cust-ana"))
    spy.applied.clear()
    fix = writes.correct(AGENT, old.event_id, proposal(actorId=None, summary="User now wants invoices as XML"))
    new = store.episodes.get("acme", fix.event_id)
    assert new.actor_id == "cust-ana" and new.supersedes_event_ids == [old.event_id]
    assert new.correction_path == f"corrects {old.event_id}"
    [changes] = spy.applied  # one change set: the new episode, the old one's status, both audits
    assert [p.episode.event_id for p in changes.put] == [fix.event_id]
    assert [(s.event_id, s.expected, s.new) for s in changes.status] == [
        (old.event_id, Status.ACTIVE, Status.SUPERSEDED)
    ]
    assert sorted(a.action for a in changes.audit) == ["episode.superseded", "episode.written"]
    assert store.episodes.get("acme", old.event_id).status is Status.SUPERSEDED


def test_given_a_correction_naming_the_corrected_id_again_when_written_then_it_is_superseded_once(writes, store):
    old = writes.remember(AGENT, proposal())
    fix = writes.correct(
        AGENT, old.event_id, proposal(summary="User wants XML invoices", supersedesEventIds=[old.event_id])
    )
    assert store.episodes.get("acme", fix.event_id).supersedes_event_ids == [old.event_id]
    assert _actions(store, old.event_id).count("episode.superseded") == 1


def test_given_an_unknown_or_expired_episode_when_corrected_then_it_is_not_found(writes, clock):
    with pytest.raises(NotFoundError):
        writes.correct(AGENT, "01NOSUCHEPISODE", proposal())
    short = writes.remember(AGENT, proposal(retention={"expiresAt": (clock.now() + timedelta(hours=1)).isoformat()}))
    clock.advance(hours=2)
    with pytest.raises(NotFoundError):
        writes.correct(AGENT, short.event_id, proposal(summary="User wants XML invoices"))


def test_given_an_episode_pending_review_when_corrected_then_agents_do_not_find_it_and_operators_conflict(writes):
    held = writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    assert held.decision is Decision.REVIEW
    with pytest.raises(NotFoundError):  # held text is for reviewers: it does not exist for an agent
        writes.correct(AGENT, held.event_id, proposal(summary="User wants XML invoices"))
    with pytest.raises(ConflictError):
        writes.correct(OPERATOR, held.event_id, proposal(summary="User wants XML invoices"))


def test_given_another_actors_episode_when_an_agent_supersedes_it_then_review_but_an_operator_supersedes_it(
    writes, store, notifier
):
    theirs = writes.remember(AGENT, proposal(actorId="cust-alice"))
    attempt = writes.remember(
        AGENT, proposal(actorId="cust-mallory", summary="Mallory wants XML", supersedesEventIds=[theirs.event_id])
    )
    assert attempt.decision is Decision.REVIEW and "supersedes_other_actor" in attempt.reasons
    assert store.episodes.get("acme", theirs.event_id).status is Status.ACTIVE  # nothing hidden before a human decides
    assert [(r.review_id, e.event_id) for r, e in notifier.requested] == [(attempt.review_id, attempt.event_id)]
    assert store.reviews.get_review("acme", attempt.review_id).status is ReviewStatus.PENDING

    by_operator = writes.remember(
        OPERATOR, proposal(actorId="cust-bob", summary="Bob wants XML", supersedesEventIds=[theirs.event_id])
    )
    assert by_operator.decision is Decision.ALLOW and "supersedes_other_actor" not in by_operator.reasons
    assert store.episodes.get("acme", theirs.event_id).status is Status.SUPERSEDED


def test_given_a_batch_with_two_held_items_when_remembered_then_each_review_is_notified_once_after_commit(
    writes, store, notifier
):
    results = writes.remember_batch(
        AGENT,
        [
            proposal(summary="Forum post says the SDK supports Python 3.8", sourceTrust="untrusted_content"),
            proposal(summary="User's timezone is Europe/Lisbon"),
            proposal(summary="Blog says the API rate limit is 50 rps", sourceTrust="untrusted_content"),
        ],
    )
    assert [r.decision for r in results] == [Decision.REVIEW, Decision.ALLOW, Decision.REVIEW]
    assert [r.review_id for r, _ in notifier.requested] == [results[0].review_id, results[2].review_id]
    for review, episode in notifier.requested:
        assert (
            store.episodes.get("acme", episode.event_id).status is Status.PENDING_REVIEW
        )  # committed before notifying
        assert review.event_id == episode.event_id


def _turn(actor: str, text: str, minute: int, **overrides):
    return proposal(**{"eventType": "conversation_turn", "actorId": actor, "summary": text, "sessionId": "s-1",
                       "tags": [], "occurredAt": f"2026-11-28T09:{minute:02d}:00Z", "sourceRefs": [f"t:{minute}"],
                       **overrides})  # fmt: skip


def test_given_a_short_answer_after_a_question_in_a_batch_then_it_is_kept_and_alone_it_is_not(writes, store):
    """A reply is judged in the light of the turn just before it, another speaker's in its session."""
    asked, answered = writes.remember_batch(AGENT, [_turn("ana", "Do you eat meat?", 1), _turn("ben", "Fish only", 2)])
    alone = writes.remember(AGENT, _turn("ben", "Fish only", 3))
    assert answered.decision is Decision.ALLOW and [s.why for s in answered.sentences] == ["answer"]
    assert alone.decision is Decision.DENY and alone.reasons == ["not_memorable"]
    assert asked.decision is Decision.DENY  # a question tells nothing
    assert store.episodes.get("acme", answered.event_id).summary == "Fish only"


@pytest.mark.parametrize(
    "overrides",
    [{"sessionId": None}, {"sourceTrust": "tool_result"}],
    ids=["turns of no named session", "an agent's turn, not a person's words"],
)
def test_given_a_reply_outside_what_the_answer_rule_reads_then_it_is_judged_alone(writes, overrides):
    question = _turn("ana", "Do you eat meat?", 1, **{k: v for k, v in overrides.items() if k == "sessionId"})
    _, answered = writes.remember_batch(AGENT, [question, _turn("ben", "Fish only", 2, **overrides)])
    assert answered.decision is Decision.DENY and answered.reasons == ["not_memorable"]


def test_given_a_retry_that_writes_only_what_a_failed_attempt_left_then_a_reply_is_judged_as_at_first(writes, store):
    """The turn a reply answers is read from the whole request, not from what is left to write."""
    batch = [_turn("ana", "Do you eat meat?", 1), _turn("ben", "Fish only", 2)]
    _, first = writes.remember_batch(AGENT, batch, idempotency_key="k-1")
    with store.database.transaction() as conn:  # as if the attempt had failed before the reply's commit
        conn.execute("DELETE FROM idempotency WHERE key = ?", (stored_idempotency_key(AGENT, "k-1\x1f1"),))
        delete_episode(conn, "acme", first.event_id)
    _, retried = writes.remember_batch(AGENT, batch, idempotency_key="k-1")
    assert retried.event_id != first.event_id  # written again, not replayed
    assert retried.decision is Decision.ALLOW and [s.why for s in retried.sentences] == ["answer"]
