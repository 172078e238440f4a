""":class:`~episodic.application.ports.AuditLog` and :class:`~episodic.application.ports.TenantSettings` on DynamoDB.

Audit records live in their own append-only table (``pk = tenant``, ``sk = auditId``, a ULID,
so a tenant's trail reads in time order; the ``by_event`` index holds each episode's trail).
They are appended in the transaction of the change they record -- by
:meth:`~episodic.application.ports.EpisodeStore.apply`, and by :meth:`AuditAndSettings.set_writes_enabled`
together with the switch it flips.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ulid import ULID

from episodic.adapters.codec import decode_cursor, encode_cursor
from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.audit_chain import CHAIN_ATTEMPTS, chained_items, read_chain, read_head
from episodic.adapters.dynamodb.database import ChainMoved, Database, storage_errors, to_item
from episodic.application.ports import AuditQuery
from episodic.domain.chain import Head, Unreadable
from episodic.domain.errors import StorageError
from episodic.domain.model import AuditRecord


def _lowest_audit_id(query: AuditQuery) -> str:
    """The audit id the page starts after: the cursor's, or the first of ``since``'s millisecond."""
    low = "0"  # below every ULID; key values may not be empty
    if query.since is not None:
        low = str(ULID.from_int(int(ULID.from_datetime(query.since)) >> 80 << 80))
    if query.cursor:
        low = max(low, decode_cursor(query.cursor, (str,))[0])
    return low


class AuditAndSettings:
    """A tenant's (or an episode's) audit trail, and the tenant's writes kill-switch."""

    chains = t.AUDIT_CHAIN_SHARDS

    def __init__(self, db: Database) -> None:
        self.db = db

    @storage_errors("read")
    def audit(self, query: AuditQuery) -> tuple[list[AuditRecord], str | None]:
        low = _lowest_audit_id(query)
        request: dict[str, Any] = {"TableName": self.db.audit_table, "ScanIndexForward": not query.newest_first}
        if query.event_id:
            request.update(
                IndexName=t.AUDIT_EVENT_INDEX,
                KeyConditionExpression="epk = :pk AND sk > :low",
                ExpressionAttributeValues=to_item(
                    {":pk": t.audit_event_pk(query.tenant_id, query.event_id), ":low": low}
                ),
            )
        else:
            request.update(
                KeyConditionExpression="pk = :pk AND sk > :low",
                ExpressionAttributeValues=to_item({":pk": query.tenant_id, ":low": low}),
            )
        records: list[AuditRecord] = []
        for item in self.db.query(**request):
            if query.action and item["action"]["S"] != query.action:
                continue
            if len(records) == query.limit:
                return records, encode_cursor([records[-1].audit_id])
            records.append(AuditRecord.model_validate_json(item["rec"]["S"]))
        return records, None

    @storage_errors("read")
    def writes_enabled(self, tenant_id: str) -> bool:
        response = self.db.client.get_item(TableName=self.db.table, Key=to_item(t.writes_switch_key(tenant_id)))
        item = response.get("Item")
        return True if not item else bool(item["enabled"]["BOOL"])

    @storage_errors("write")
    def set_writes_enabled(self, tenant_id: str, enabled: bool, audit: AuditRecord) -> None:
        switch = self.db.put({**t.writes_switch_key(tenant_id), "enabled": enabled})
        for _ in range(CHAIN_ATTEMPTS):
            try:
                self.db.transact([switch, *chained_items(self.db, [audit])])
                return
            except ChainMoved:
                continue
        raise StorageError("the tenant's audit chain kept moving under this switch; retry later")

    def chain(self, tenant_id: str, shard: int) -> Iterator[AuditRecord | Unreadable]:
        """Read page by page as it is iterated (the paged query translates its own failures)."""
        return read_chain(self.db, tenant_id, shard)

    @storage_errors("read")
    def chain_heads(self, tenant_id: str) -> dict[int, Head]:
        heads = {shard: read_head(self.db, tenant_id, shard) for shard in range(t.AUDIT_CHAIN_SHARDS)}
        return {shard: head for shard, head in heads.items() if head is not None}

    @storage_errors("read")
    def audited_tenants(self) -> list[str]:
        """Every tenant with a chain head (a scan: for whole-store verification only)."""
        tenants: set[str] = set()
        request: dict[str, Any] = {
            "TableName": self.db.table,
            "FilterExpression": "begins_with(sk, :chain)",
            "ExpressionAttributeValues": to_item({":chain": t.AUDIT_CHAIN_SK}),
            "ProjectionExpression": "pk",
        }
        while True:
            response = self.db.client.scan(**request)
            tenants |= {item["pk"]["S"].removesuffix("#SETTINGS") for item in response.get("Items", [])}
            if "LastEvaluatedKey" not in response:
                return sorted(tenants)
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
