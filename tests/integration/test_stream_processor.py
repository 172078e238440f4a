"""The stream processor against S3 and DynamoDB under moto, through the Lambda handler.

moto never applies TTL, so TTL removals come from the recorded events in events/streams/
(captured from moto's stream, then given the TTL service identity). A live round trip
checks that the recorded format is what the store really produces.
"""

import base64
import json
from pathlib import Path

import boto3
import pytest

from episodic.adapters.dynamodb import tables
from episodic.adapters.dynamodb.store import DynamoTimelineStore
from episodic.adapters.s3.archive import S3ColdArchive
from episodic.application.ports import AuditQuery
from episodic.bootstrap.aws import stream_processor as build_stream_processor
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from functions import stream
from tests.support.factories import AGENT, proposal

EVENTS = Path(__file__).parents[2] / "events" / "streams"


class _Context:
    function_name, memory_limit_in_mb, aws_request_id = "stream-test", 256, "req-1"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:stream-test"


@pytest.fixture
def wired(aws_resources):
    settings = aws_resources["settings"]
    store = DynamoTimelineStore(aws_resources["dynamodb"], settings.timeline_table, settings.audit_table)
    pseudonyms = Pseudonyms(store.pseudonym_key)
    archive = S3ColdArchive(aws_resources["s3"], settings.archive_bucket, pseudonyms, settings.archive_kms_key_id)
    stream.set_stream_processor(build_stream_processor(store.episodes, archive, pseudonyms))
    yield store, archive
    stream.set_stream_processor(None)


def _as_lambda_json(value):
    """Lambda receives stream records as JSON: epoch seconds and base64 binaries."""
    return base64.b64encode(value).decode() if isinstance(value, bytes) else int(value.timestamp())


def load(name):
    return json.loads((EVENTS / name).read_text())


def test_given_a_ttl_removal_when_handled_then_s3_holds_the_record_and_the_audit_says_why(wired):
    store, archive = wired
    response = stream.handler(load("ttl_remove.json"), _Context())
    assert response == {"batchItemFailures": []}
    record = archive.get("acme", "01KAZ3Q7J9X2B8M4T6V0W1Y3C5")
    assert record["reason"] == "retention_expired"
    assert record["episode"]["summary"] == "Customer wants invoices as PDF, in Portuguese"
    audit, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="episode.expired"))
    assert len(audit) == 1 and audit[0].detail["archiveKey"]
    assert audit[0].principal_id == "system:dynamodb-ttl"
    # The audit log is append-only and outlives an actor's erasure: it must not name the actor.
    assert audit[0].detail["archiveKey"].startswith(f"archive/acme/{archive.pseudonyms.actor('acme', 'customer-42')}/")
    assert "customer-42" not in audit[0].model_dump_json()
    stream.handler(load("ttl_remove.json"), _Context())  # redelivery
    assert len(store.audit_log.audit(AuditQuery(tenant_id="acme", action="episode.expired"))[0]) == 1


def test_given_a_ttl_removal_of_a_digest_when_handled_then_it_is_audited_but_not_archived(wired):
    store, archive = wired
    event = load("ttl_remove.json")
    episode = event["Records"][0]["dynamodb"]["OldImage"]["ep"]["M"]
    episode["eventType"] = {"S": "session_summary"}
    episode["sourceRefs"] = {"L": [{"S": "episode:01KAZ3R2M5N8P1Q4S7T0V3W6X9"}]}

    assert stream.handler(event, _Context()) == {"batchItemFailures": []}

    assert archive.get("acme", episode["eventId"]["S"]) is None
    audit, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="episode.expired"))
    assert len(audit) == 1 and audit[0].detail["archived"] is False and "archiveKey" not in audit[0].detail


def test_given_a_ttl_removal_of_a_write_awaiting_review_when_handled_then_it_is_audited_but_not_archived(wired):
    """Never admitted to memory: an archive copy would be a way back no reviewer approved."""
    store, archive = wired
    event = load("ttl_remove.json")
    old_image = event["Records"][0]["dynamodb"]["OldImage"]
    old_image["ep"]["M"]["status"] = {"S": "pending_review"}
    old_image["st"] = {"S": "pending_review"}

    assert stream.handler(event, _Context()) == {"batchItemFailures": []}

    assert archive.get("acme", old_image["ep"]["M"]["eventId"]["S"]) is None
    audit, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="episode.expired"))
    assert len(audit) == 1 and audit[0].detail["archived"] is False


def test_given_a_batch_with_a_poison_record_when_handled_then_only_it_is_reported(wired):
    _, archive = wired
    batch = load("mixed_batch.json")
    response = stream.handler(batch, _Context())
    poison = batch["Records"][1]["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": poison}]}
    assert archive.contains("acme", "01KAZ3Q7J9X2B8M4T6V0W1Y3C5")  # the TTL record after it was processed


def test_given_a_user_erasure_when_handled_then_nothing_is_archived(wired):
    _, archive = wired
    assert stream.handler(load("user_remove.json"), _Context()) == {"batchItemFailures": []}
    assert not archive.contains("acme", "01KAZ3Q7J9X2B8M4T6V0W1Y3C5")


def test_given_live_writes_when_their_stream_records_are_handled_then_the_recorded_format_matches(
    aws_resources, minilm, clock, wired
):
    from episodic.bootstrap.aws import build_aws_service

    service = build_aws_service(
        aws_resources["settings"],
        dynamodb=aws_resources["dynamodb"],
        s3=aws_resources["s3"],
        embedder=minilm,
        clock=clock,
    )
    service.writes.remember(AGENT, proposal(summary="Customer asked for quarterly invoices from January"))
    table = aws_resources["dynamodb"].describe_table(TableName=aws_resources["settings"].timeline_table)["Table"]
    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=table["LatestStreamArn"])["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=table["LatestStreamArn"], ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    live = streams.get_records(ShardIterator=iterator)["Records"]
    recorded_insert = load("insert.json")["Records"][0]
    live_insert = next(r for r in live if r["dynamodb"]["Keys"]["sk"]["S"] == tables.EPISODE_SK)
    by_project, by_expiry = tables.BY_PROJECT, tables.BY_EXPIRY  # project and expiry are per episode
    optional = {by_project.pk, by_project.sk, by_expiry.pk, by_expiry.sk, "ttl"}
    assert (
        set(live_insert["dynamodb"]["NewImage"]) - optional == set(recorded_insert["dynamodb"]["NewImage"]) - optional
    )
    live_insert = json.loads(json.dumps(live_insert, default=_as_lambda_json))
    live_insert["eventSourceARN"] = recorded_insert["eventSourceARN"]
    assert stream.handler({"Records": [live_insert]}, _Context()) == {"batchItemFailures": []}
