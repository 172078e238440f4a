"""A data dir of an earlier schema is upgraded once, on open, atomically: schemas 1 and 4 (indexed
texts in FTS5 tables) and recall answers as before from the plain table; schema 3 (recall counts in
the documents) and every episode keeps its count, now counted in its row's columns."""

import sqlite3
from datetime import timedelta

import pytest

from episodic.adapters.sqlite import upgrade as sqlite_upgrade
from episodic.adapters.sqlite.store import SCHEMA_VERSION, SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope
from episodic.application.settings import Settings
from episodic.bootstrap.local import prepare_data_dir
from episodic.domain.model import AuditRecord
from tests.support.schema_one import NOW, episode, rewritten, schema_four, schema_one


@pytest.mark.parametrize("written", [schema_one, schema_four])
def test_given_an_fts5_data_dir_when_opened_then_every_text_moves_to_the_plain_table_and_recall_answers(
    tmp_path, written
):
    path = tmp_path / "episodic.db"
    before = written(path)
    store = SqliteStore(path)
    with store.database.reading() as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = conn.execute("SELECT rowid, text FROM episode_texts").fetchall()
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert not {t for t in tables if t.startswith(("episodes_fts", "episodes_search"))}  # shadow tables too
    assert version == str(SCHEMA_VERSION) == "6"
    assert dict(rows) == {rowid: text for rowid, (_, text) in before.items()}
    got = store.recall.candidates(Scope(tenant_id="acme", now=NOW), "invoice overdue", None, 100).items
    assert len(got) == 30 and all(c.lexical > 0 for c in got)
    store.episodes.apply(Changes(tenant_id="acme", delete=["E0001"]))  # the erasure count's trigger is there
    assert len(store.recall.candidates(Scope(tenant_id="acme", now=NOW), "invoice overdue", None, 100).items) == 29
    store.close()
    reopened = SqliteStore(path)  # nothing left to upgrade
    assert reopened.database.integrity_ok()
    reopened.close()


