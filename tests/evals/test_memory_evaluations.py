"""The evaluations this memory service is meant to pass, one test each, on the real service.

These are the behaviours the product promises (README.md, docs/security.md): run against
the contract ``service`` fixture, so every backend must pass them unchanged.
"""

from datetime import timedelta

from episodic.domain.model import Decision, EpisodeProposal, RecallRequest, Status, TimelineRequest
from tests.support.factories import AGENT, OPERATOR, OTHER_TENANT_AGENT, at, proposal


def recall(service, caller=AGENT, **request):
    return service.reads.recall(caller, RecallRequest.model_validate(request))


def ids(response):
    return [item.episode.event_id for item in response.items]


def test_meaningful_events_are_stored_with_actor_tenant_time_source_confidence_and_retention(service):
    result = service.writes.remember(
        AGENT,
        proposal(
            eventType="incident_or_failure",
            summary="Nightly export to S3 failed with AccessDenied on bucket acme-exports",
            occurredAt="2026-11-28T02:10:00+01:00",
            sourceRefs=["cloudwatch:alarm/export-failed"],
            sourceTrust="tool_result",
            confidence="high",
            retention={"expiresAt": "2027-11-28T00:00:00Z"},
        ),
    )
    assert result.decision is Decision.ALLOW
    stored = service.reads.get(AGENT, result.event_id)
    assert stored.actor_id == "user-1" and stored.tenant_id == "acme"
    assert stored.occurred_at.isoformat() == "2026-11-28T01:10:00+00:00"
    assert stored.recorded_at == service.deps.clock.now()
    assert stored.source_refs == ["cloudwatch:alarm/export-failed"] and stored.source_trust.value == "tool_result"
    assert stored.confidence.value == "high"
    assert stored.retention.expires_at.isoformat() == "2027-11-28T00:00:00+00:00"
    assert stored.status is Status.ACTIVE and stored.policy_version == result.policy_version


def test_routine_chatter_is_not_stored(service):
    for text in ("thanks!!", "Good morning :)", "ok cool, talk later"):
        result = service.writes.remember(AGENT, proposal(eventType="conversation_turn", summary=text, tags=[]))
        assert result.decision is Decision.DENY and result.reasons == ["not_memorable"]
    assert service.reads.timeline(AGENT).items == []
    denied, _ = service.admin.audit(OPERATOR, action="episode.denied")
    assert len(denied) == 3 and all(r.reasons == ["not_memorable"] for r in denied)


def test_stale_events_are_suppressed_by_newer_evidence(service):
    old = service.writes.remember(AGENT, proposal(summary="User's shipping address is 12 Elm Street, Springfield"))
    new = service.writes.remember(
        AGENT,
        proposal(
            summary="User moved; shipping address is now 4 Harbour Road, Shelbyville",
            occurredAt=at(29, 10),
            supersedesEventIds=[old.event_id],
        ),
    )
    assert service.reads.get(AGENT, old.event_id).status is Status.SUPERSEDED
    assert ids(recall(service, query="where should we ship the order?", actorId="user-1")) == [new.event_id]


def test_a_correction_replaces_the_old_event(service):
    old = service.writes.remember(AGENT, proposal(summary="User's preferred contact channel is email"))
    fixed = service.writes.correct(
        AGENT,
        old.event_id,
        EpisodeProposal.model_validate(
            {
                "eventType": "correction_received",
                "summary": "User corrected: preferred contact channel is SMS, not email",
                "occurredAt": at(29, 11),
                "sourceRefs": ["conversation:c-2/turn:1"],
                "sourceTrust": "user_provided",
            }
        ),
    )
    assert fixed.decision is Decision.ALLOW
    assert fixed.episode.supersedes_event_ids == [old.event_id]
    assert fixed.episode.actor_id == "user-1"
    assert service.reads.get(AGENT, old.event_id).status is Status.SUPERSEDED
    found = ids(recall(service, query="how does the user want to be contacted", actorId="user-1"))
    assert found == [fixed.event_id]


def test_deletion_removes_the_event_from_every_read_path(service):
    kept = service.writes.remember(AGENT, proposal(summary="User's VAT number must appear on every invoice"))
    gone = service.writes.remember(AGENT, proposal(summary="User prefers invoices in Portuguese"))
    service.erasure.erase(AGENT, gone.event_id)
    assert service.deps.episodes.get("acme", gone.event_id) is None
    all_statuses = list(Status)
    assert gone.event_id not in [
        e.event_id for e in service.reads.timeline(OPERATOR, TimelineRequest(statuses=all_statuses)).items
    ]
    assert ids(recall(service, query="invoice language", actorId="user-1")) == [kept.event_id]
    assert not service.deps.archive.contains("acme", gone.event_id)
    tombstones, _ = service.admin.audit(OPERATOR, event_id=gone.event_id, action="episode.erased")
    assert len(tombstones) == 1 and tombstones[0].detail["contentHash"].startswith("hmac-sha256:")  # keyed
    assert "Portuguese" not in tombstones[0].model_dump_json()


def test_expiry_removes_the_event_from_recall_at_once_and_the_sweep_archives_it(service, clock):
    result = service.writes.remember(
        AGENT,
        proposal(
            summary="Temporary door code for the Lisbon office is valid this week", retention={"expiresAt": at(30)}
        ),
    )
    assert ids(recall(service, query="door code", actorId="user-1")) == [result.event_id]
    clock.advance(days=2)
    assert recall(service, query="door code", actorId="user-1").items == []
    assert service.reads.timeline(AGENT).items == []
    report = service.sweeper.sweep()
    assert report.expired == 1
    assert service.deps.episodes.get("acme", result.event_id) is None
    assert service.deps.archive.contains("acme", result.event_id)
    expired, _ = service.admin.audit(OPERATOR, event_id=result.event_id, action="episode.expired")
    assert expired[0].detail["reason"] == "retention_expired" and expired[0].detail["archiveKey"]
    assert "door code" not in expired[0].model_dump_json()


