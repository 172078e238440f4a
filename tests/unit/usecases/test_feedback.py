"""Feedback (episodic.application.usecases.feedback): a running mean in [-1, 1] per episode, which moves the
retention score; audited with a hash of the note, never the note."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.application.ports import AuditQuery
from episodic.application.settings import Settings
from episodic.application.usecases.feedback import Feedback
from episodic.domain.errors import NotFoundError
from episodic.domain.forgetting.retention import retention_score
from tests.support.factories import AGENT, OTHER_TENANT_AGENT, proposal


@pytest.fixture
def feedback(deps) -> Feedback:
    return Feedback(deps)


def test_given_three_votes_when_recorded_then_the_score_is_their_running_mean_rounded(writes, feedback, store):
    event_id = writes.remember(AGENT, proposal()).event_id
    scores = [feedback.feedback(AGENT, event_id, helpful=h).feedback_score for h in (True, True, False)]
    assert scores == pytest.approx([1.0, 1.0, 0.333333])
    stored = store.episodes.get("acme", event_id)
    assert stored.feedback_score == pytest.approx(0.333333) and stored.feedback_count == 3


def test_given_feedback_when_recorded_then_the_stored_retention_score_is_recomputed_with_the_tag_weights(
    writes, feedback, deps, store, clock
):
    event_id = writes.remember(AGENT, proposal(tags=["billing"])).event_id
    deps.settings = Settings(tag_weights={"billing": 0.0})
    clock.advance(days=10)
    updated = feedback.feedback(AGENT, event_id, helpful=False)
    stored = store.episodes.get("acme", event_id)
    assert stored.retention_score == updated.retention_score == retention_score(stored, clock.now(), {"billing": 0.0})
    assert updated.retention_score < retention_score(stored, clock.now())  # the weight counted, not importance


def test_given_feedback_with_and_without_a_note_when_audited_then_only_a_hash_of_the_note_is_kept(
    writes, feedback, store, deps
):
    event_id = writes.remember(AGENT, proposal()).event_id
    feedback.feedback(AGENT, event_id, helpful=False, note="outdated: moved to XML")
    feedback.feedback(AGENT, event_id, helpful=True)
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", event_id=event_id, action="feedback.recorded"))
    assert [r.detail for r in records] == [
        {"helpful": False, "noteHash": deps.pseudonyms.text("outdated: moved to XML")},
        {"helpful": True},
    ]


def test_given_feedback_when_recorded_then_nothing_else_about_the_episode_changes(writes, feedback, store):
    before = writes.remember(AGENT, proposal()).episode
    feedback.feedback(AGENT, before.event_id, helpful=True)
    after = store.episodes.get("acme", before.event_id)
    unchanged = {"feedback_score", "feedback_count", "retention_score"}
    assert after.model_dump(exclude=unchanged) == before.model_dump(exclude=unchanged)


def test_given_another_tenants_or_an_expired_episode_when_given_feedback_then_it_is_not_found(
    writes, feedback, store, clock
):
    theirs = writes.remember(OTHER_TENANT_AGENT, proposal()).event_id
    with pytest.raises(NotFoundError):
        feedback.feedback(AGENT, theirs, helpful=False)
    short = writes.remember(AGENT, proposal(retention={"expiresAt": (clock.now() + timedelta(hours=1)).isoformat()}))
    clock.advance(hours=2)
    with pytest.raises(NotFoundError):
        feedback.feedback(AGENT, short.event_id, helpful=True)
    assert store.episodes.get("globex", theirs).feedback_count == 0
    assert store.episodes.get("acme", short.event_id).feedback_count == 0
