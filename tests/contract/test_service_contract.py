"""Service-level contract: the same scenarios must pass on every backend (see ``service``)."""

from datetime import timedelta

import pytest

from episodic.application.usecases.idempotency import stored_idempotency_key
from episodic.domain.errors import (
    ConflictError,
    ForbiddenError,
    IdempotencyConflictError,
    InvalidRequestError,
    NotFoundError,
    StorageError,
    WritesDisabledError,
)
from episodic.domain.forgetting.pseudonyms import unkeyed_actor_pseudonym
from episodic.domain.model import Decision, RecallRequest, Status, TimelineRequest
from episodic.domain.model.conversations import TurnsRequest
from tests.support.factories import AGENT, OPERATOR, OTHER_TENANT_AGENT, at, proposal


class RecordingEmbedder:
    """A spy around the real embedder: delegates every call and records the batch sizes."""

    def __init__(self, real):
        self.real, self.batches = real, []
        self.name, self.dimension = real.name, real.dimension

    def embed(self, texts):
        self.batches.append(len(texts))
        return self.real.embed(texts)


def test_given_the_same_idempotency_key_and_body_when_repeated_then_nothing_is_duplicated(service):
    first = service.writes.remember(AGENT, proposal(), idempotency_key="k-1")
    again = service.writes.remember(AGENT, proposal(), idempotency_key="k-1")
    assert again.event_id == first.event_id and again.decision is Decision.ALLOW
    assert len(service.reads.timeline(AGENT).items) == 1


def test_given_the_same_idempotency_key_and_another_body_when_repeated_then_it_conflicts(service):
    service.writes.remember(AGENT, proposal(), idempotency_key="k-2")
    with pytest.raises(IdempotencyConflictError):
        service.writes.remember(AGENT, proposal(summary="User prefers paper invoices by post"), idempotency_key="k-2")
    assert len(service.reads.timeline(AGENT).items) == 1


def test_given_idempotency_keys_when_used_by_two_tenants_then_they_do_not_collide(service):
    a = service.writes.remember(AGENT, proposal(), idempotency_key="shared")
    b = service.writes.remember(OTHER_TENANT_AGENT, proposal(), idempotency_key="shared")
    assert a.event_id != b.event_id


def test_given_one_key_when_used_by_two_principals_of_a_tenant_then_each_is_its_own(service):
    """Neither replays nor conflicts with the other's write: a conflict would tell one principal that
    another had used the key."""
    other = AGENT.model_copy(update={"principal_id": "agent:acme-2"})
    a = service.writes.remember(AGENT, proposal(), idempotency_key="shared")
    paper = proposal(summary="User prefers paper invoices by post")
    b = service.writes.remember(other, paper, idempotency_key="shared")
    assert a.event_id != b.event_id and b.decision is Decision.ALLOW
    assert service.writes.remember(AGENT, proposal(), idempotency_key="shared").event_id == a.event_id


def test_given_an_agent_using_the_key_of_a_sessions_handoff_when_the_session_closes_then_its_handoff_is_written(
    service,
):
    session = "s-squat"
    said = ["I moved to Porto last month and started at the port authority.",
            "My new manager is called Rita and she runs the night shifts."]  # fmt: skip
    turns = [
        {"turnId": f"{session}-t{n}", "speaker": "bob", "text": text, "occurredAt": at(n)}
        for n, text in enumerate(said, 1)
    ]
    squatter = AGENT.model_copy(update={"principal_id": "agent:squatter"})
    service.writes.remember(squatter, proposal(), idempotency_key=f"handoff:{session}:bob:{session}-t2")
    closed = service.conversations.add_turns(
        AGENT, session, TurnsRequest.model_validate({"turns": turns, "endSession": True})
    )
    assert closed.handoff is not None and closed.handoff.decision is Decision.ALLOW, closed.handoff


def test_given_a_denied_write_with_a_key_when_repeated_then_the_same_denial_is_replayed(service):
    first = service.writes.remember(
        AGENT, proposal(summary="thanks!", eventType="conversation_turn"), idempotency_key="d"
    )
    again = service.writes.remember(
        AGENT, proposal(summary="thanks!", eventType="conversation_turn"), idempotency_key="d"
    )
    assert first.decision is again.decision is Decision.DENY
    denied, _ = service.admin.audit(OPERATOR, action="episode.denied")
    assert len(denied) == 1


