"""A data dir of schema 1 (full-text rows without their tenant) is upgraded once, on open,
atomically, and recall answers as before."""

import sqlite3
from datetime import UTC, datetime

import pytest

from episodic.adapters.local import sqlite_upgrade
from episodic.adapters.local.fts_match import tenant_token
from episodic.adapters.local.sqlite_store import SCHEMA_VERSION, SqliteStore
from episodic.model import Episode
from episodic.ports import Changes, NewEpisode, Scope

NOW = datetime(2026, 11, 20, tzinfo=UTC)


def episode(tenant: str, n: int, summary: str) -> Episode:
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": "a0", "tenantId": tenant, "eventId": f"E{n:04d}",
         "occurredAt": NOW, "recordedAt": NOW, "policyVersion": "v", "summary": summary,
         "sourceRefs": ["t:1"], "sourceTrust": "tool_result"}
    )  # fmt: skip


def schema_one(path) -> dict[int, tuple[str, str]]:
    """A data dir as schema 1 left it: the same episodes, their texts in ``episodes_fts`` alone.
    Returns each row's tenant and text."""
    store = SqliteStore(path)
    for tenant, words in (("acme", "invoice overdue"), ("globex", "invoice paid")):
        puts = [NewEpisode(episode(tenant, n, f"{words} {n}"), None) for n in range(30)]
        store.apply(Changes(tenant_id=tenant, put=puts))
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    rows = conn.execute(
        "SELECT s.rowid, e.tenant_id, s.text FROM episodes_search s JOIN episodes e ON e.rowid = s.rowid"
    )
    before = {rowid: (tenant, text) for rowid, tenant, text in rows}
    conn.executescript(
        "BEGIN; CREATE VIRTUAL TABLE episodes_fts USING fts5 (text, tokenize = 'porter unicode61');"
        "INSERT INTO episodes_fts (rowid, text) SELECT rowid, text FROM episodes_search;"
        "DROP TABLE episodes_search; UPDATE meta SET value = '1' WHERE key = 'schema_version'; COMMIT;"
    )
    conn.close()
    return before


def test_given_a_schema_one_data_dir_when_opened_then_every_row_gets_its_tenant_and_recall_answers(tmp_path):
    path = tmp_path / "episodic.db"
    before = schema_one(path)
    store = SqliteStore(path)
    with store.reading() as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = conn.execute("SELECT rowid, tenant, text FROM episodes_search").fetchall()
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert "episodes_fts" not in tables and version == str(SCHEMA_VERSION) == "2"
    assert {rowid: (tenant, text) for rowid, tenant, text in rows} == {
        rowid: (tenant_token(tenant), text) for rowid, (tenant, text) in before.items()
    }
    got = store.candidates(Scope(tenant_id="acme", now=NOW), "invoice overdue", None, 100).items
    assert len(got) == 30 and all(c.lexical > 0 for c in got)
    store.close()
    reopened = SqliteStore(path)  # nothing left to upgrade
    assert reopened.integrity_ok()
    reopened.close()


def test_given_an_upgrade_that_fails_part_way_then_the_old_table_is_whole_and_the_next_open_upgrades(
    tmp_path, monkeypatch
):
    path = tmp_path / "episodic.db"
    before = schema_one(path)
    calls = iter(range(10**6))

    def failing(tenant_id: str) -> str:
        if next(calls) == 40:
            raise RuntimeError("the process dies here")
        return tenant_token(tenant_id)

    monkeypatch.setattr(sqlite_upgrade, "tenant_token", failing)
    with pytest.raises(sqlite3.OperationalError):  # SQLite reports the function's error
        SqliteStore(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM episodes_fts").fetchone() == (len(before),)
    assert conn.execute("SELECT count(*) FROM episodes_search").fetchone() == (0,)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    conn.close()
    monkeypatch.undo()
    store = SqliteStore(path)
    with store.reading() as conn:
        assert conn.execute("SELECT count(*) FROM episodes_search").fetchone() == (len(before),)
    store.close()
