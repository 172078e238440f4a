"""Data dirs as earlier schemas left them: schema 1 (before 2026-12-02), indexed texts in the FTS5
table ``episodes_fts``; schema 4 (before 2026-12-06), in the FTS5 table ``episodes_search`` with
each row's tenant word. Built from this version's store and taken back, so the episodes themselves
are written exactly as they are today."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode
from episodic.domain.model import Episode

NOW = datetime(2026, 11, 20, tzinfo=UTC)
TENANTS = (("acme", "invoice overdue"), ("globex", "invoice paid"))
"""Two tenants of 30 episodes each, their summaries "<words> <n>"."""


def episode(tenant: str, n: int, summary: str) -> Episode:
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": "a0", "tenantId": tenant, "eventId": f"E{n:04d}",
         "occurredAt": NOW, "recordedAt": NOW, "policyVersion": "v", "summary": summary,
         "sourceRefs": ["t:1"], "sourceTrust": "tool_result"}
    )  # fmt: skip


def _written(path: Path) -> dict[int, tuple[str, str]]:
    """The two tenants' episodes written at ``path`` by this version; each row's tenant and text."""
    store = SqliteStore(path)
    for tenant, words in TENANTS:
        puts = [NewEpisode(episode(tenant, n, f"{words} {n}"), None) for n in range(30)]
        store.episodes.apply(Changes(tenant_id=tenant, put=puts))
    store.close()
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT s.rowid, e.tenant_id, s.text FROM episode_texts s JOIN episodes e ON e.rowid = s.rowid")
    before = {rowid: (tenant, text) for rowid, tenant, text in rows}
    conn.close()
    return before


def rewritten(path: Path, script: str) -> None:
    """Run ``script`` on the file at ``path`` in one transaction, as an older version would have."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(f"BEGIN; {script} COMMIT;")
    conn.close()


def schema_one(path: Path) -> dict[int, tuple[str, str]]:
    """Write the two tenants' episodes into a schema-1 file at ``path``; each row's tenant and text."""
    before = _written(path)
    rewritten(
        path,
        "CREATE VIRTUAL TABLE episodes_fts USING fts5 (text, tokenize = 'porter unicode61');"
        "INSERT INTO episodes_fts (rowid, text) SELECT rowid, text FROM episode_texts;"
        "DROP TABLE episode_texts; UPDATE meta SET value = '1' WHERE key = 'schema_version';",
    )
    return before


def schema_four(path: Path) -> dict[int, tuple[str, str]]:
    """Write the two tenants' episodes into a schema-4 file at ``path``; each row's tenant and text."""
    before = _written(path)
    rewritten(
        path,
        "CREATE VIRTUAL TABLE episodes_search USING fts5 (tenant, text, tokenize = 'porter unicode61');"
        "INSERT INTO episodes_search (rowid, tenant, text) SELECT s.rowid, 't' || e.tenant_id, s.text "
        "FROM episode_texts s JOIN episodes e ON e.rowid = s.rowid;"
        "DROP TABLE episode_texts; DROP TABLE tenant_erasures; DROP TRIGGER erasures_on_delete;"
        "UPDATE meta SET value = '4' WHERE key = 'schema_version';",
    )
    return before
