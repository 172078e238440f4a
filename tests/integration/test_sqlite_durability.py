"""The local SQLite backend as a real database: durability, append-only audit, no leftovers."""

import json
import textwrap
import threading

import pytest

from episodic.adapters.sqlite.maintenance import INDEXED_TEXT_VERSION
from episodic.adapters.sqlite.store import SqliteStore
from episodic.domain.model import RecallRequest
from tests.support.factories import AGENT, OPERATOR, proposal
from tests.support.processes import kill_when

WRITER = textwrap.dedent(
    """
    import sys, random
    from datetime import UTC, datetime
    from episodic.adapters.sqlite.store import SqliteStore
    from episodic.domain.model import Episode
    from episodic.application.ports import Changes, NewEpisode
    store = SqliteStore(sys.argv[1])
    now = datetime.now(UTC)
    for n in range(100000):
        ep = Episode.model_validate({
            "eventType": "tool_observed_event", "actorId": "a", "tenantId": "acme",
            "eventId": f"E{n:06d}", "occurredAt": now, "recordedAt": now, "policyVersion": "v",
            "summary": f"observation number {n} " + "x" * 200, "sourceRefs": ["t:1"], "sourceTrust": "tool_result",
        })
        store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(ep, [random.random() for _ in range(384)])]))
        print(ep.event_id, flush=True)  # the acknowledgement: printed only after apply returned
    """
)


def test_given_a_writer_killed_mid_stream_when_reopened_then_every_acknowledged_write_is_there(tmp_path):
    db = tmp_path / "crash.db"
    acknowledged = kill_when(WRITER, [str(db)], lambda lines: len(lines) == 150)
    store = SqliteStore(db)
    assert store.database.integrity_ok()
    found = store.episodes.get_many("acme", acknowledged)
    assert set(found) == set(acknowledged)
    store.close()


def test_given_the_audit_log_when_someone_tries_to_rewrite_it_then_the_database_refuses(local_service):
    local_service.writes.remember(AGENT, proposal())
    with local_service.deps.episodes.db.reading() as conn:
        with pytest.raises(Exception, match="append-only"):
            conn.execute("UPDATE audit SET action = 'nothing'")
        with pytest.raises(Exception, match="append-only"):
            conn.execute("DELETE FROM audit")
    assert local_service.admin.audit(OPERATOR)[0][0].action == "episode.written"


def test_given_an_erased_episode_when_the_files_are_read_raw_then_its_text_is_nowhere(local_service, tmp_path):
    marker = "Zanzibarquux"
    kept = local_service.writes.remember(AGENT, proposal(summary="User prefers morning meetings before ten"))
    gone = local_service.writes.remember(AGENT, proposal(summary=f"User's childhood nickname was {marker}"))
    local_service.erasure.erase(AGENT, gone.event_id)
    data_dir = tmp_path / "data"
    raw = b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())
    assert marker.encode() not in raw
    assert marker.lower().encode() not in raw  # nor the FTS token
    assert b"morning meetings" in raw  # the check can see text that is still there
    assert local_service.reads.get(AGENT, kept.event_id)


def test_given_the_database_when_opened_then_it_runs_in_wal_mode_with_full_sync(local_service):
    with local_service.deps.episodes.db.reading() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1


def test_given_concurrent_writers_when_they_finish_then_no_write_is_lost(local_service):
    errors = []

    def write(worker: int) -> None:
        try:
            for n in range(5):
                local_service.writes.remember(
                    AGENT, proposal(summary=f"Worker {worker} recorded build {n} passing on staging cluster")
                )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert local_service.deps.episodes.count("acme") == 20


