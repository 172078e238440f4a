"""Human oversight over the store: the review queue, the audit log and the tenant kill-switch
(the :class:`~episodic.application.ports.ReviewQueue`, :class:`~episodic.application.ports.AuditLog` and
:class:`~episodic.application.ports.TenantSettings` ports).

Reviews and audit records are *written* inside :meth:`Episodes.apply_many
<episodic.adapters.sqlite.episodes.Episodes.apply_many>`, in the same transaction as the
episode they concern; the statements it runs for them live here, beside the reads of the
same tables, so each table's columns are spelled out in one module. The audit table itself
refuses updates and deletes (triggers in :mod:`.database`): the log can only grow.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from episodic.adapters.codec import decode_cursor, encode_cursor
from episodic.adapters.sqlite.audit_chain import append_audit, chain_head, stored_chain
from episodic.adapters.sqlite.database import Database, micros
from episodic.application.ports import AuditQuery, ReviewChange
from episodic.domain.chain import Head, Unreadable
from episodic.domain.model import AuditRecord, Review, ReviewStatus


def insert_review(conn: sqlite3.Connection, tenant: str, review: Review) -> None:
    """Open a review, inside the caller's transaction (a duplicate id fails the transaction)."""
    conn.execute(
        "INSERT INTO reviews (review_id, tenant_id, event_id, status, requested_at, doc) VALUES (?,?,?,?,?,?)",
        (
            review.review_id,
            tenant,
            review.event_id,
            review.status,
            micros(review.requested_at),
            review.model_dump_json(by_alias=True),
        ),
    )


def close_review(conn: sqlite3.Connection, tenant: str, close: ReviewChange) -> bool:
    """Close a review if it is still pending; False (nothing changed) when it is not."""
    cur = conn.execute(
        "UPDATE reviews SET status = ?, doc = json_set(doc, '$.status', ?, '$.decidedAt', ?, "
        "'$.reviewer', ?, '$.note', ?) WHERE tenant_id = ? AND review_id = ? AND status = 'pending'",
        (
            close.status,
            close.status,
            close.decided_at.isoformat(),
            close.reviewer,
            close.note,
            tenant,
            close.review_id,
        ),
    )
    return cur.rowcount == 1


def scrub_review_note(conn: sqlite3.Connection, tenant: str, review_id: str) -> None:
    """Drop a review's note, inside the caller's transaction."""
    conn.execute(
        "UPDATE reviews SET doc = json_set(doc, '$.note', NULL) WHERE tenant_id = ? AND review_id = ?",
        (tenant, review_id),
    )


class Governance:
    """Reviews, the audit log and per-tenant settings."""

    chains = 1
    """One audit chain per tenant: one writer appends them all."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get_review(self, tenant_id: str, review_id: str) -> Review | None:
        row = self.db.one("SELECT doc FROM reviews WHERE tenant_id = ? AND review_id = ?", (tenant_id, review_id))
        return Review.model_validate_json(row[0]) if row else None

    def list_reviews(self, tenant_id: str, status: ReviewStatus | None, limit: int) -> list[Review]:
        sql = "SELECT doc FROM reviews WHERE tenant_id = ?"
        params: list[Any] = [tenant_id]
        if status:
            sql += " AND status = ?"
            params.append(status)
        rows = self.db.query(sql + " ORDER BY requested_at LIMIT ?", (*params, limit))
        return [Review.model_validate_json(r[0]) for r in rows]

    def reviews_of(self, tenant_id: str, event_ids: Collection[str], actor: str | None = None) -> list[Review]:
        rows = self.db.query(
            "SELECT doc FROM reviews WHERE tenant_id = ? AND "
            "(event_id IN (SELECT value FROM json_each(?)) OR json_extract(doc, '$.actor') = ?)",
            (tenant_id, json.dumps(list(event_ids)), actor),
        )
        return [Review.model_validate_json(r[0]) for r in rows]

    def reviews_requested_before(self, before: datetime, limit: int) -> list[Review]:
        rows = self.db.query(
            "SELECT doc FROM reviews WHERE status = 'pending' AND requested_at < ? ORDER BY requested_at LIMIT ?",
            (micros(before), limit),
        )
        return [Review.model_validate_json(r[0]) for r in rows]

    def audit(self, query: AuditQuery) -> tuple[list[AuditRecord], str | None]:
        """A page of the tenant's audit log in append order; the cursor is the last ``seq`` served."""
        sql = "SELECT seq, doc FROM audit WHERE tenant_id = ?"
        params: list[Any] = [query.tenant_id]
        if query.event_id:
            sql += " AND event_id = ?"
            params.append(query.event_id)
        if query.action:
            sql += " AND action = ?"
            params.append(query.action)
        if query.since:
            sql += " AND at >= ?"
            params.append(micros(query.since))
        if query.cursor:
            sql += " AND seq < ?" if query.newest_first else " AND seq > ?"
            params.append(decode_cursor(query.cursor, (int,))[0])
        order = "DESC" if query.newest_first else "ASC"
        rows = self.db.query(sql + f" ORDER BY seq {order} LIMIT ?", (*params, query.limit + 1))
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        cursor = encode_cursor([rows[-1][0]]) if more and rows else None
        return [AuditRecord.model_validate_json(r[1]) for r in rows], cursor

    def chain(self, tenant_id: str, shard: int) -> Iterator[AuditRecord | Unreadable]:
        """One chain per tenant here (shard 0), read on one reader: one snapshot of it."""
        if shard != 0:
            return
        with self.db.reading() as conn:
            yield from stored_chain(conn, tenant_id)

    def chain_heads(self, tenant_id: str) -> dict[int, Head]:
        with self.db.reading() as conn:
            head = chain_head(conn, tenant_id)
        return {} if head is None else {0: head}

    def audited_tenants(self) -> list[str]:
        """Every tenant with an audit record or a chain head: a tenant whose records were all
        deleted still has its head, and is verified (and found truncated) with the others."""
        rows = self.db.query("SELECT tenant_id FROM audit UNION SELECT tenant_id FROM audit_heads ORDER BY tenant_id")
        return [row[0] for row in rows]

    def writes_enabled(self, tenant_id: str) -> bool:
        """A tenant never switched accepts writes."""
        row = self.db.one("SELECT writes_enabled FROM tenant_settings WHERE tenant_id = ?", (tenant_id,))
        return True if row is None else bool(row[0])

    def set_writes_enabled(self, tenant_id: str, enabled: bool, audit: AuditRecord) -> None:
        """Flip the kill-switch and audit it in one transaction: no unaudited switch, ever."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO tenant_settings (tenant_id, writes_enabled) VALUES (?, ?) "
                "ON CONFLICT (tenant_id) DO UPDATE SET writes_enabled = excluded.writes_enabled",
                (tenant_id, int(enabled)),
            )
            append_audit(conn, audit)
