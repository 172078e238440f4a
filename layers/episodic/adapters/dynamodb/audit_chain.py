"""The audit log's hash chains on DynamoDB (:mod:`episodic.domain.chain`).

A tenant's records are linked into :data:`~.tables.AUDIT_CHAIN_SHARDS` chains; the records of one
transaction go to one chain, picked from their first audit id (random bits), so concurrent
writes of a tenant rarely contend for a chain. Each chain's newest link is an item of the
timeline table (``T#SETTINGS`` / ``AUDITCHAIN#shard``, which the stream processor ignores and
the tenant's role may update), put in the same ``TransactWriteItems`` as the records it points
to, on the condition that it is still the link they were chained after. When another writer
appended to the chain first, that condition fails and nothing is written: the transaction is
planned again after the new head (:class:`~.database.ChainMoved`). Each record keeps its chain in a
``chain`` attribute, so a chain is read back in order (by audit id, a ULID) without the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ulid import ULID

from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.database import Database, to_item
from episodic.domain.chain import Head, Unreadable, linked, read_stored
from episodic.domain.model import AuditRecord

CHAIN_ATTEMPTS = 8
"""How often a write is planned again when another writer appended to its chain first."""


def chain_of(audit_id: str) -> int:
    """The chain a transaction's records go to, from the random bits of its first audit id."""
    return int(ULID.from_str(audit_id)) % t.AUDIT_CHAIN_SHARDS


def chained_items(db: Database, records: Sequence[AuditRecord]) -> list[dict[str, Any]]:
    """The transaction items that append ``records`` (one tenant's, one transaction's) to a chain:
    a create-once put per record, then the head update conditioned on the head they follow."""
    if not records:
        return []
    tenant, shard = records[0].tenant_id, chain_of(records[0].audit_id)
    key = t.audit_chain_key(tenant, shard)
    before = read_head(db, tenant, shard)
    head, items = before, []
    for record in records:
        record = linked(record, head, shard)
        assert record.link is not None
        items.append(_record_put(db, record))
        head = Head(record.link.seq, record.link.digest)
    assert head is not None
    update: dict[str, Any] = {
        "TableName": db.table,
        "Key": to_item(key),
        "UpdateExpression": "SET seq = :seq, #digest = :digest",
        "ExpressionAttributeNames": {"#digest": "digest"},
        "ExpressionAttributeValues": to_item({":seq": head.seq, ":digest": head.digest}),
    }
    if before is None:
        update["ConditionExpression"] = "attribute_not_exists(pk)"
    else:
        update["ConditionExpression"] = "seq = :before"
        update["ExpressionAttributeValues"].update(to_item({":before": before.seq}))
    return [*items, {"Update": update}]


def read_head(db: Database, tenant: str, shard: int) -> Head | None:
    response = db.client.get_item(
        TableName=db.table, Key=to_item(t.audit_chain_key(tenant, shard)), ConsistentRead=True
    )
    item = response.get("Item")
    return Head(int(item["seq"]["N"]), item["digest"]["S"]) if item else None


def read_chain(db: Database, tenant: str, shard: int) -> Iterator[AuditRecord | Unreadable]:
    """One chain's records in the order they were appended, each checked against its keys."""
    items = db.query(
        TableName=db.audit_table,
        KeyConditionExpression="pk = :pk",
        FilterExpression="#chain = :chain",
        ExpressionAttributeNames={"#chain": "chain"},
        ExpressionAttributeValues=to_item({":pk": tenant, ":chain": shard}),
        ConsistentRead=True,
    )
    for item in items:
        indexed = {"auditId": item["sk"]["S"], "tenantId": item["pk"]["S"], "action": item["action"]["S"]}
        yield read_stored(item["rec"]["S"], indexed)


def _record_put(db: Database, record: AuditRecord) -> dict[str, Any]:
    """A create-once put of a linked record in the audit table (the roles may not update or delete)."""
    assert record.link is not None
    attributes: dict[str, Any] = {
        "pk": record.tenant_id,
        "sk": record.audit_id,
        "action": record.action,
        "chain": record.link.shard,
        "rec": record.model_dump_json(by_alias=True),
    }
    if record.event_id:
        attributes["epk"] = t.audit_event_pk(record.tenant_id, record.event_id)
    put = {"TableName": db.audit_table, "Item": to_item(attributes), "ConditionExpression": "attribute_not_exists(pk)"}
    return {"Put": put}
