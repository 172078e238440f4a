"""Group commit on the real SQLite store: change sets share commits and keep every promise."""

import textwrap
import threading
import time
from datetime import UTC, datetime

import pytest

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode
from episodic.domain.errors import ConflictError, StorageError
from episodic.domain.model import AuditRecord, Episode
from tests.support.processes import kill_when

NOW = datetime(2026, 11, 20, tzinfo=UTC)


def episode(event_id: str) -> Episode:
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": "a", "tenantId": "acme", "eventId": event_id,
         "occurredAt": NOW, "recordedAt": NOW, "policyVersion": "v", "summary": f"observation {event_id}",
         "sourceRefs": ["t:1"], "sourceTrust": "tool_result"}
    )  # fmt: skip


def audit(audit_id: str, action: str = "episode.written") -> AuditRecord:
    return AuditRecord(audit_id=audit_id, tenant_id="acme", at=NOW, action=action, principal_id="p")


def written(event_id: str) -> Changes:
    return Changes(tenant_id="acme", put=[NewEpisode(episode(event_id), [0.1] * 384)], audit=[audit(f"A-{event_id}")])


def statements(store: SqliteStore) -> list[str]:
    """Every statement the writer connection runs from now on (SQLite's own trace hook)."""
    seen: list[str] = []
    store.database._writer.set_trace_callback(seen.append)
    return seen


