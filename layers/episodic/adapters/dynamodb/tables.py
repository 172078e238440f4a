"""The DynamoDB single-table design: key formats, indexes, and the table definitions.

This module is the one place that spells a key: every partition and sort key the store
writes or queries, every key it parses back, every index name and index key attribute. The
store, the stream processor, the tests (which create the tables under moto) and the CDK app
all take them from here, so they cannot disagree.

Every partition key -- of the table and of every index a tenant-scoped role may query
(:data:`TENANT_INDEXES`) -- starts with ``<tenantId>#``, so IAM ``dynamodb:LeadingKeys`` with
``<tenantId>#*`` confines a caller to its tenant. Tenant ids cannot contain ``#`` (see
``episodic.domain.model.Id``), so ``acme#*`` never matches ``acme2#...``.

Each index is named after what it serves, and its key attributes after the index
(``by_actor_pk``/``by_actor_sk``, ...), so an item says which indexes it is in. Access
patterns and what serves each (``T`` = tenant, ``occ`` = occurredAt as a fixed-width UTC
string, then ``#id``):

| access pattern | key |
|---|---|
| episode by id | table ``pk = T#EP#id``, ``sk = EPISODE`` |
| actor timeline by occurrence | ``by_actor``: ``T#A#actor`` / ``occ#id`` |
| timeline by event type | ``by_type``: ``T#Y#type`` / ``occ#id`` |
| timeline by project | ``by_project``: ``T#P#project`` (sparse) / ``occ#id`` |
| tenant timeline | ``by_tenant``: ``T#TL`` / ``occ#id`` |
| timeline by tag | adjacency items ``pk = T#TAG#tag``, ``sk = occ#id`` (one per tag, same transaction) |
| summaries citing an episode | adjacency items ``pk = T#REF#episode:id``, ``sk = id`` |
| review by id | table ``pk = T#RV#reviewId``, ``sk = REVIEW`` |
| reviews by status | ``by_review_status``: ``T#RVS#status`` / ``requestedAt#reviewId`` |
| idempotency key | table ``pk = T#IDEM#key``, ``sk = IDEM`` |
| writes kill-switch | table ``pk = T#SETTINGS``, ``sk = WRITES`` |
| audit chain heads | table ``pk = T#SETTINGS``, ``sk = AUDITCHAIN#shard`` (4) |
| the key of actor pseudonyms (the service's) | table ``pk = #SERVICE``, ``sk = PSEUDONYMKEY`` |
| pending reviews past timeout (all tenants) | ``pending_reviews``: ``PENDING`` / ``requestedAt#T#reviewId`` (sparse) |
| episodes due for forgetting (all tenants) | ``by_expiry``: ``EXP#shard`` (8) / ``expiresAt#T#id`` (sparse) |
| erasure of an actor | ``by_actor`` -> every episode id, then their tag/ref items |
| actors active on a day (all tenants) | ``by_day``: ``DAY#yyyy-mm-dd#shard`` (4) / ``T#actor#occ#id`` (sparse) |
| audit trail of a tenant | audit table ``pk = T``, ``sk = auditId`` (ULID: time order) |
| audit trail of an episode | audit index ``by_event``: ``epk = T#E#id`` / ``sk = auditId`` |

``pending_reviews``, ``by_expiry`` and ``by_day`` are the only indexes whose keys do not start
with a tenant: they serve the service's own sweeps and the summarisation schedule, never a
tenant-scoped role. The ``ttl`` attribute (epoch seconds) carries ``retention.expiresAt`` on
episodes and their adjacency items, so DynamoDB TTL removes them and the stream processor
archives what TTL removed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EXPIRY_SHARDS = 8
DAY_SHARDS = 4
AUDIT_CHAIN_SHARDS = 4
"""A tenant's audit records are linked into this many hash chains: a write appends to one, so
concurrent writes of one tenant wait on each other's chain only a quarter of the time."""
AUDIT_CHAIN_SK = "AUDITCHAIN#"

EPISODE_SK = "EPISODE"
REVIEW_SK = "REVIEW"
IDEMPOTENCY_SK = "IDEM"
WRITES_SK = "WRITES"
PENDING_REVIEWS_PK = "PENDING"
"""The one partition of the ``pending_reviews`` index."""
SERVICE_PK = "#SERVICE"
"""The partition of the service's own items. No tenant id contains ``#``, so no tenant-scoped
role (``LeadingKeys`` ``<tenantId>#*``) can read them."""
PSEUDONYM_KEY_SK = "PSEUDONYMKEY"


