"""The ingestion mapping on its own: templates, validation of the file, rejection reasons.

Pure: no service. What the mapping produces is a proposal and a caller; whether that
proposal is stored is the policy's business (tests/integration/test_event_ingestion.py).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from episodic.application.usecases.ingestion import (
    EventRejected,
    IngestMapping,
    MappingError,
    check_template,
    load_mapping,
    render,
)
from episodic.domain.model import EventType, PrivacyClass, ProposedBy, Role, SourceTrust

SAMPLES = Path(__file__).parents[2] / "events" / "ingest"


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def mapping() -> IngestMapping:
    return load_mapping(SAMPLES / "mapping.json")


def minimal_mapping(**rule: Any) -> dict[str, Any]:
    """A one-source, one-rule mapping in file form, with the rule's fields overridable."""
    base: dict[str, Any] = {
        "detailType": "TicketClosed",
        "eventType": "task_milestone",
        "actorId": "{detail.customerId}",
        "summary": "Ticket {detail.ticketId} closed",
        "sourceRefs": ["helpdesk:ticket/{detail.ticketId}"],
    }
    base.update(rule)
    return {"sources": [{"source": "acme.helpdesk", "tenantId": "acme", "rules": [base]}]}


def write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "mapping.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


# ---------------------------------------------------------------------------- templates

EVENT = {
    "id": "evt-1",
    "source": "acme.helpdesk",
    "account": "111122223333",
    "region": "eu-west-1",
    "time": "2026-11-28T10:00:00Z",
    "detail": {"ticketId": "HD-1", "count": 3, "customer": {"id": "customer-42"}, "tags": ["a"], "blank": ""},
}


def test_given_detail_and_envelope_placeholders_when_rendered_then_values_are_filled_in():
    rendered = render("{source}/{id} in {region}: {detail.ticketId} x{detail.count} for {detail.customer.id}", EVENT)
    assert rendered == "acme.helpdesk/evt-1 in eu-west-1: HD-1 x3 for customer-42"


def test_given_doubled_braces_when_rendered_then_they_are_literal_braces():
    assert render("{{detail.ticketId}} is {detail.ticketId}", EVENT) == "{detail.ticketId} is HD-1"


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{detail.missing}", "malformed:detail.missing"),
        ("{detail.customer.name}", "malformed:detail.customer.name"),
        ("{detail.blank}", "malformed:detail.blank"),
        ("{detail.tags}", "malformed:detail.tags"),
        ("{detail.customer}", "malformed:detail.customer"),
        ("{detail.ticketId.inner}", "malformed:detail.ticketId.inner"),
    ],
)
def test_given_a_missing_empty_or_structured_value_when_rendered_then_the_event_is_malformed(template, reason):
    with pytest.raises(EventRejected) as rejected:
        render(template, EVENT)
    assert rejected.value.reason == reason


def test_given_a_dunder_name_when_rendered_then_it_is_only_a_dictionary_key():
    check_template("{detail.__class__}")  # a legal key name...
    with pytest.raises(EventRejected) as rejected:  # ...looked up in the dict, never as an attribute
        render("{detail.__class__}", EVENT)
    assert rejected.value.reason == "malformed:detail.__class__"


@pytest.mark.parametrize(
    "template",
    [
        "{}",
        "{0}",
        "{detail}",
        "{detail[0]}",
        "{detail.ticketId!r}",
        "{detail.ticketId:>20}",
        "{context.tenantId}",
        "{detail.a b}",
        "unclosed {detail.ticketId",
    ],
)
def test_given_anything_but_a_plain_dictionary_path_when_the_template_is_checked_then_it_is_refused(template):
    with pytest.raises(ValueError):
        check_template(template)


# ---------------------------------------------------------------------------- the mapping file


