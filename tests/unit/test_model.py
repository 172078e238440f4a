from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from episodic.domain.model import Episode, EpisodeProposal, RecallRequest, Status
from tests.support.factories import proposal, proposal_dict


def test_given_a_naive_occurred_at_when_validated_then_it_is_rejected_with_a_timezone_message():
    with pytest.raises(ValidationError) as info:
        EpisodeProposal.model_validate(proposal_dict(occurredAt="2026-11-28T09:30:00"))
    assert "timezone" in str(info.value).lower()


def test_given_an_offset_datetime_when_validated_then_it_is_stored_in_utc():
    p = proposal(occurredAt="2026-11-28T11:30:00+02:00")
    assert p.occurred_at == datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
    assert p.occurred_at.utcoffset() == timedelta(0)


def test_given_an_unknown_event_type_when_validated_then_it_is_rejected():
    with pytest.raises(ValidationError, match="eventType"):
        EpisodeProposal.model_validate(proposal_dict(eventType="daydream"))


def test_given_an_unknown_field_when_validated_then_it_is_rejected():
    with pytest.raises(ValidationError, match="extra"):
        EpisodeProposal.model_validate(proposal_dict(mood="happy"))


def test_given_importance_outside_0_1_when_validated_then_it_is_rejected():
    with pytest.raises(ValidationError):
        proposal(importance=1.5)


def test_given_mixed_case_duplicate_tags_when_validated_then_they_are_lowercased_once():
    assert proposal(tags=["Billing", "billing", "VIP"]).tags == ["billing", "vip"]


def test_given_every_field_when_round_tripped_then_camel_case_json_is_preserved():
    now = datetime(2026, 11, 29, tzinfo=UTC)
    ep = Episode.model_validate(
        {
            **proposal_dict(
                projectId="proj-1",
                agentId="agent-7",
                sessionId="s-9",
                resourceRefs=["ticket:T-1"],
                details={"input": {"q": "refund?"}, "output": {"ok": True}},
                decisions=[{"action": "refund", "confidence": 0.8}],
                outcome="refunded",
                success=True,
                durationMs=1200,
                proposedBy="workflow",
                privacyClass="private",
                retention={"expiresAt": "2027-01-01T00:00:00Z", "deleteOnRequest": False},
                consent={"required": True, "granted": True, "consentRef": "consent:42"},
                supersedesEventIds=["01ABC"],
                correctionPath="user corrected amount",
            ),
            "eventId": "01JX",
            "tenantId": "acme",
            "recordedAt": now,
            "policyVersion": "v",
            "status": "active",
            "retentionScore": 7.5,
        }
    )
    wire = ep.to_json_dict()
    assert wire["retention"]["expiresAt"] == "2027-01-01T00:00:00Z"
    assert wire["consent"]["consentRef"] == "consent:42"
    assert wire["decisions"][0] == {"action": "refund", "confidence": pytest.approx(0.8), "rationale": None}
    assert Episode.model_validate(wire) == ep


def test_given_a_stored_episode_when_its_search_text_is_built_then_details_and_tags_are_included():
    ep = Episode.model_validate(
        {
            **proposal_dict(details={"input": {"query": "VAT number"}}, outcome="sent"),
            "eventId": "01JX",
            "tenantId": "acme",
            "recordedAt": datetime(2026, 11, 29, tzinfo=UTC),
            "policyVersion": "v",
        }
    )
    text = ep.search_text()
    assert "VAT number" in text and "billing" in text and "sent" in text


def test_given_recall_asking_for_pending_review_when_validated_then_it_is_refused():
    with pytest.raises(ValidationError, match="never recallable"):
        RecallRequest.model_validate({"statuses": [Status.PENDING_REVIEW.value]})


def test_given_a_non_utc_timezone_when_expiry_is_compared_then_it_uses_the_instant():
    ep = Episode.model_validate(
        {
            **proposal_dict(retention={"expiresAt": "2026-11-29T13:00:00+02:00"}),
            "eventId": "01JX",
            "tenantId": "acme",
            "recordedAt": datetime(2026, 11, 29, tzinfo=UTC),
            "policyVersion": "v",
        }
    )
    eleven_utc = datetime(2026, 11, 29, 11, 0, tzinfo=UTC)
    assert ep.is_expired(eleven_utc)
    assert not ep.is_expired(datetime(2026, 11, 29, 10, 59, tzinfo=UTC))
