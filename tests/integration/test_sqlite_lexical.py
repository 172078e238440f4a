"""BM25 candidates on the real SQLite store: FTS5 hands matches over best first, none sorted again."""

from datetime import UTC, datetime

from episodic.adapters.local.sqlite_store import SqliteStore
from episodic.model import Episode
from episodic.ports import Changes, NewEpisode, Scope

NOW = datetime(2026, 11, 20, tzinfo=UTC)
WORDS = ["export", "warehouse", "alert", "gateway", "invoice", "deploy", "rollback", "latency"]


def episode(n: int, actor: str) -> Episode:
    words = " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 1 + n % 5))
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": actor, "tenantId": "acme", "eventId": f"E{n:04d}",
         "occurredAt": NOW, "recordedAt": NOW, "policyVersion": "v", "summary": f"job {n}: {words}",
         "sourceRefs": ["t:1"], "sourceTrust": "tool_result"}
    )  # fmt: skip


def test_given_many_matches_then_the_scope_gets_the_best_by_bm25_without_a_sort_of_all_matches(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    store.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(n, f"a{n % 3}"), None) for n in range(600)]))
    scope = Scope(tenant_id="acme", now=NOW, actor_id="a1")
    with store.reading() as conn:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        got = store._candidates(conn, scope, "alert gateway rollback", None, 20, None).items
        conn.set_trace_callback(None)
        (fts,) = [s for s in statements if "MATCH" in s]
        plan = " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {fts}"))
        expected = conn.execute(  # the same scope's matches, every one scored, then sorted
            "SELECT e.event_id, -bm25(episodes_fts) FROM episodes_fts JOIN episodes e ON e.rowid = episodes_fts.rowid "
            'WHERE episodes_fts MATCH \'"alert" OR "gateway" OR "rollback"\' AND e.actor_id = \'a1\' '
            "ORDER BY bm25(episodes_fts), e.rowid"
        ).fetchall()
    assert "TEMP B-TREE" not in plan and "INDEX 32" in plan  # FTS5's own ORDER BY rank
    scores = {event_id: score for event_id, score in expected}
    assert len(got) == 20 and all(c.lexical == scores[c.event_id] for c in got)
    assert sorted(-c.lexical for c in got) == sorted(-s for _, s in expected[:20])  # the 20 best, ties aside
    store.close()