def test_given_a_batch_when_remembered_then_items_are_decided_independently_and_embedded_once(service):
    spy = RecordingEmbedder(service.deps.embedder)
    service = service.replacing(embedder=spy)
    results = service.writes.remember_batch(
        AGENT,
        [
            proposal(summary="User's timezone is Europe/Lisbon"),
            proposal(summary="hello!", eventType="conversation_turn"),
            proposal(summary="Forum post says the SDK supports Python 3.8", sourceTrust="untrusted_content"),
            proposal(summary="User's manager is Priya Raman"),
        ],
    )
    assert [r.decision for r in results] == [Decision.ALLOW, Decision.DENY, Decision.REVIEW, Decision.ALLOW]
    assert spy.batches == [3]
    assert len(service.reads.timeline(AGENT).items) == 2


def test_given_an_oversized_batch_when_remembered_then_it_is_refused_and_nothing_is_written(service):
    with pytest.raises(InvalidRequestError):
        service.writes.remember_batch(AGENT, [proposal()] * 101)
    assert service.reads.timeline(AGENT).items == []


def test_given_a_body_naming_another_tenant_when_remembered_then_it_is_forbidden(service):
    with pytest.raises(ForbiddenError):
        service.writes.remember(AGENT, proposal(tenantId="globex"))
    assert service.reads.timeline(AGENT).items == []


def test_given_another_tenants_id_when_read_then_it_is_not_found(service):
    theirs = service.writes.remember(OTHER_TENANT_AGENT, proposal())
    with pytest.raises(NotFoundError):
        service.reads.get(AGENT, theirs.event_id)
    with pytest.raises(NotFoundError):
        service.erasure.erase(AGENT, theirs.event_id)
    assert service.reads.get(OTHER_TENANT_AGENT, theirs.event_id).event_id == theirs.event_id


def test_given_the_kill_switch_when_on_then_writes_fail_and_recall_still_works(service):
    kept = service.writes.remember(AGENT, proposal())
    with pytest.raises(ForbiddenError):
        service.admin.set_writes(AGENT, enabled=False)
    service.admin.set_writes(OPERATOR, enabled=False, reason="incident 42")
    with pytest.raises(WritesDisabledError):
        service.writes.remember(AGENT, proposal(summary="User's favourite colour is green"))
    assert [
        i.episode.event_id
        for i in service.reads.recall(AGENT, RecallRequest(query="invoices", actor_id="user-1")).items
    ] == [kept.event_id]
    service.writes.remember(OTHER_TENANT_AGENT, proposal())  # other tenants are unaffected
    service.admin.set_writes(OPERATOR, enabled=True)
    assert (
        service.writes.remember(AGENT, proposal(summary="User's favourite colour is green")).decision is Decision.ALLOW
    )
    toggles, _ = service.admin.audit(OPERATOR, action="writes.disabled")
    assert toggles[0].detail["reason"] == "incident 42"


def test_given_a_pending_review_when_denied_then_the_episode_is_removed_and_audited(service):
    result = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    assert [v.review.review_id for v in service.reviews.list_reviews(OPERATOR)] == [result.review_id]
    view = service.reviews.decide_review(OPERATOR, result.review_id, approve=False, note="not verifiable")
    assert view.review.status == "denied" and view.episode is None
    with pytest.raises(NotFoundError):
        service.reads.get(AGENT, result.event_id)
    with pytest.raises(ConflictError):
        service.reviews.decide_review(OPERATOR, result.review_id, approve=True)
    records, _ = service.admin.audit(OPERATOR, event_id=result.event_id)
    assert [r.action for r in records] == ["episode.review_requested", "review.denied"]
    assert records[-1].detail["reviewer"] == OPERATOR.principal_id