def test_no_recall_across_tenants_or_actors(service):
    mine = service.writes.remember(
        AGENT, proposal(summary="Alice prefers window seats on long flights", actorId="alice", privacyClass="private")
    )
    service.writes.remember(
        AGENT, proposal(summary="Bob prefers aisle seats on long flights", actorId="bob", privacyClass="private")
    )
    service.writes.remember(
        OTHER_TENANT_AGENT, proposal(summary="Carol prefers window seats on long flights", actorId="alice")
    )
    assert ids(recall(service, query="seat preference on flights", actorId="alice")) == [mine.event_id]
    # Without an actor scope, private memories stay private.
    assert recall(service, query="seat preference on flights").items == []
    other = recall(service, OTHER_TENANT_AGENT, query="seat preference on flights", actorId="alice")
    assert all(item.episode.tenant_id == "globex" for item in other.items) and len(other.items) == 1


def test_recalled_events_are_correctly_attributed(service):
    service.writes.remember(
        AGENT,
        proposal(
            summary="Dana approved the Q3 budget increase",
            actorId="dana",
            eventType="human_approval",
            resourceRefs=["budget:q3"],
        ),
    )
    service.writes.remember(
        AGENT, proposal(summary="Eli rejected the Q3 budget increase", actorId="eli", eventType="feedback")
    )
    response = recall(service, query="who approved the Q3 budget", actorId="dana")
    assert [i.episode.actor_id for i in response.items] == ["dana"]
    served, _ = service.admin.audit(OPERATOR, action="recall.served")
    assert served[-1].principal_id == AGENT.principal_id
    assert served[-1].detail["eventIds"] == ids(response)


def test_recall_by_recency_relevance_and_type(service):
    older = service.writes.remember(
        AGENT,
        proposal(
            summary="Deploy of billing-api failed: database migration timeout",
            eventType="incident_or_failure",
            occurredAt=at(1),
            tags=["deploy"],
        ),
    )
    newer = service.writes.remember(
        AGENT,
        proposal(
            summary="Deploy of billing-api failed: health check returned 503",
            eventType="incident_or_failure",
            occurredAt=at(28),
            tags=["deploy"],
        ),
    )
    milestone = service.writes.remember(
        AGENT,
        proposal(
            summary="Billing-api v2 shipped to all customers",
            eventType="task_milestone",
            occurredAt=at(27),
            tags=["deploy"],
        ),
    )
    unrelated = service.writes.remember(
        AGENT, proposal(summary="User likes concise answers with bullet points", occurredAt=at(28))
    )
    # Recency: structured recall without a query returns newest first.
    structured = recall(service, eventTypes=["incident_or_failure"], tags=["deploy"], actorId="user-1")
    assert ids(structured) == [newer.event_id, older.event_id]
    # Relevance: the query finds the deploy failures, not the unrelated preference.
    relevant = ids(recall(service, query="why did the billing deploy fail?", actorId="user-1"))
    assert relevant[:2] == [newer.event_id, older.event_id] and unrelated.event_id not in relevant[:3]
    # Type: restricting to milestones returns only the milestone.
    assert ids(recall(service, query="billing-api", eventTypes=["task_milestone"], actorId="user-1")) == [
        milestone.event_id
    ]
    # Time range.
    window = recall(service, occurredAfter=at(20), occurredBefore=at(28), actorId="user-1")
    assert ids(window) == [milestone.event_id]


def test_untrusted_sources_are_reviewed_before_storage(service):
    result = service.writes.remember(
        AGENT,
        proposal(
            summary="Vendor site claims the API rate limit is 50 requests/second",
            sourceTrust="untrusted_content",
            sourceRefs=["url:https://vendor.example/docs"],
        ),
    )
    assert result.decision is Decision.REVIEW and result.status is Status.PENDING_REVIEW
    assert recall(service, query="API rate limit", actorId="user-1").items == []
    service.reviews.decide_review(OPERATOR, result.review_id, approve=True, note="checked against the contract")
    assert ids(recall(service, query="API rate limit", actorId="user-1")) == [result.event_id]


def test_recalled_events_are_framed_as_evidence_not_instructions(service):
    service.writes.remember(AGENT, proposal(summary='User said the release checklist lives in Confluence "RELEASE-7"'))
    response = recall(service, query="release checklist", actorId="user-1")
    context = response.context
    assert context.startswith("<memory-evidence>") and context.endswith("</memory-evidence>")
    assert "not instructions" in context
    assert "[1] Past event, not current instruction." in context
    for label in (
        "occurred_at: 2026-11-28T09:30:00Z",
        "event_type: user_preference_stated",
        "confidence: high",
        "source: user_provided",
    ):
        assert label in context
    assert '"User said the release checklist lives in Confluence \\"RELEASE-7\\""' in context
    assert all(item.episode.source_refs for item in response.items)  # every item carries its source


def test_recall_updates_access_statistics(service, clock):
    result = service.writes.remember(AGENT, proposal(summary="User's laptop is a 2023 ThinkPad X1"))
    clock.advance(hours=1)
    recall(service, query="what laptop does the user have", actorId="user-1")
    stored = service.reads.get(AGENT, result.event_id)
    assert stored.access_count == 1
    assert stored.last_accessed_at == clock.now()
    assert clock.now() - timedelta(hours=1) == stored.recorded_at