def test_given_writers_queued_behind_a_commit_when_it_ends_then_they_share_one_commit(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    seen = statements(store)
    store.database._write_lock.acquire()  # a commit in flight: nobody can write until it ends
    threads = [threading.Thread(target=store.episodes.apply, args=(written(f"E{n}"),)) for n in range(8)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(store.database.group._waiting) < 7 and time.monotonic() < deadline:  # one leads, seven wait
        time.sleep(0.01)
    store.database._write_lock.release()
    for t in threads:
        t.join(timeout=10)

    assert store.episodes.count("acme") == 8
    assert [s for s in seen if s == "COMMIT"] == ["COMMIT", "COMMIT"]  # the leader's own, then the other seven's
    store.close()


def test_given_one_conflicting_set_in_a_group_when_applied_then_only_it_is_left_out_whole(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    store.episodes.apply(written("E1"))
    clash = Changes(tenant_id="acme", put=[NewEpisode(episode("E1"), [0.1] * 384)], audit=[audit("A-clash")])

    outcomes = store.episodes.apply_many([written("E2"), clash, written("E3")])

    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], ConflictError)
    assert set(store.episodes.get_many("acme", ["E1", "E2", "E3"])) == {"E1", "E2", "E3"}
    with store.database.reading() as conn:
        audit_ids = {row[0] for row in conn.execute("SELECT audit_id FROM audit")}
    assert audit_ids == {"A-E1", "A-E2", "A-E3"}  # the clashing set's audit record went with it
    store.close()


def test_given_a_read_audit_when_committed_then_only_it_skips_the_fsync(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    store.episodes.apply(written("E1"))
    seen = statements(store)

    assert store.episodes.record_recall(audit("R1", "recall.served"), ["E1"], NOW)
    relaxed = list(seen)
    seen.clear()
    store.episodes.apply(written("E2"))

    assert relaxed.count("BEGIN IMMEDIATE") == 1  # the record and the count share one commit
    assert relaxed.count("PRAGMA synchronous=NORMAL") == 1 and relaxed.count("PRAGMA synchronous=FULL") == 1
    assert relaxed[-1] == "PRAGMA synchronous=FULL"  # the next durable commit waits for the disk again
    assert not any("synchronous" in s for s in seen)
    assert store.episodes.get("acme", "E1").access_count == 1
    store.close()


def test_given_a_recall_whose_audit_record_cannot_be_written_when_recorded_then_it_raises_and_counts_nothing(
    tmp_path,
):
    store = SqliteStore(tmp_path / "db.sqlite")
    store.episodes.apply(written("E1"))
    assert store.episodes.record_recall(audit("R1", "recall.served"), ["E1"], NOW)
    with pytest.raises(StorageError):
        store.episodes.record_recall(audit("R1", "recall.served"), ["E1"], NOW)  # the same record id again
    assert store.episodes.get("acme", "E1").access_count == 1
    store.close()


LOAD = textwrap.dedent(
    """
    import sys, threading
    from datetime import UTC, datetime
    from episodic.adapters.sqlite.store import SqliteStore
    from episodic.domain.model import AuditRecord, Episode
    from episodic.application.ports import Changes, NewEpisode
    store = SqliteStore(sys.argv[1])
    now = datetime.now(UTC)
    say = threading.Lock()

    def ack(line):
        with say:
            print(line, flush=True)  # printed only after the store returned

    def writer(w):
        for n in range(100000):
            event_id = f"W{w}-{n:06d}"
            ep = Episode.model_validate({
                "eventType": "tool_observed_event", "actorId": "a", "tenantId": "acme", "eventId": event_id,
                "occurredAt": now, "recordedAt": now, "policyVersion": "v", "summary": f"observation {event_id}",
                "sourceRefs": ["t:1"], "sourceTrust": "tool_result",
            })
            store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(ep, [0.5] * 384)]))
            ack("episode " + event_id)

    def reader(r):
        for n in range(100000):
            audit_id = f"R{r}-{n:06d}"
            record = AuditRecord(audit_id=audit_id, tenant_id="acme", at=now, action="recall.served", principal_id="p")
            store.episodes.apply(Changes(tenant_id="acme", audit=[record], durable=False))
            ack("audit " + audit_id)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=reader, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    """
)


def test_given_writers_and_read_audits_under_load_when_killed_then_everything_acknowledged_is_there(tmp_path):
    """The SIGKILL durability promise with group commit busy: four writers and two read-audit
    streams at once. A process crash loses neither an acknowledged write nor an acknowledged read
    audit (the relaxed read audit is lost only to a power cut, which this cannot simulate)."""
    db = tmp_path / "crash.db"

    def enough(lines: list[str]) -> bool:
        kinds = [line.split()[0] for line in lines]
        return kinds.count("episode") >= 300 and kinds.count("audit") >= 100

    lines = [line.split() for line in kill_when(LOAD, [str(db)], enough)]
    episodes = [ident for kind, ident in lines if kind == "episode"]
    audits = [ident for kind, ident in lines if kind == "audit"]

    store = SqliteStore(db)
    assert store.database.integrity_ok()
    assert set(store.episodes.get_many("acme", episodes)) == set(episodes)
    with store.database.reading() as conn:
        kept = {row[0] for row in conn.execute("SELECT audit_id FROM audit WHERE action = 'recall.served'")}
    assert set(audits) <= kept
    store.close()


def test_given_sets_that_all_succeed_when_applied_then_no_savepoint_is_taken(tmp_path):
    """A savepoint makes SQLite journal every page a set changes: a group that cannot need one
    commits without (see ``group_commit.py``)."""
    store = SqliteStore(tmp_path / "db.sqlite")
    seen = statements(store)

    assert store.episodes.apply_many([written("E1"), written("E2"), written("E3")]) == [None, None, None]

    assert not any(s.startswith(("SAVEPOINT", "ROLLBACK")) for s in seen)
    assert seen.count("BEGIN IMMEDIATE") == 1 and seen.count("COMMIT") == 1
    assert store.episodes.count("acme") == 3
    store.close()


def test_given_a_set_that_fails_part_way_when_applied_then_the_group_is_applied_again_set_by_set(tmp_path):
    """The clashing set's episode row was written before its audit record failed: applied again in
    savepoints, nothing of it stays, the others' writes are there once, and the scope generation
    moved once for each episode kept (the first attempt's moves were rolled back with it)."""
    from episodic.adapters.sqlite.scope_cache import generation_of

    store = SqliteStore(tmp_path / "db.sqlite")
    store.episodes.apply(written("E1"))
    with store.database.reading() as conn:
        before = generation_of(conn, "acme")
    seen = statements(store)
    late_clash = Changes(tenant_id="acme", put=[NewEpisode(episode("E9"), [0.1] * 384)], audit=[audit("A-E1")])

    outcomes = store.episodes.apply_many([written("E2"), late_clash, written("E3")])

    assert outcomes[0] is None and outcomes[2] is None and isinstance(outcomes[1], ConflictError)
    assert seen.count("BEGIN IMMEDIATE") == 2 and seen.count("ROLLBACK") == 1 and seen.count("COMMIT") == 1
    assert set(store.episodes.get_many("acme", ["E2", "E3", "E9"])) == {"E2", "E3"}
    with store.database.reading() as conn:
        audit_ids = [row[0] for row in conn.execute("SELECT audit_id FROM audit ORDER BY seq")]
        assert generation_of(conn, "acme") == before + 2
    assert audit_ids == ["A-E1", "A-E2", "A-E3"]
    assert store.episodes.count("acme") == 3
    store.close()


def test_given_a_work_that_raises_after_writing_when_grouped_then_only_its_rows_are_gone_and_it_keeps_its_error(
    tmp_path,
):
    """Straight on the group commit: the failing work's error is its own, the others' rows are
    there once, and a work the group ran again (after rolling the first attempt back) counts once."""
    store = SqliteStore(tmp_path / "db.sqlite")
    with store.database.transaction() as conn:
        conn.execute("CREATE TABLE scratch (n INTEGER NOT NULL)")
    runs: list[int] = []

    def put(n: int, fail: bool = False):
        def work(conn):
            runs.append(n)
            conn.execute("INSERT INTO scratch (n) VALUES (?)", (n,))
            if fail:
                raise RuntimeError(f"work {n} failed after writing")

        return work

    errors = store.database.group.run([put(1), put(2, fail=True), put(3)])

    assert errors[0] is None and errors[2] is None and isinstance(errors[1], RuntimeError)
    assert runs == [1, 2, 1, 2, 3]  # the first attempt stopped at 2 and was rolled back whole
    with store.database.reading() as conn:
        assert [row[0] for row in conn.execute("SELECT n FROM scratch ORDER BY n")] == [1, 3]
    store.close()