@dataclass(frozen=True)
class Index:
    """A global secondary index of the timeline table, keyed by ``<name>_pk`` and ``<name>_sk``."""

    name: str
    tenant_scoped: bool
    """Partition keys start with ``<tenantId>#``: an IAM-confined tenant role may query it."""
    include: tuple[str, ...] | None = None
    """The non-key attributes it carries; ``None`` projects whole items."""

    @property
    def pk(self) -> str:
        return f"{self.name}_pk"

    @property
    def sk(self) -> str:
        return f"{self.name}_sk"

    def definition(self) -> dict[str, Any]:
        """The ``GlobalSecondaryIndexes`` entry of ``create_table``."""
        projection: dict[str, Any] = {"ProjectionType": "ALL"}
        if self.include is not None:
            projection = {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(self.include)}
        return {
            "IndexName": self.name,
            "KeySchema": [
                {"AttributeName": self.pk, "KeyType": "HASH"},
                {"AttributeName": self.sk, "KeyType": "RANGE"},
            ],
            "Projection": projection,
        }


# Recall ranks the scoped set in-process, so the timeline and review indexes carry whole items.
BY_ACTOR = Index("by_actor", tenant_scoped=True)
BY_TYPE = Index("by_type", tenant_scoped=True)
BY_PROJECT = Index("by_project", tenant_scoped=True)
BY_TENANT = Index("by_tenant", tenant_scoped=True)
BY_REVIEW_STATUS = Index("by_review_status", tenant_scoped=True)
PENDING_REVIEWS = Index("pending_reviews", tenant_scoped=False)
BY_EXPIRY = Index("by_expiry", tenant_scoped=False)
BY_DAY = Index("by_day", tenant_scoped=False, include=("st",))  # counting needs only the status

TIMELINE_INDEXES = (BY_ACTOR, BY_TYPE, BY_PROJECT, BY_TENANT, BY_REVIEW_STATUS, PENDING_REVIEWS, BY_EXPIRY, BY_DAY)
"""Every global secondary index of the timeline table."""
TENANT_INDEXES = tuple(index.name for index in TIMELINE_INDEXES if index.tenant_scoped)
"""The names of the indexes a tenant-scoped role may query (partition keys start with ``<tenant>#``)."""
AUDIT_EVENT_INDEX = "by_event"
"""The audit table's index: an episode's audit trail, partition key ``epk``."""


def iso(value: datetime) -> str:
    """A fixed-width microsecond UTC timestamp: sorts as the instant it names."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def occ_key(occurred_at: datetime, event_id: str) -> str:
    """Sortable ``occurredAt#eventId`` (microsecond UTC, fixed width)."""
    return iso(occurred_at) + "#" + event_id


# ------------------------------------------------------------------ table keys


def episode_pk(tenant: str, event_id: str) -> str:
    return f"{tenant}#EP#{event_id}"


def event_id_of(episode_pk: str) -> str:
    """The event id an episode item's ``pk`` names (the inverse of :func:`episode_pk`)."""
    return episode_pk.split("#EP#", 1)[1]


def episode_key(tenant: str, event_id: str) -> dict[str, str]:
    return {"pk": episode_pk(tenant, event_id), "sk": EPISODE_SK}


def review_pk(tenant: str, review_id: str) -> str:
    return f"{tenant}#RV#{review_id}"


def review_key(tenant: str, review_id: str) -> dict[str, str]:
    return {"pk": review_pk(tenant, review_id), "sk": REVIEW_SK}


def idempotency_pk(tenant: str, key: str) -> str:
    return f"{tenant}#IDEM#{key}"


def idempotency_key(tenant: str, key: str) -> dict[str, str]:
    return {"pk": idempotency_pk(tenant, key), "sk": IDEMPOTENCY_SK}


def settings_pk(tenant: str) -> str:
    return f"{tenant}#SETTINGS"


def writes_switch_key(tenant: str) -> dict[str, str]:
    """The tenant's writes kill-switch item."""
    return {"pk": settings_pk(tenant), "sk": WRITES_SK}


def audit_chain_key(tenant: str, shard: int) -> dict[str, str]:
    """The item holding the newest link of one of the tenant's audit chains."""
    return {"pk": settings_pk(tenant), "sk": f"{AUDIT_CHAIN_SK}{shard}"}


def tag_pk(tenant: str, tag: str) -> str:
    return f"{tenant}#TAG#{tag}"