def test_given_a_write_under_review_when_erased_then_its_review_is_denied_and_cannot_be_approved(service):
    held = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    service.erasure.erase(AGENT, held.event_id)
    assert service.reviews.list_reviews(OPERATOR) == []
    (view,) = service.reviews.list_reviews(OPERATOR, status=None)
    assert (view.review.status, view.review.reviewer, view.episode) == ("denied", "system:erasure", None)
    with pytest.raises(ConflictError):
        service.reviews.decide_review(OPERATOR, held.review_id, approve=True)
    records, _ = service.admin.audit(OPERATOR, event_id=held.event_id)
    assert [r.action for r in records] == ["episode.review_requested", "episode.erased", "review.denied"]
    assert records[-1].detail["reviewer"] == "system:erasure"


def test_given_a_decided_review_when_its_episode_is_erased_then_the_reviewers_note_goes(service):
    held = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content", actorId="gail"))
    service.reviews.decide_review(OPERATOR, held.review_id, approve=True, note="checked with Gail's manager")
    denied = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content", actorId="gail"))
    service.reviews.decide_review(OPERATOR, denied.review_id, approve=False, note="Gail pasted an ad")  # deleted now
    kept = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content", actorId="hal"))
    service.reviews.decide_review(OPERATOR, kept.review_id, approve=True, note="fine")
    service.erasure.erase_actor(OPERATOR, "gail")
    notes = {v.review.review_id: v.review.note for v in service.reviews.list_reviews(OPERATOR, status=None)}
    assert notes == {held.review_id: None, denied.review_id: None, kept.review_id: "fine"}
    assert service.deps.reviews.get_review("acme", held.review_id).status == "approved"


def test_given_an_actor_with_more_episodes_than_one_transaction_holds_when_erased_then_all_go(service):
    written = [
        service.writes.remember(AGENT, proposal(summary=f"Gail logged shipment {n} at dock four", actorId="gail"))
        for n in range(70)
    ]
    held = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content", actorId="gail"))
    result = service.erasure.erase_actor(OPERATOR, "gail")
    assert set(result.erased) == {w.event_id for w in written} | {held.event_id}
    assert service.deps.episodes.event_ids_of_actor("acme", "gail") == []
    tombstones, _ = service.admin.audit(OPERATOR, action="episode.erased", limit=200)
    assert len(tombstones) == 71
    assert service.deps.reviews.get_review("acme", held.review_id).status == "denied"


def test_given_an_agent_when_deciding_a_review_then_it_is_forbidden(service):
    result = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    with pytest.raises(ForbiddenError):
        service.reviews.decide_review(AGENT, result.review_id, approve=True)


def test_given_a_review_past_its_timeout_when_swept_then_it_defaults_to_deny(service, clock):
    result = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    clock.advance(days=6)
    assert service.sweeper.sweep().reviews_timed_out == 0
    clock.advance(days=2)
    assert service.sweeper.sweep().reviews_timed_out == 1
    assert service.deps.episodes.get("acme", result.event_id) is None
    records, _ = service.admin.audit(OPERATOR, event_id=result.event_id, action="review.expired")
    assert len(records) == 1


def test_given_an_approved_correction_under_review_when_approved_then_the_old_one_is_superseded(service):
    old = service.writes.remember(AGENT, proposal(summary="Release train leaves every Tuesday"))
    fix = service.writes.remember(
        AGENT,
        proposal(
            summary="Release train moved to Thursdays per a forum post",
            sourceTrust="untrusted_content",
            supersedesEventIds=[old.event_id],
        ),
    )
    assert service.reads.get(AGENT, old.event_id).status is Status.ACTIVE
    service.reviews.decide_review(OPERATOR, fix.review_id, approve=True)
    assert service.reads.get(AGENT, old.event_id).status is Status.SUPERSEDED


def test_given_a_supersede_of_an_unknown_episode_when_written_then_it_is_refused(service):
    with pytest.raises(InvalidRequestError):
        service.writes.remember(AGENT, proposal(supersedesEventIds=["01NOPE"]))
    assert service.reads.timeline(AGENT).items == []


def test_given_an_already_superseded_episode_when_corrected_again_then_it_conflicts(service):
    old = service.writes.remember(AGENT, proposal())
    service.writes.correct(AGENT, old.event_id, proposal(summary="User now prefers e-invoices via Peppol"))
    with pytest.raises(ConflictError):
        service.writes.correct(AGENT, old.event_id, proposal(summary="User prefers XML invoices"))


