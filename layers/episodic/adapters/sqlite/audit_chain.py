"""The audit log's hash chain on SQLite: appending a record linked to its tenant's chain, and
reading a chain back for verification (:mod:`episodic.domain.chain`).

One chain per tenant (shard 0): SQLite has one writer, so appending never waits on another
tenant's or another request's link. ``audit_heads`` holds each chain's newest link and is
updated in the same change set as the record it points to, so a change set rolled back leaves no
link behind. The columns beside a record's document (``tenant_id``, ``at``,
``action``, ``event_id``) are what queries filter on: verification checks them against the
document, so an edited column is found as well as an edited document.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from episodic.adapters.sqlite.database import micros
from episodic.domain.chain import Head, Unreadable, linked, read_stored
from episodic.domain.model import AuditRecord


def append_audit(conn: sqlite3.Connection, record: AuditRecord) -> AuditRecord:
    """Append ``record`` after its tenant's newest link, inside the caller's transaction; the
    record as stored (with its link)."""
    record = linked(record, chain_head(conn, record.tenant_id))
    assert record.link is not None
    conn.execute(
        "INSERT INTO audit (audit_id, tenant_id, at, action, event_id, doc) VALUES (?,?,?,?,?,?)",
        (record.audit_id, record.tenant_id, micros(record.at), record.action, record.event_id,
         record.model_dump_json(by_alias=True)),
    )  # fmt: skip
    conn.execute(
        "INSERT INTO audit_heads (tenant_id, shard, seq, digest) VALUES (?, 0, ?, ?) "
        "ON CONFLICT (tenant_id, shard) DO UPDATE SET seq = excluded.seq, digest = excluded.digest",
        (record.tenant_id, record.link.seq, record.link.digest),
    )
    return record


def chain_head(conn: sqlite3.Connection, tenant_id: str, shard: int = 0) -> Head | None:
    row = conn.execute(
        "SELECT seq, digest FROM audit_heads WHERE tenant_id = ? AND shard = ?", (tenant_id, shard)
    ).fetchone()
    return Head(int(row[0]), str(row[1])) if row else None


def stored_chain(conn: sqlite3.Connection, tenant_id: str) -> Iterator[AuditRecord | Unreadable]:
    """The tenant's records in the order they were appended, each checked against the columns
    stored beside it (:func:`~episodic.domain.chain.read_stored`)."""
    rows = conn.execute(
        "SELECT audit_id, tenant_id, at, action, event_id, doc FROM audit WHERE tenant_id = ? ORDER BY seq",
        (tenant_id,),
    )
    for audit_id, tenant, at, action, event_id, doc in rows:
        indexed = {"auditId": audit_id, "tenantId": tenant, "action": action, "eventId": event_id}
        found = read_stored(doc, indexed)
        if isinstance(found, AuditRecord) and micros(found.at) != at:
            yield Unreadable(audit_id, "what is indexed of it (at) no longer matches its content")
        else:
            yield found