def test_given_a_restart_when_the_service_reopens_the_data_dir_then_memories_are_recalled(tmp_path, minilm, clock):
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service

    settings = Settings(data_dir=tmp_path / "data")
    first = build_local_service(settings, embedder=minilm, clock=clock)
    written = first.writes.remember(AGENT, proposal(summary="The staging database password rotates every 30 days"))
    first.close()
    second = build_local_service(settings, embedder=minilm, clock=clock)
    items = second.reads.recall(AGENT, RecallRequest(query="when does the password rotate", actor_id="user-1")).items
    assert [i.episode.event_id for i in items] == [written.event_id]
    second.close()


def test_given_an_archived_record_when_read_then_it_is_compressed_json_with_the_episode(local_service, clock):
    result = local_service.writes.remember(AGENT, proposal(retention={"expiresAt": "2026-11-30T00:00:00Z"}))
    clock.advance(days=3)
    local_service.sweeper.sweep()
    record = local_service.deps.archive.get("acme", result.event_id)
    assert record["reason"] == "retention_expired"
    assert record["episode"]["eventId"] == result.event_id
    files = list((local_service.deps.archive.root).rglob("*.json.gz"))
    assert len(files) == 1 and files[0].read_bytes()[:2] == b"\x1f\x8b"
    assert json.dumps(record)


def test_given_a_data_dir_indexed_by_an_earlier_version_when_reopened_then_its_text_is_reindexed(tmp_path):
    """Upgrading: episodes indexed before the who/when lead are re-indexed once, on open."""
    from datetime import UTC, datetime

    from episodic.application.ports import Changes, NewEpisode
    from episodic.domain.model import Episode

    path = tmp_path / "old.db"
    store = SqliteStore(path)
    now = datetime(2026, 11, 20, tzinfo=UTC)
    ep = Episode.model_validate(
        {"eventType": "conversation_turn", "actorId": "dana", "tenantId": "acme", "eventId": "E1",
         "occurredAt": now, "recordedAt": now, "policyVersion": "v", "summary": "Ran the half marathon in 2:04",
         "sourceRefs": ["t:1"], "sourceTrust": "user_provided"}
    )  # fmt: skip
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(ep, [0.0] * 384)]))
    with store.database.transaction() as conn:  # what an earlier version left: summary only, no marker
        conn.execute("UPDATE episode_texts SET text = ?", (ep.summary,))
        conn.execute("DELETE FROM meta WHERE key = 'search_text_version'")
    store.close()

    reopened = SqliteStore(path)
    with reopened.database.reading() as conn:
        [(text,)] = conn.execute("SELECT text FROM episode_texts").fetchall()
        [(marker,)] = conn.execute("SELECT value FROM meta WHERE key = 'search_text_version'").fetchall()
    assert text == ep.search_text() and text.startswith("dana (November 2026): ")
    assert marker == INDEXED_TEXT_VERSION
    assert reopened.vectors.refresh_search_text() == 0  # once only
    reopened.close()


def test_given_parsed_episodes_memoised_when_one_is_erased_then_the_memo_holds_no_copy(local_service):
    from episodic.adapters.sqlite.reads import parsed, stored

    gone = local_service.writes.remember(AGENT, proposal(summary="User's locker code is Quillback 4471"))
    kept = local_service.writes.remember(AGENT, proposal(summary="User prefers the window seat"))
    assert local_service.reads.get(AGENT, gone.event_id).summary.startswith("User's locker code")
    assert parsed.cache_info().currsize > 0  # read once, memoised

    local_service.erasure.erase(AGENT, gone.event_id)

    assert parsed.cache_info().currsize == stored.cache_info().currsize == 0
    assert local_service.reads.get(AGENT, kept.event_id).summary == "User prefers the window seat"


def test_given_a_memoised_episode_when_it_changes_then_reads_see_the_change(local_service):
    first = local_service.writes.remember(AGENT, proposal(summary="The team standup moved to 9:30"))
    assert local_service.reads.get(AGENT, first.event_id).access_count == 0
    local_service.reads.recall(AGENT, RecallRequest(query="standup time", actor_id="user-1"))

    assert local_service.reads.get(AGENT, first.event_id).access_count == 1  # a new count, not the memoised one