def ref_pk(tenant: str, ref: str) -> str:
    return f"{tenant}#REF#{ref}"


# ------------------------------------------------------------------ index keys


def actor_pk(tenant: str, actor_id: str) -> str:
    """``by_actor`` partition: one actor's timeline."""
    return f"{tenant}#A#{actor_id}"


def type_pk(tenant: str, event_type: str) -> str:
    """``by_type`` partition: one event type's timeline."""
    return f"{tenant}#Y#{event_type}"


def project_pk(tenant: str, project_id: str) -> str:
    """``by_project`` partition: one project's timeline."""
    return f"{tenant}#P#{project_id}"


def tenant_timeline_pk(tenant: str) -> str:
    """``by_tenant`` partition: the whole tenant's timeline."""
    return f"{tenant}#TL"


def review_status_pk(tenant: str, status: str) -> str:
    """``by_review_status`` partition: a tenant's reviews in one status."""
    return f"{tenant}#RVS#{status}"


def review_status_sk(requested_at: datetime, review_id: str) -> str:
    return f"{iso(requested_at)}#{review_id}"


def pending_review_sk(requested_at: datetime, tenant: str, review_id: str) -> str:
    """``pending_reviews`` sort key: request time first, so the timeout sweep reads a prefix."""
    return f"{iso(requested_at)}#{tenant}#{review_id}"


def expiry_pk(shard: int) -> str:
    """``by_expiry`` partition ``shard`` (of :data:`EXPIRY_SHARDS`)."""
    return f"EXP#{shard}"


def expiry_shard(event_id: str) -> str:
    """The ``by_expiry`` partition of an episode (spread by a hash of its id)."""
    digest = hashlib.sha256(event_id.encode()).digest()
    return expiry_pk(digest[0] % EXPIRY_SHARDS)


def expiry_sk(expires_at: datetime, tenant: str, event_id: str) -> str:
    """``by_expiry`` sort key: expiry time first, so the expiry sweep reads a prefix."""
    return f"{iso(expires_at)}#{tenant}#{event_id}"


def day_pk(day: datetime, shard: int) -> str:
    """``by_day`` partition ``shard`` (of :data:`DAY_SHARDS`) of a UTC day."""
    return f"DAY#{day.astimezone(UTC):%Y-%m-%d}#{shard}"


def day_key(occurred_at: datetime, tenant: str, actor: str) -> str:
    """The ``by_day`` partition of an actor's episode (spread by a hash of tenant and actor)."""
    digest = hashlib.sha256(f"{tenant}#{actor}".encode()).digest()
    return day_pk(occurred_at, digest[0] % DAY_SHARDS)


def day_sk(tenant: str, actor: str, occurred_at: datetime, event_id: str) -> str:
    return f"{tenant}#{actor}#{occ_key(occurred_at, event_id)}"


def parse_day_sk(sort_key: str) -> tuple[str, str, str]:
    """``(tenant, actor, occurredAt)`` of a ``by_day`` sort key (occurredAt as :func:`iso` wrote it)."""
    tenant, actor, occ = sort_key.split("#", 2)
    return tenant, actor, occ.split("#", 1)[0]


def audit_event_pk(tenant: str, event_id: str) -> str:
    """``by_event`` partition of the audit table: one episode's audit trail."""
    return f"{tenant}#E#{event_id}"


# ------------------------------------------------------------------ table definitions


def timeline_table_definition(name: str) -> dict[str, Any]:
    """``create_table`` arguments for the timeline (on-demand; TTL and Streams set separately)."""
    attributes = [("pk", "S"), ("sk", "S")]
    for index in TIMELINE_INDEXES:
        attributes += [(index.pk, "S"), (index.sk, "S")]
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t in attributes],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [index.definition() for index in TIMELINE_INDEXES],
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
                "IndexName": AUDIT_EVENT_INDEX,
                "KeySchema": [
                    {"AttributeName": "epk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        # Every new record is a change to tell (memory events): the stream is the outbox.
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    }


def create_tables(client: Any, timeline: str, audit: str) -> None:
    """Create both tables and enable TTL on ``ttl`` (used by tests under moto and local tooling;
    the CDK app declares the same definitions for real deployments)."""
    client.create_table(**timeline_table_definition(timeline))
    client.create_table(**audit_table_definition(audit))
    client.update_time_to_live(TableName=timeline, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})


def epoch_seconds(value: datetime) -> int:
    return int(value.astimezone(UTC).timestamp())