def test_given_an_actor_when_erased_then_episodes_archive_and_citing_summaries_are_gone(service, clock):
    a = service.writes.remember(AGENT, proposal(summary="Gail asked for a callback on Friday", actorId="gail"))
    b = service.writes.remember(
        AGENT, proposal(summary="Gail's contract renews in March", actorId="gail", retention={"expiresAt": at(30)})
    )
    summary = service.writes.remember(
        AGENT,
        proposal(
            eventType="session_summary",
            actorId="support-bot",
            summary="Gail requested a Friday callback; contract renewal due in March",
            sourceRefs=[f"episode:{a.event_id}"],
            sourceTrust="tool_result",
        ),
    )
    other = service.writes.remember(AGENT, proposal(summary="Hal prefers phone calls", actorId="hal"))
    clock.advance(days=2)
    service.sweeper.sweep()  # b expires into the archive
    assert service.deps.archive.contains("acme", b.event_id)
    with pytest.raises(ForbiddenError):
        service.erasure.erase_actor(AGENT, "gail")
    result = service.erasure.erase_actor(OPERATOR, "gail", reason="GDPR art. 17 request #77")
    assert set(result.erased) == {a.event_id, summary.event_id}
    assert result.cascaded == [summary.event_id]
    assert result.archived_records_deleted == 1
    assert not service.deps.archive.contains("acme", b.event_id)
    assert service.deps.episodes.get("acme", summary.event_id) is None
    assert service.reads.get(AGENT, other.event_id).actor_id == "hal"
    erased, _ = service.admin.audit(OPERATOR, action="actor.erased")
    assert "gail" not in erased[0].model_dump_json()


def test_given_an_audited_write_when_its_actor_is_guessed_then_the_audit_pseudonym_does_not_confirm_it(service):
    result = service.writes.remember(AGENT, proposal(actorId="gail"))
    (record,) = service.admin.audit(OPERATOR, event_id=result.event_id)[0]
    assert record.detail["actor"] != unkeyed_actor_pseudonym("acme", "gail")  # keyed under the store's key
    assert record.detail["actor"] == service.deps.pseudonyms.actor("acme", "gail")


def test_given_the_newest_episode_erased_when_another_is_written_then_recall_finds_it_by_meaning(service):
    """Locally the next write used to take the erased row's rowid, which the vector cache had
    already passed: the new episode could not be found by meaning until a restart."""
    service.writes.remember(AGENT, proposal(summary="Maria adopted a grey kitten named Pixel from the shelter"))
    newest = service.writes.remember(AGENT, proposal(summary="The quarterly budget review moved to Thursday afternoon"))
    assert service.reads.recall(AGENT, RecallRequest(query="feline pet", actor_id="user-1")).items  # vectors now cached
    service.erasure.erase(AGENT, newest.event_id)
    bike = service.writes.remember(AGENT, proposal(summary="Jonas bought a bright red bicycle for commuting"))
    found = service.reads.recall(AGENT, RecallRequest(query="two-wheeled vehicle purchase", actor_id="user-1")).items
    assert [i.episode.event_id for i in found][:1] == [bike.event_id]
    assert (
        found[0].components.lexical == pytest.approx(0.0) and found[0].components.semantic > 0.3
    )  # found by meaning alone


def test_given_an_erasure_then_the_embedder_keeps_nothing_it_embedded_for_that_tenant(service):
    """A widened recall's names are words of the tenant's memories, and a kept vector answers faster
    than one never seen: after an erasure the tenant's kept questions and names go, another's stay."""
    kept = service.deps.embedder._cache
    gone = service.writes.remember(AGENT, proposal(summary="Priya Raman from Kalomiten Foods asked for a refund"))
    service.writes.remember(AGENT, proposal(summary="Kalomiten Foods renewed its contract"))
    service.writes.remember(OTHER_TENANT_AGENT, proposal(summary="Kalomiten Foods renewed its contract"))
    question = "who asked about the contract renewal?"
    for caller in (AGENT, OTHER_TENANT_AGENT):
        service.reads.recall(caller, RecallRequest(query=question))
    assert kept.get("acme", question) is not None and kept.get("globex", question) is not None
    service.erasure.erase(AGENT, gone.event_id)
    assert kept.get("acme", question) is None
    assert not [key for key in kept._kept if key[0] == "acme"]
    assert kept.get("globex", question) is not None