def test_given_an_upgrade_that_fails_part_way_then_the_old_table_is_whole_and_the_next_open_upgrades(
    tmp_path, monkeypatch
):
    path = tmp_path / "episodic.db"
    before = schema_one(path)

    def failing(conn: sqlite3.Connection, version: int) -> None:
        raise RuntimeError("the process dies here")  # after the texts were copied and the old table dropped

    monkeypatch.setattr(sqlite_upgrade, "_set_version", failing)
    with pytest.raises(RuntimeError):
        SqliteStore(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM episodes_fts").fetchone() == (len(before),)
    assert conn.execute("SELECT count(*) FROM episode_texts").fetchone() == (0,)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    conn.close()
    monkeypatch.undo()
    store = SqliteStore(path)
    with store.database.reading() as conn:
        assert conn.execute("SELECT count(*) FROM episode_texts").fetchone() == (len(before),)
    store.close()


def test_given_a_schema_one_data_dir_when_prepared_for_serving_then_it_is_upgraded_before_any_store_opens(tmp_path):
    """``episodic serve`` prepares the data dir before it forks its workers: the upgrade runs
    there, once, and every worker then opens a file of this version."""
    data = tmp_path / "data"
    data.mkdir()
    schema_one(data / "episodic.db")
    assert prepare_data_dir(Settings(data_dir=data)) == (data / "episodic.db").resolve()
    conn = sqlite3.connect(data / "episodic.db")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'episodes_fts'").fetchone() is None
    conn.close()


def test_given_no_data_dir_when_prepared_then_it_is_created_owner_only_with_an_empty_database(tmp_path):
    path = prepare_data_dir(Settings(data_dir=tmp_path / "new" / "data"))
    assert path.exists() and (path.parent.stat().st_mode & 0o777) == 0o700


def test_given_text_indexed_by_an_earlier_version_when_prepared_for_serving_then_it_is_reindexed_there(tmp_path):
    """The lexical re-index runs once before the workers fork, not in each worker's store."""
    data = tmp_path / "data"
    data.mkdir()
    store = SqliteStore(data / "episodic.db")
    with store.database.transaction() as conn:  # what an earlier version of the search text leaves
        conn.execute("DELETE FROM meta WHERE key = 'search_text_version'")
    store.close()
    prepare_data_dir(Settings(data_dir=data))
    conn = sqlite3.connect(data / "episodic.db")
    assert conn.execute("SELECT value FROM meta WHERE key = 'search_text_version'").fetchone() is not None
    conn.close()


def test_given_a_schema_three_data_dir_when_opened_then_the_recall_counts_move_to_columns_and_go_on(tmp_path):
    path = tmp_path / "episodic.db"
    store = SqliteStore(path)
    store.episodes.apply(
        Changes(tenant_id="acme", put=[NewEpisode(episode("acme", n, f"invoice {n}"), None) for n in range(3)])
    )
    store.close()
    seen = NOW + timedelta(days=1)
    conn = sqlite3.connect(path, isolation_level=None)  # what schema 3 left: the counts in the documents
    conn.executescript(
        "BEGIN; ALTER TABLE episodes DROP COLUMN access_count; ALTER TABLE episodes DROP COLUMN last_accessed_at;"
        f"UPDATE episodes SET doc = json_set(doc, '$.accessCount', 5, '$.lastAccessedAt', '{seen.isoformat()}') "
        "WHERE event_id = 'E0001'; UPDATE meta SET value = '3' WHERE key = 'schema_version'; COMMIT;"
    )
    conn.close()

    store = SqliteStore(path)
    counted = store.episodes.get("acme", "E0001")
    assert counted.access_count == 5 and counted.last_accessed_at == seen
    assert store.episodes.get("acme", "E0002").access_count == 0
    later = seen + timedelta(hours=1)
    served = AuditRecord(audit_id="R1", tenant_id="acme", at=later, action="recall.served", principal_id="p")
    assert store.episodes.record_recall(served, ["E0001", "E0002"], later)
    assert store.episodes.get("acme", "E0001").access_count == 6
    again = store.episodes.get("acme", "E0002")
    assert again.access_count == 1 and again.last_accessed_at == later
    with store.database.reading() as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        (doc,) = conn.execute(
            "SELECT json_extract(doc, '$.accessCount') FROM episodes WHERE event_id = 'E0002'"
        ).fetchone()
    assert version == str(SCHEMA_VERSION) and doc == 0  # a recall no longer rewrites the document
    store.close()


def test_given_a_data_dir_of_a_later_schema_when_opened_then_it_is_refused_and_left_as_it_was(tmp_path):
    from episodic.domain.errors import StorageError

    path = tmp_path / "episodic.db"
    SqliteStore(path).close()
    rewritten(path, f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version';")
    with pytest.raises(StorageError, match="later version"):
        SqliteStore(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION + 1),)
    conn.close()


def test_given_old_texts_of_deleted_episodes_when_upgraded_then_none_of_them_is_kept(tmp_path):
    """What an older version left behind (a text whose episode it deleted, or a text in the new
    table it never wrote to) does not survive the move."""
    path = tmp_path / "episodic.db"
    before = schema_four(path)
    rewritten(
        path,
        "INSERT INTO episodes_search (rowid, tenant, text) VALUES (9999, 'tacme', 'the erased quokka');"
        "CREATE TABLE episode_texts (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL);"
        "INSERT INTO episode_texts (rowid, text) VALUES (9998, 'a stale quokka');",
    )
    store = SqliteStore(path)
    with store.database.reading() as conn:
        rows = dict(conn.execute("SELECT rowid, text FROM episode_texts").fetchall())
    assert rows == {rowid: text for rowid, (_, text) in before.items()}
    store.close()


SCHEMA_FIVE_TRIGGERS = """
CREATE TRIGGER scope_on_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO scope_generations VALUES (NEW.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER scope_on_tag_insert AFTER INSERT ON episode_tags BEGIN
    INSERT INTO scope_generations VALUES (NEW.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1;
END;
UPDATE meta SET value = '5' WHERE key = 'schema_version';
"""
"""What schema 5 had that schema 6 has not: triggers moving the scope generation on inserts."""


def test_given_a_schema_five_data_dir_when_opened_then_its_insert_triggers_go_and_an_insert_moves_the_scope_once(
    tmp_path,
):
    from episodic.adapters.sqlite.scope_cache import generation_of

    path = tmp_path / "episodic.db"
    SqliteStore(path).close()
    rewritten(path, SCHEMA_FIVE_TRIGGERS)

    store = SqliteStore(path)
    with store.database.reading() as conn:
        triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        before = generation_of(conn, "acme")
    assert version == str(SCHEMA_VERSION) == "6"
    assert not {"scope_on_insert", "scope_on_tag_insert"} & triggers
    assert {"scope_on_delete", "scope_on_update", "scope_on_tag_delete"} <= triggers  # the other paths keep theirs
    tagged = episode("acme", 1, "invoice overdue").model_copy(update={"tags": ["billing", "urgent"]})
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(tagged, None)]))
    with store.database.reading() as conn:
        assert generation_of(conn, "acme") == before + 1
    store.close()