def test_given_the_example_mapping_when_loaded_then_every_source_is_bound_to_its_tenant(mapping):
    bound = {s.source: (s.tenant_id, [r.detail_type for r in s.rules]) for s in mapping.sources}
    assert bound == {
        "acme.helpdesk": ("acme", ["TicketClosed", "TicketEscalated"]),
        "globex.shop": ("globex", ["OrderShipped", "RefundIssued"]),
        "acme.ops": ("acme", ["IncidentOpened", "IncidentResolved"]),
    }


def test_given_a_rule_without_optional_fields_when_loaded_then_the_defaults_apply(tmp_path):
    rule = load_mapping(write(tmp_path, minimal_mapping())).sources[0].rules[0]
    assert rule.source_trust is SourceTrust.APPROVED_SOURCE
    assert rule.privacy_class is PrivacyClass.INTERNAL
    assert rule.retention_days is None
    assert rule.required == []


@pytest.mark.parametrize(
    ("rule", "where", "what"),
    [
        ({"summary": "{detail.ticketId!r}"}, "sources.0.rules.0.summary", "conversion or format spec"),
        ({"sourceRefs": ["ok/{detail.x}", "{env.HOME}"]}, "sources.0.rules.0.sourceRefs", "placeholder {env.HOME}"),
        ({"sourceRefs": []}, "sources.0.rules.0.sourceRefs", "at least 1 item"),
        ({"eventType": "ticket_closed"}, "sources.0.rules.0.eventType", "Input should be"),
        ({"sourceTrust": "operator_entered"}, "sources.0.rules.0.sourceTrust", "cannot be claimed"),
        ({"privacyClass": "sensitive"}, "sources.0.rules.0.privacyClass", "consent"),
        ({"retentionDays": 0}, "sources.0.rules.0.retentionDays", "greater than or equal to 1"),
        ({"tags": ["has space"]}, "sources.0.rules.0.tags.0", "pattern"),
        ({"required": ["detail[0]"]}, "sources.0.rules.0.required.0", "pattern"),
        ({"tenantId": "globex"}, "sources.0.rules.0.tenantId", "Extra inputs are not permitted"),
    ],
)
def test_given_an_invalid_rule_when_loaded_then_the_error_names_the_file_the_place_and_the_problem(
    tmp_path, rule, where, what
):
    path = write(tmp_path, minimal_mapping(**rule))
    with pytest.raises(MappingError) as error:
        load_mapping(path)
    message = str(error.value)
    assert str(path) in message
    assert where in message
    assert what in message


def test_given_a_source_listed_twice_when_loaded_then_it_is_refused_as_ambiguous(tmp_path):
    content = minimal_mapping()
    content["sources"].append(copy.deepcopy(content["sources"][0]) | {"tenantId": "globex"})
    with pytest.raises(MappingError, match=r"source listed more than once in the mapping: acme\.helpdesk"):
        load_mapping(write(tmp_path, content))


def test_given_a_detail_type_listed_twice_when_loaded_then_it_is_refused(tmp_path):
    content = minimal_mapping()
    rules = content["sources"][0]["rules"]
    rules.append(copy.deepcopy(rules[0]))
    with pytest.raises(MappingError, match=r"detailType listed more than once in acme\.helpdesk: TicketClosed"):
        load_mapping(write(tmp_path, content))


def test_given_a_file_that_is_not_json_when_loaded_then_the_error_says_where(tmp_path):
    with pytest.raises(MappingError, match=r"not valid JSON \(line 2, column 1"):
        load_mapping(write(tmp_path, '{"sources": [\n'))


def test_given_a_missing_file_when_loaded_then_the_error_names_it(tmp_path):
    with pytest.raises(MappingError, match="cannot read the mapping file"):
        load_mapping(tmp_path / "absent.json")


# ---------------------------------------------------------------------------- translation