def test_given_a_retained_episode_when_an_agent_erases_it_then_only_an_operator_may(service):
    held = service.writes.remember(AGENT, proposal(retention={"deleteOnRequest": False}))
    with pytest.raises(ForbiddenError):
        service.erasure.erase(AGENT, held.event_id)
    assert service.erasure.erase(OPERATOR, held.event_id).erased == [held.event_id]


def test_given_many_episodes_when_the_timeline_is_paged_then_every_item_comes_once_in_order(service):
    written = [
        service.writes.remember(AGENT, proposal(summary=f"Build {n} of the mobile app passed QA", occurredAt=at(1 + n)))
        for n in range(7)
    ]
    seen, cursor = [], None
    while True:
        page = service.reads.timeline(AGENT, TimelineRequest(limit=3, cursor=cursor, newest_first=False))
        seen += [e.event_id for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [w.event_id for w in written]


def test_given_a_pending_episode_when_an_agent_lists_pending_then_it_is_forbidden(service):
    with pytest.raises(ForbiddenError):
        service.reads.timeline(AGENT, TimelineRequest(statuses=[Status.PENDING_REVIEW]))
    pending = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    items = service.reads.timeline(OPERATOR, TimelineRequest(statuses=[Status.PENDING_REVIEW])).items
    assert [e.event_id for e in items] == [pending.event_id]


def test_given_feedback_when_recorded_then_scores_move_and_are_audited(service):
    result = service.writes.remember(AGENT, proposal())
    up = service.feedbacks.feedback(AGENT, result.event_id, helpful=True)
    down = service.feedbacks.feedback(AGENT, result.event_id, helpful=False, note="outdated")
    assert (
        up.feedback_score == pytest.approx(1.0)
        and down.feedback_score == pytest.approx(0.0)
        and down.feedback_count == 2
    )
    assert down.retention_score < up.retention_score
    assert service.reads.get(AGENT, result.event_id).feedback_count == 2
    records, _ = service.admin.audit(OPERATOR, event_id=result.event_id, action="feedback.recorded")
    assert len(records) == 2 and "outdated" not in records[1].model_dump_json()


def test_given_secrets_in_a_write_when_stored_then_no_read_path_returns_them(service):
    result = service.writes.remember(
        AGENT, proposal(summary="Customer card 5555 5555 5555 4444 was declined twice", eventType="incident_or_failure")
    )
    assert result.decision is Decision.ALLOW and "secrets_redacted" in result.reasons
    stored = service.reads.get(AGENT, result.event_id)
    assert "5555 5555" not in stored.summary and "[REDACTED:payment_card]" in stored.summary
    recalled = service.reads.recall(AGENT, RecallRequest(query="declined card", actor_id="user-1"))
    assert "5555" not in recalled.context
    records, _ = service.admin.audit(OPERATOR, event_id=result.event_id)
    assert records[0].detail["redactions"] == [{"field": "summary", "kind": "payment_card"}]


def test_given_an_idempotent_write_when_erased_then_replay_conflicts_and_no_text_is_kept(service):
    first = service.writes.remember(AGENT, proposal(summary="User's cat is called Biscuit"), idempotency_key="cat")
    service.erasure.erase(AGENT, first.event_id)
    record = service.deps.episodes.find_idempotency("acme", stored_idempotency_key(AGENT, "cat"))
    assert "Biscuit" not in str(record.result) and "cat" not in record.key
    with pytest.raises(ConflictError, match="erased"):
        service.writes.remember(AGENT, proposal(summary="User's cat is called Biscuit"), idempotency_key="cat")


def test_given_a_batch_written_with_a_key_when_one_item_is_erased_then_its_replay_conflicts_like_a_single_write(
    service,
):
    """A replay would answer allow with the id of an episode that is gone (and, through the
    conversation path, as "active"): it is a 409, as for a single write."""
    items = [proposal(summary="User's cat is called Biscuit"), proposal(summary="User's dog is called Pepper")]
    first = service.writes.remember_batch(AGENT, items, idempotency_key="pets")
    assert [r.decision for r in service.writes.remember_batch(AGENT, items, idempotency_key="pets")] == [
        r.decision for r in first
    ]  # replayed while both are there
    service.erasure.erase(AGENT, first[0].event_id)
    with pytest.raises(ConflictError, match="erased"):
        service.writes.remember_batch(AGENT, items, idempotency_key="pets")


def test_given_a_held_write_with_a_key_when_erased_or_denied_then_its_replay_conflicts(service):
    """A replay of a held write would answer 202 "pending_review" for a write that is gone."""
    held = proposal(sourceTrust="untrusted_content")
    first = service.writes.remember(AGENT, held, idempotency_key="held-1")
    assert service.writes.remember(AGENT, held, idempotency_key="held-1").review_id == first.review_id
    service.erasure.erase(AGENT, first.event_id)
    with pytest.raises(ConflictError, match="erased"):
        service.writes.remember(AGENT, held, idempotency_key="held-1")
    second = service.writes.remember(AGENT, held, idempotency_key="held-2")
    service.reviews.decide_review(OPERATOR, second.review_id, approve=False)
    with pytest.raises(ConflictError, match="denied at review"):
        service.writes.remember(AGENT, held, idempotency_key="held-2")


def test_given_private_episodes_when_an_agent_lists_the_tenant_timeline_then_only_actor_scoped_reads_show_them(
    service,
):
    private = service.writes.remember(
        AGENT, proposal(summary="Ina's salary band is L5", actorId="ina", privacyClass="private")
    )
    public = service.writes.remember(AGENT, proposal(summary="Ina joined the platform team", actorId="ina"))
    assert [e.event_id for e in service.reads.timeline(AGENT).items] == [public.event_id]
    assert {e.event_id for e in service.reads.timeline(AGENT, TimelineRequest(actor_id="ina")).items} == {
        private.event_id,
        public.event_id,
    }
    assert len(service.reads.timeline(OPERATOR).items) == 2


def test_given_a_batch_that_failed_midway_when_retried_with_its_key_then_only_missing_items_are_written(service):
    real_apply_many = service.deps.episodes.apply_many

    def lost_after_two(change_sets):  # fault injection around the real store: two sets commit, then it fails
        real_apply_many(change_sets[:2])
        raise StorageError("injected: connection lost")

    items = [proposal(summary=f"Customer {n} renewed the annual plan for 3 more seats") for n in range(4)]
    service.deps.episodes.apply_many = lost_after_two
    with pytest.raises(StorageError):
        service.writes.remember_batch(AGENT, items, idempotency_key="batch-1")
    service.deps.episodes.apply_many = real_apply_many
    assert len(service.reads.timeline(AGENT).items) == 2
    retried = service.writes.remember_batch(AGENT, items, idempotency_key="batch-1")
    assert [r.decision for r in retried] == [Decision.ALLOW] * 4
    assert {e.event_id for e in service.reads.timeline(AGENT).items} == {r.event_id for r in retried}
    assert len(service.reads.timeline(AGENT).items) == 4
    with pytest.raises(IdempotencyConflictError):
        service.writes.remember_batch(AGENT, items[:3], idempotency_key="batch-1")


def test_given_an_expired_archived_episode_when_an_operator_restores_it_then_it_is_recalled_again(service, clock):
    gone = service.writes.remember(
        AGENT, proposal(summary="Wi-Fi guest network is called acme-visitors", retention={"expiresAt": at(30)})
    )
    clock.advance(days=2)
    service.sweeper.sweep()
    assert service.deps.episodes.get("acme", gone.event_id) is None
    with pytest.raises(ForbiddenError):
        service.archival.restore(AGENT, gone.event_id)
    with pytest.raises(ConflictError, match="new expiresAt"):
        service.archival.restore(OPERATOR, gone.event_id)
    restored = service.archival.restore(OPERATOR, gone.event_id, expires_at=clock.now() + timedelta(days=90))
    assert restored.status is Status.ACTIVE and restored.summary.startswith("Wi-Fi guest network")
    assert not service.deps.archive.contains("acme", gone.event_id)
    found = service.reads.recall(AGENT, RecallRequest(query="guest wifi name", actor_id="user-1")).items
    assert [i.episode.event_id for i in found] == [gone.event_id]
    records, _ = service.admin.audit(OPERATOR, event_id=gone.event_id)
    assert [r.action for r in records] == ["episode.written", "episode.expired", "episode.restored"]
    with pytest.raises(NotFoundError):
        service.archival.restore(OPERATOR, "01UNKNOWN")


def test_given_a_decay_archived_episode_when_restored_with_a_new_expiry_then_it_is_back_with_it(service, clock):
    """Relevance decay leaves the episode in the timeline as ``archived``; a restore with a new
    expiry takes it out through its archive copy and back with the expiry, on every backend."""
    old = service.writes.remember(
        AGENT,
        proposal(summary="Printer on floor 3 was out of toner", importance=0.1,
                 occurredAt=(clock.now() - timedelta(days=60)).isoformat(),
                 retention={"expiresAt": (clock.now() + timedelta(days=40)).isoformat()}),
    )  # fmt: skip
    clock.advance(days=31)
    assert service.archival.forget().archived == [old.event_id]
    new_expiry = clock.now() + timedelta(days=365)
    restored = service.archival.restore(OPERATOR, old.event_id, expires_at=new_expiry)
    held = service.deps.episodes.get("acme", old.event_id)
    assert held.status is Status.ACTIVE and held.retention.expires_at == new_expiry == restored.retention.expires_at
    assert not service.deps.archive.contains("acme", old.event_id)
    found = service.reads.recall(AGENT, RecallRequest(query="printer toner", actor_id="user-1")).items
    assert [i.episode.event_id for i in found] == [old.event_id]
    records, _ = service.admin.audit(OPERATOR, event_id=old.event_id)
    assert [r.action for r in records] == ["episode.written", "episode.archived", "episode.restored"]


def test_given_a_summary_touching_more_than_100_items_when_written_then_it_commits_and_cascades(service):
    sources = [
        service.writes.remember(
            AGENT, proposal(summary=f"Nightly job {n} finished in {10 + n} minutes", actorId="ops-bot")
        )
        for n in range(20)
    ]
    refs = [f"episode:{s.event_id}" for s in sources] + [f"episode:01ARCHIVED{n:016d}" for n in range(30)]
    summary = service.writes.remember(
        AGENT,
        proposal(
            eventType="session_summary",
            actorId="ops-bot",
            summary="All twenty nightly jobs finished; the slowest took 29 minutes",
            sourceRefs=refs,
            sourceTrust="tool_result",
            tags=[f"job-{n}" for n in range(32)],
            supersedesEventIds=[s.event_id for s in sources],
        ),
    )
    assert summary.decision is Decision.ALLOW  # 1 + 32 tags + 50 citations + 20 supersedes (+ audits) > 100
    assert all(service.reads.get(AGENT, s.event_id).status is Status.SUPERSEDED for s in sources)
    by_tag = service.reads.timeline(AGENT, TimelineRequest(tags=["job-31"], actor_id="ops-bot"))
    assert [e.event_id for e in by_tag.items] == [summary.event_id]
    erased = service.erasure.erase(AGENT, sources[0].event_id)
    assert erased.cascaded == [summary.event_id]
    assert service.reads.timeline(AGENT, TimelineRequest(tags=["job-31"], actor_id="ops-bot")).items == []


class RenamedEmbedder:
    """The real model under a new identity, as after a model upgrade (delegates every call)."""

    def __init__(self, real, name):
        self.real, self.name, self.dimension = real, name, real.dimension

    def embed(self, texts):
        return self.real.embed(texts)


def test_given_a_new_embedder_when_recalling_then_old_vectors_are_not_mixed_until_reembedded(service):
    written = service.writes.remember(AGENT, proposal(summary="The customer wants a callback on Thursday afternoon"))
    service = service.replacing(embedder=RenamedEmbedder(service.deps.embedder, "upgraded-model"))
    before = service.reads.recall(
        AGENT, RecallRequest(query="phone the client back later this week", actor_id="user-1")
    )
    assert all(item.components.semantic == 0 for item in before.items)
    progress = []
    assert service.admin.reembed(batch_size=10, progress=progress.append) == 1 and progress == [1]
    assert service.deps.vectors.stale_vectors("upgraded-model", 10) == []
    after = service.reads.recall(AGENT, RecallRequest(query="phone the client back later this week", actor_id="user-1"))
    assert [i.episode.event_id for i in after.items] == [written.event_id]
    assert after.items[0].components.semantic > 0.3


def test_given_a_recalled_conversation_turn_when_it_has_neighbours_then_they_come_as_context(service):
    turns = [
        ("s-1", 10, "User asked whether the annual plan can be paid by bank transfer"),
        ("s-1", 11, "User confirmed they want the annual plan billed to the Lisbon entity"),
        ("s-1", 12, "User asked for the invoice to show their VAT number PT509999990"),
        ("s-2", 11, "User asked how to export the audit log to CSV for their compliance team"),
    ]
    ids = [
        service.writes.remember(
            AGENT,
            proposal(eventType="conversation_turn", sessionId=session, summary=text,
                     occurredAt=f"2026-11-28T09:{minute}:00Z"),
        ).event_id
        for session, minute, text in turns
    ]  # fmt: skip
    request = RecallRequest(query="which entity is the annual plan billed to", actor_id="user-1", limit=1)
    item = service.reads.recall(AGENT, request).items[0]
    assert item.episode.event_id == ids[1]
    assert [n.event_id for n in item.neighbours] == [ids[0], ids[2]]  # same session only, in order
    context = service.reads.recall(AGENT, request).context
    assert context.count("same_session_turn:") == 2 and "PT509999990" in context
    quiet = service.reads.recall(AGENT, request.model_copy(update={"neighbours": 0})).items[0]
    assert quiet.neighbours == []


def test_given_writes_and_recalls_when_the_operator_overview_is_asked_then_both_backends_count_alike(service):
    service.writes.remember(AGENT, proposal())
    service.writes.remember(AGENT, proposal(summary="ok thanks!", eventType="conversation_turn"))
    service.writes.remember(OTHER_TENANT_AGENT, proposal())
    service.reads.recall(AGENT, RecallRequest(query="invoices"))
    overview = service.overviews.overview(OPERATOR, days=3)
    assert {d.label: d.count for d in overview.decisions} == {"allowed": 1, "denied: not_memorable": 1}
    assert sum(r.count for r in overview.recalls) == 1
    assert overview.active_episodes == 1 == sum(b.count for b in overview.retention)
    with pytest.raises(ForbiddenError):
        service.overviews.overview(AGENT)


def test_given_a_recall_when_served_then_it_is_audited_and_each_served_episode_is_counted_once(service):
    from episodic.application.ports.governance import AuditQuery

    kept = service.writes.remember(AGENT, proposal(summary="Customer wants invoices as PDF from now on"))
    answer = service.reads.recall(AGENT, RecallRequest(query="invoices as PDF", actor_id="user-1"))
    assert [i.episode.event_id for i in answer.items] == [kept.event_id] and answer.degraded == []
    assert service.deps.episodes.get("acme", kept.event_id).access_count == 1
    served, _ = service.deps.audit_log.audit(AuditQuery(tenant_id="acme", action="recall.served"))
    assert [r.detail["eventIds"] for r in served] == [[kept.event_id]]


def test_given_a_recall_that_does_not_count_when_served_then_it_is_audited_and_nothing_is_counted(service):
    from episodic.application.ports.governance import AuditQuery

    kept = service.writes.remember(AGENT, proposal(summary="Customer wants invoices as PDF from now on"))
    looked = service.reads.recall(AGENT, RecallRequest(query="invoices as PDF", actor_id="user-1", count_access=False))
    assert [i.episode.event_id for i in looked.items] == [kept.event_id] and looked.degraded == []
    episode = service.deps.episodes.get("acme", kept.event_id)
    assert (episode.access_count, episode.last_accessed_at) == (0, None)
    served, _ = service.deps.audit_log.audit(AuditQuery(tenant_id="acme", action="recall.served"))
    assert [r.detail["eventIds"] for r in served] == [[kept.event_id]]
