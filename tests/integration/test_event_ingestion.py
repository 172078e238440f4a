"""EventBridge ingestion end to end: sample events through the SQS-triggered Lambda handler
into the real local backend (SQLite, MiniLM), judged by the same write policy as API writes.

The SQS batch in events/ingest/sqs_batch.json is what an EventBridge rule targeting an SQS
queue delivers: each record's body is the EventBridge event JSON.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from episodic.application.usecases.ingestion import EventIngestor, IngestMapping, load_mapping
from episodic.domain.errors import StorageError
from episodic.domain.model import Caller, Decision, Role, SourceTrust, Status, TimelineRequest
from episodic.entrypoints.server.proxy_event import LocalLambdaContext
from functions import events

SAMPLES = Path(__file__).parents[2] / "events" / "ingest"
ACME = Caller(tenant_id="acme", role=Role.OPERATOR, principal_id="operator:acme")
GLOBEX = Caller(tenant_id="globex", role=Role.OPERATOR, principal_id="operator:globex")


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / f"{name}.json").read_text())


def sqs_batch(*events_: dict[str, Any] | str) -> dict[str, Any]:
    """An SQS batch as EventBridge -> SQS delivers it, one record per event (message ids m-0, m-1...)."""
    return {
        "Records": [
            {
                "messageId": f"m-{i}",
                "receiptHandle": f"handle-{i}",
                "body": e if isinstance(e, str) else json.dumps(e),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:eu-west-1:111122223333:episodic-ingest",
                "awsRegion": "eu-west-1",
            }
            for i, e in enumerate(events_)
        ]
    }


def invoke(batch: dict[str, Any]) -> dict[str, Any]:
    return dict(events.handler(batch, LocalLambdaContext(aws_request_id="test-request")))


@pytest.fixture
def mapping() -> IngestMapping:
    return load_mapping(SAMPLES / "mapping.json")


@pytest.fixture
def wired(local_service, mapping):
    events.set_ingestor(EventIngestor(mapping, local_service))
    yield local_service
    events.set_ingestor(None)


def written(service, caller: Caller) -> list[Any]:
    """Every episode of the tenant, pending review included (the caller is an operator)."""
    return service.reads.timeline(caller, TimelineRequest(statuses=list(Status), limit=200)).items


def test_given_a_ticket_closed_event_when_delivered_then_it_is_an_active_episode_as_the_mapping_says(wired):
    assert invoke(sqs_batch(sample("ticket_closed"))) == {"batchItemFailures": []}

    [episode] = written(wired, ACME)
    assert episode.status is Status.ACTIVE
    assert (episode.tenant_id, episode.actor_id, episode.project_id) == ("acme", "customer-42", "customer-support")
    assert episode.summary == (
        "Support ticket HD-1042 closed: Invoice sent in the wrong language. Resolution: Switched the "
        "customer's invoice language to Portuguese and re-sent invoice INV-2026-118"
    )
    assert episode.source_refs == [
        "helpdesk:ticket/HD-1042",
        "eventbridge:acme.helpdesk/6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    ]
    assert episode.source_trust is SourceTrust.APPROVED_SOURCE
    assert episode.occurred_at == datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
    assert episode.retention.expires_at == datetime(2027, 11, 28, 10, 0, tzinfo=UTC)
    assert episode.tags == ["support", "ticket-closed"]
    [audit], _ = wired.admin.audit(ACME, event_id=episode.event_id, action="episode.written")
    assert audit.principal_id == "eventbridge:acme.helpdesk"


def test_given_a_batch_of_good_unknown_and_malformed_records_when_delivered_then_only_the_good_ones_are_written(
    wired,
):
    batch = json.loads((SAMPLES / "sqs_batch.json").read_text())
    batch["Records"].append(copy.deepcopy(batch["Records"][0]) | {"messageId": "not-json", "body": "{oops"})

    assert invoke(batch) == {"batchItemFailures": []}

    assert sorted(e.summary.split(":")[0] for e in written(wired, ACME)) == [
        "Incident INC-311 opened (SEV2) on billing-api",
        "Support ticket HD-1042 closed",
    ]
    assert [e.actor_id for e in written(wired, GLOBEX)] == ["shopper-1009"]  # the shop writes to its own tenant


def test_given_an_event_naming_another_tenant_when_delivered_then_no_tenant_gets_it(wired):
    assert invoke(sqs_batch(sample("tenant_override"))) == {"batchItemFailures": []}
    assert written(wired, ACME) == written(wired, GLOBEX) == []


def test_given_an_event_delivered_twice_when_redelivered_then_nothing_new_is_written(wired, mapping):
    event = sample("ticket_closed")
    invoke(sqs_batch(event))
    [first] = written(wired, ACME)

    assert invoke(sqs_batch(event, event)) == {"batchItemFailures": []}  # a new SQS message each time

    assert [e.event_id for e in written(wired, ACME)] == [first.event_id]
    assert len(wired.admin.audit(ACME, action="episode.written")[0]) == 1
    replay = EventIngestor(mapping, wired).ingest(event)
    assert (replay.status, replay.result.event_id) == ("written", first.event_id)


def test_given_an_event_id_seen_before_with_other_content_when_delivered_then_it_is_rejected_not_duplicated(wired):
    event = sample("ticket_closed")
    invoke(sqs_batch(event))
    event["detail"]["resolution"] = "Refunded the invoice instead"

    outcome = events.get_ingestor().ingest(event)

    assert (outcome.status, outcome.reason) == ("rejected", "already_ingested")
    assert len(written(wired, ACME)) == 1


def test_given_an_event_whose_summary_is_chatter_when_delivered_then_the_policy_denies_it_like_an_api_write(
    local_service,
):
    mapping = IngestMapping.model_validate(
        {
            "sources": [
                {
                    "source": "acme.helpdesk",
                    "tenantId": "acme",
                    "rules": [
                        {
                            "detailType": "TicketCommentAdded",
                            "eventType": "conversation_turn",
                            "actorId": "{detail.customerId}",
                            "summary": "{detail.body}",
                            "sourceRefs": ["helpdesk:ticket/{detail.ticketId}"],
                        }
                    ],
                }
            ]
        }
    )
    event = sample("ticket_closed") | {"detail-type": "TicketCommentAdded"}
    event["detail"] = {"ticketId": "HD-1042", "customerId": "customer-42", "body": "Thanks, sounds good!"}
    ingestor = EventIngestor(mapping, local_service)
    translation = mapping.translate(event)

    outcome = ingestor.ingest(event)

    api_write = local_service.writes.remember(
        Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent:acme"), translation.proposal
    )
    assert outcome.status == "denied"
    assert outcome.result.reasons == ["not_memorable"]
    # The same verdict through the API; there the mapping's workflow provenance is only a claim.
    assert api_write.decision is Decision.DENY and "not_memorable" in api_write.reasons
    assert written(local_service, ACME) == []
    denials, _ = local_service.admin.audit(ACME, action="episode.denied")
    assert {d.principal_id for d in denials} == {"eventbridge:acme.helpdesk", "agent:acme"}


def test_given_a_storage_failure_on_one_record_when_delivered_then_only_that_record_is_retried(wired, monkeypatch):
    apply_many = wired.deps.episodes.apply_many  # the write path's one commit call

    def globex_unavailable(change_sets):
        if any(changes.tenant_id == "globex" for changes in change_sets):
            raise StorageError("the store is unavailable")
        return apply_many(change_sets)

    monkeypatch.setattr(wired.deps.episodes, "apply_many", globex_unavailable)
    batch = sqs_batch(sample("ticket_closed"), sample("order_shipped"), sample("incident_opened"))

    assert invoke(batch) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    assert len(written(wired, ACME)) == 2

    monkeypatch.setattr(
        wired.deps.episodes, "apply_many", apply_many
    )  # the store recovers; SQS redelivers the failed record
    assert invoke(sqs_batch(sample("order_shipped"))) == {"batchItemFailures": []}
    assert [e.actor_id for e in written(wired, GLOBEX)] == ["shopper-1009"]


def test_given_writes_disabled_for_a_tenant_when_delivered_then_its_records_wait_for_a_retry(wired):
    wired.admin.set_writes(ACME, enabled=False, reason="maintenance")

    result = invoke(sqs_batch(sample("ticket_closed"), sample("order_shipped")))

    assert result == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(written(wired, GLOBEX)) == 1


def test_given_no_mapping_configured_when_the_ingestor_is_built_then_it_says_what_is_missing(monkeypatch):
    monkeypatch.delenv("EPISODIC_INGEST_MAPPING", raising=False)
    events.set_ingestor(None)
    with pytest.raises(RuntimeError, match="EPISODIC_INGEST_MAPPING"):
        events.get_ingestor()


def test_given_the_settings_in_the_environment_when_invoked_then_the_handler_builds_its_own_composition(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("EPISODIC_INGEST_MAPPING", str(SAMPLES / "mapping.json"))
    monkeypatch.setenv("EPISODIC_BACKEND", "local")
    monkeypatch.setenv("EPISODIC_DATA_DIR", str(tmp_path / "data"))
    events.set_ingestor(None)
    try:
        assert invoke(sqs_batch(sample("incident_opened"))) == {"batchItemFailures": []}
        with events.get_ingestor().service as built:  # its own root: not the API's service
            assert built.deps.settings.data_dir == tmp_path / "data"
            assert [e.actor_id for e in written(built, ACME)] == ["billing-api"]
    finally:
        events.set_ingestor(None)
