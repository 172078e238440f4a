"""Regenerate the recorded DynamoDB stream events in this folder.

The records are captured from moto's DynamoDB Streams after real writes through
``DynamoTimelineStore`` (so their images have exactly the store's item format), then wrapped
as Lambda receives them. moto never applies TTL, so ``ttl_remove.json`` is the erasure
REMOVE record re-labelled with the identity DynamoDB's TTL service uses
(``userIdentity = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}``), as
documented for TTL deletes. Run: ``.venv/bin/python events/streams/regenerate.py``.
"""

from __future__ import annotations

import copy
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import boto3
from moto import mock_aws

from episodic.adapters.dynamodb.store import DynamoTimelineStore
from episodic.adapters.dynamodb.tables import create_tables
from episodic.application.ports import Changes, NewEpisode, StatusChange
from episodic.domain.model import Episode, Status

HERE = Path(__file__).parent
ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/episodic-timeline/stream/2026-11-29T00:00:00.000"


def main() -> None:
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled",
    )
    with mock_aws():
        client = boto3.client("dynamodb")
        create_tables(client, "episodic-timeline", "episodic-audit")
        store = DynamoTimelineStore(client, "episodic-timeline", "episodic-audit")
        now = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
        episode = Episode.model_validate(
            {
                "eventId": "01KAZ3Q7J9X2B8M4T6V0W1Y3C5",
                "tenantId": "acme",
                "actorId": "customer-42",
                "eventType": "user_preference_stated",
                "occurredAt": now,
                "recordedAt": now,
                "summary": "Customer wants invoices as PDF, in Portuguese",
                "tags": ["billing"],
                "sourceRefs": ["chat:session-9/turn-4"],
                "sourceTrust": "user_provided",
                "confidence": "high",
                "importance": 0.8,
                "retention": {"expiresAt": "2026-11-27T09:00:00Z"},
                "policyVersion": "2026-11-29.1",
            }
        )
        vector = [0.0] * 384
        vector[0] = 1.0
        store.apply(
            Changes(tenant_id="acme", put=[NewEpisode(episode, vector, "sentence-transformers/all-MiniLM-L6-v2")])
        )
        store.apply(
            Changes(
                tenant_id="acme",
                status=[StatusChange(episode.event_id, Status.ACTIVE, Status.SUPERSEDED)],
            )
        )
        store.apply(Changes(tenant_id="acme", delete=[episode.event_id]))

        streams = boto3.client("dynamodbstreams")
        arn = client.describe_table(TableName="episodic-timeline")["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
        records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]

    episode_records = [r for r in records if r["dynamodb"]["Keys"]["sk"]["S"] == "EPISODE"]
    by_name = {}
    for record in episode_records:
        record = json.loads(json.dumps(record, default=_jsonable))
        record["eventSourceARN"] = ARN
        record["dynamodb"]["ApproximateCreationDateTime"] = 1795770000
        by_name[record["eventName"]] = record
    ttl = copy.deepcopy(by_name["REMOVE"])
    ttl["eventID"] = "ttl-" + ttl["eventID"]
    ttl["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    poison = copy.deepcopy(by_name["INSERT"])
    poison["eventID"] = "poison-" + poison["eventID"]
    poison["dynamodb"]["NewImage"]["ep"] = {"M": {"summary": {"S": "half an episode"}}}
    samples = {
        "insert.json": [by_name["INSERT"]],
        "modify.json": [by_name["MODIFY"]],
        "user_remove.json": [by_name["REMOVE"]],
        "ttl_remove.json": [ttl],
        "poison.json": [poison],
        "mixed_batch.json": [by_name["INSERT"], poison, ttl, by_name["MODIFY"]],
    }
    for name, batch in samples.items():
        (HERE / name).write_text(json.dumps({"Records": batch}, indent=2) + "\n")


def _jsonable(value):
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    raise TypeError(type(value))


if __name__ == "__main__":
    main()
