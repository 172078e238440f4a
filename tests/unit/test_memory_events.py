"""Which audit records are memory events, and what an event says (episodic.domain.model.events)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.domain.model import AuditAction, AuditRecord, MemoryEventType, event_of

AT = datetime(2026, 11, 30, 9, tzinfo=UTC)


def record(action: AuditAction, **detail) -> AuditRecord:
    return AuditRecord(audit_id="01AUDIT", tenant_id="acme", at=AT, action=action, principal_id="agent:acme",
                       event_id="E1", reasons=["r"], policy_version="p1", detail=detail)  # fmt: skip


@pytest.mark.parametrize(
    ("action", "kind", "decision"),
    [
        (AuditAction.EPISODE_WRITTEN, MemoryEventType.EPISODE_WRITTEN, "allow"),
        (AuditAction.EPISODE_REVIEW_REQUESTED, MemoryEventType.EPISODE_REVIEW_REQUESTED, "review"),
        (AuditAction.REVIEW_APPROVED, MemoryEventType.REVIEW_DECIDED, "approved"),
        (AuditAction.REVIEW_EXPIRED, MemoryEventType.REVIEW_DECIDED, "expired"),
        (AuditAction.EPISODE_SUPERSEDED, MemoryEventType.EPISODE_SUPERSEDED, None),
        (AuditAction.EPISODE_EXPIRED, MemoryEventType.EPISODE_EXPIRED, None),
        (AuditAction.EPISODE_ARCHIVED, MemoryEventType.EPISODE_ARCHIVED, None),
        (AuditAction.WRITES_DISABLED, MemoryEventType.WRITES_SWITCHED, "disabled"),
    ],
)
def test_given_a_change_when_told_then_the_event_has_its_type_decision_ids_and_pseudonym(action, kind, decision):
    event = event_of(record(action, actor="a" * 32, supersededBy="E2"))
    assert (event.type, event.decision, event.id, event.episode_id, event.tenant_id) == (kind, decision, "01AUDIT",
                                                                                        "E1", "acme")  # fmt: skip
    assert event.actor == "a" * 32 and event.reasons == ["r"] and event.policy_version == "p1"


@pytest.mark.parametrize(
    "action",
    [AuditAction.EPISODE_DENIED, AuditAction.RECALL_SERVED, AuditAction.FEEDBACK_RECORDED, AuditAction.AUDIT_VERIFIED],
)
def test_given_no_change_to_memory_when_told_then_there_is_no_event(action):
    assert event_of(record(action)) is None


def test_given_an_erasure_when_told_then_it_names_nothing_but_the_id():
    event = event_of(record(AuditAction.EPISODE_ERASED, actor="a" * 32, contentHash="sha256:x"), "sam", "id")
    assert event.actor is None and event.episode_id == "E1"
    assert "sha256" not in event.model_dump_json() and "sam" not in event.model_dump_json()


def test_given_the_actor_setting_when_told_then_the_actor_is_its_id_its_pseudonym_or_nothing():
    written = record(AuditAction.EPISODE_WRITTEN, actor="a" * 32)
    assert event_of(written, "sam", "id").actor == "sam"
    assert event_of(written, None, "id").actor == "a" * 32  # the episode is gone: its pseudonym
    assert event_of(written, "sam", "pseudonym").actor == "a" * 32
    assert event_of(written, "sam", "none").actor is None


def test_given_a_webhook_without_a_secret_when_configured_then_it_is_refused():
    from pydantic import ValidationError

    from episodic.application.settings import Settings

    with pytest.raises(ValidationError, match="EPISODIC_EVENT_WEBHOOK_SECRET"):
        Settings.from_env({"EPISODIC_EVENT_WEBHOOK": "https://hooks.example/memory"})
    settings = Settings.from_env({"EPISODIC_EVENT_WEBHOOK": "https://hooks.example/memory",
                                  "EPISODIC_EVENT_WEBHOOK_SECRET": "s"})  # fmt: skip
    assert "s" not in repr(settings.event_webhook_secret)  # a secret is never printed
