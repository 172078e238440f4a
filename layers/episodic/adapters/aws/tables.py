"""The DynamoDB single-table design: key formats, indexes, and the table definitions.

One place defines the keys so the store, the stream processor, the tests (which create
the tables under moto) and the CDK app all agree. Every partition key -- of the table
and of every index a tenant-scoped role may query -- starts with ``<tenantId>#``, so IAM
``dynamodb:LeadingKeys`` with ``<tenantId>#*`` confines a caller to its tenant. Tenant ids
cannot contain ``#`` (see ``episodic.model.Id``), so ``acme#*`` never matches ``acme2#...``.

Access patterns and what serves each (``occ`` = occurredAt as a fixed-width UTC string):

| access pattern | key |
|---|---|
| episode by id | table ``pk = T#EP#id``, ``sk = EPISODE`` |
| actor timeline by occurrence | GSI1 ``gsi1pk = T#A#actor``, ``gsi1sk = occ#id`` |
| timeline by event type | GSI2 ``gsi2pk = T#Y#type``, ``gsi2sk = occ#id`` |
| timeline by project | GSI3 ``gsi3pk = T#P#project`` (sparse), ``gsi3sk = occ#id`` |
| tenant timeline | GSI4 ``gsi4pk = T#TL``, ``gsi4sk = occ#id`` |
| timeline by tag | adjacency items ``pk = T#TAG#tag``, ``sk = occ#id`` (one per tag, same transaction) |
| summaries citing an episode | adjacency items ``pk = T#REF#episode:id``, ``sk = id`` |
| review by id | table ``pk = T#RV#reviewId``, ``sk = REVIEW`` |
| reviews by status | GSI1 ``gsi1pk = T#RVS#status``, ``gsi1sk = requestedAt#reviewId`` |
| idempotency key | table ``pk = T#IDEM#key``, ``sk = IDEM`` |
| writes kill-switch | table ``pk = T#SETTINGS``, ``sk = WRITES`` |
| pending reviews past timeout (all tenants) | GSI5 ``gsi5pk = PENDING``, ``gsi5sk = requestedAt#T#rid`` |
| episodes due for forgetting (all tenants) | GSI5 ``gsi5pk = EXP#shard`` (8), ``gsi5sk = expiresAt#T#id`` |
| erasure of an actor | GSI1 actor timeline -> every episode id, then their tag/ref items |
| actors active on a day (all tenants) | GSI6 ``DAY#yyyy-mm-dd#shard`` (4) / ``T#actor#occ`` |
| audit trail of a tenant | audit table ``pk = T``, ``sk = auditId`` (ULID: time order) |
| audit trail of an episode | audit GSI ``by_event``: ``epk = T#E#id``, ``sk = auditId`` |

GSI5 and GSI6 are the only indexes whose keys do not start with a tenant: they serve the
service's own sweeps and the summarisation schedule, never a tenant-scoped role. The
``ttl`` attribute (epoch seconds) carries ``retention.expiresAt`` on episodes and their
adjacency items, so DynamoDB TTL removes them and the stream processor archives what TTL
removed.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

EXPIRY_SHARDS = 8
DAY_SHARDS = 4
TIMELINE_INDEXES = ("gsi1", "gsi2", "gsi3", "gsi4")


def occ_key(occurred_at: datetime, event_id: str) -> str:
    """Sortable ``occurredAt#eventId`` (microsecond UTC, fixed width)."""
    return occurred_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") + "#" + event_id


def iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def episode_pk(tenant: str, event_id: str) -> str:
    return f"{tenant}#EP#{event_id}"


def review_pk(tenant: str, review_id: str) -> str:
    return f"{tenant}#RV#{review_id}"


def idempotency_pk(tenant: str, key: str) -> str:
    return f"{tenant}#IDEM#{key}"


def settings_pk(tenant: str) -> str:
    return f"{tenant}#SETTINGS"


def tag_pk(tenant: str, tag: str) -> str:
    return f"{tenant}#TAG#{tag}"


def ref_pk(tenant: str, ref: str) -> str:
    return f"{tenant}#REF#{ref}"


def expiry_shard(event_id: str) -> str:
    digest = hashlib.sha256(event_id.encode()).digest()
    return f"EXP#{digest[0] % EXPIRY_SHARDS}"


def day_key(occurred_at: datetime, tenant: str, actor: str) -> str:
    digest = hashlib.sha256(f"{tenant}#{actor}".encode()).digest()
    return f"DAY#{occurred_at.astimezone(UTC):%Y-%m-%d}#{digest[0] % DAY_SHARDS}"


def _gsi(name: str) -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": f"{name}pk", "KeyType": "HASH"},
            {"AttributeName": f"{name}sk", "KeyType": "RANGE"},
        ],
        # Recall ranks the scoped set in-process, so the timeline indexes carry whole items.
        "Projection": {"ProjectionType": "ALL"},
    }


def timeline_table_definition(name: str) -> dict[str, Any]:
    """``create_table`` arguments for the timeline (on-demand; TTL and Streams set separately)."""
    attributes = [("pk", "S"), ("sk", "S")]
    for index in (*TIMELINE_INDEXES, "gsi5", "gsi6"):
        attributes += [(f"{index}pk", "S"), (f"{index}sk", "S")]
    by_day = {
        "IndexName": "gsi6",
        "KeySchema": [
            {"AttributeName": "gsi6pk", "KeyType": "HASH"},
            {"AttributeName": "gsi6sk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["st"]},
    }
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t in attributes],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [*(_gsi(i) for i in (*TIMELINE_INDEXES, "gsi5")), by_day],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }


def audit_table_definition(name: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "epk", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "by_event",
                "KeySchema": [
                    {"AttributeName": "epk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    }


def create_tables(client: Any, timeline: str, audit: str) -> None:
    """Create both tables and enable TTL on ``ttl`` (used by tests under moto and local tooling;
    the CDK app declares the same definitions for real deployments)."""
    client.create_table(**timeline_table_definition(timeline))
    client.create_table(**audit_table_definition(audit))
    client.update_time_to_live(TableName=timeline, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})


def epoch_seconds(value: datetime) -> int:
    return int(value.astimezone(UTC).timestamp())