def test_given_a_ticket_closed_event_when_translated_then_the_proposal_follows_the_rule(mapping):
    translation = mapping.translate(sample("ticket_closed"))
    caller, proposal = translation.caller, translation.proposal
    assert (caller.tenant_id, caller.role, caller.principal_id) == ("acme", Role.AGENT, "eventbridge:acme.helpdesk")
    assert translation.idempotency_key == "eventbridge:6a7e8feb-b491-4cf7-a9f1-bf3703467718"
    assert proposal.event_type is EventType.TASK_MILESTONE
    assert proposal.actor_id == "customer-42"
    assert proposal.project_id == "customer-support"
    assert proposal.summary.startswith("Support ticket HD-1042 closed: Invoice sent in the wrong language.")
    assert proposal.source_refs == [
        "helpdesk:ticket/HD-1042",
        "eventbridge:acme.helpdesk/6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    ]
    assert proposal.occurred_at == datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
    assert proposal.retention.expires_at == datetime(2027, 11, 28, 10, 0, tzinfo=UTC)
    assert proposal.proposed_by is ProposedBy.WORKFLOW
    assert proposal.source_trust is SourceTrust.APPROVED_SOURCE
    assert proposal.tenant_id is None  # the tenant travels only in the caller


def test_given_the_same_event_twice_when_translated_then_the_proposals_are_identical(mapping):
    """Redelivery must replay, not conflict: the idempotency check compares the proposals."""
    first, second = mapping.translate(sample("ticket_closed")), mapping.translate(sample("ticket_closed"))
    assert first == second


def test_given_an_event_time_with_an_offset_when_translated_then_it_is_stored_in_utc(mapping):
    event = sample("ticket_closed") | {"time": "2026-11-28T11:00:00+01:00"}
    assert mapping.translate(event).proposal.occurred_at == datetime(2026, 11, 28, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("claimed", ["acme", None])
def test_given_a_detail_naming_the_configured_tenant_or_none_when_translated_then_it_is_accepted(mapping, claimed):
    event = sample("ticket_closed")
    event["detail"]["tenantId"] = claimed
    assert mapping.translate(event).caller.tenant_id == "acme"


def _envelope(field: str, value: Any) -> dict[str, Any]:
    """The ticket-closed sample with one envelope field replaced, or removed when ``value`` is None."""
    event = sample("ticket_closed")
    if value is None:
        del event[field]
    else:
        event[field] = value
    return event


def _detail(**changes: Any) -> dict[str, Any]:
    event = sample("ticket_closed")
    event["detail"].update(changes)
    return event


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (sample("unknown_source"), "unknown_source"),
        (sample("unknown_detail_type"), "unknown_detail_type"),
        (sample("malformed_missing_field"), "malformed:detail.customerId"),
        (sample("tenant_override"), "tenant_override"),
        (_detail(tenant_id="globex"), "tenant_override"),
        (["not", "an", "event"], "malformed:envelope"),
        (_envelope("id", None), "malformed:id"),
        (_envelope("id", "x" * 129), "malformed:id"),
        (_envelope("detail-type", None), "malformed:detail-type"),
        (_envelope("source", 7), "malformed:source"),
        (_envelope("detail", "{}"), "malformed:detail"),
        (_envelope("time", "2026-11-28T10:00:00"), "malformed:time"),
        (_envelope("time", "yesterday"), "malformed:time"),
        (_detail(resolution=""), "malformed:detail.resolution"),
        (_detail(customerId="customer 42"), "malformed:actorId"),
        (_detail(subject="x" * 4000), "malformed:summary"),
    ],
)
def test_given_an_event_that_cannot_become_an_episode_when_translated_then_the_reason_is_machine_readable(
    mapping, event, reason
):
    with pytest.raises(EventRejected) as rejected:
        mapping.translate(event)
    assert rejected.value.reason == reason


def test_given_an_event_already_past_its_retention_when_translated_then_the_policy_is_left_to_decide(mapping):
    """Expiry in the past is a governance decision (``already_expired``), audited by the service."""
    event = sample("order_shipped") | {"time": "2020-01-01T00:00:00Z"}
    assert mapping.translate(event).proposal.retention.expires_at == datetime(2020, 3, 31, tzinfo=UTC)
