"""BM25 candidates on the real SQLite store: FTS5 hands matches over best first, none sorted again."""

from dataclasses import replace
from datetime import UTC, datetime

from episodic.adapters.sqlite.fts_match import tenant_token
from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope
from episodic.domain.model import Episode, PrivacyClass

NOW = datetime(2026, 11, 20, tzinfo=UTC)
BM25 = "bm25(episodes_search, 0.0, 1.0)"
"""The text's BM25, the tenant column weighing nothing (as ``fts_match.RANK``)."""
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
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(n, f"a{n % 3}"), None) for n in range(600)]))
    scope = Scope(tenant_id="acme", now=NOW, actor_id="a1")
    with store.database.reading() as conn:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        got = store.recall._candidates(conn, scope, "alert gateway rollback", None, 20, None).items
        conn.set_trace_callback(None)
        (fts,) = [s for s in statements if "MATCH" in s and "ORDER BY" in s]  # not the words' counts
        plan = " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {fts}"))
        expected = conn.execute(  # the same scope's matches, every one scored, then sorted
            f"SELECT e.event_id, -{BM25} FROM episodes_search JOIN episodes e ON e.rowid = episodes_search.rowid "
            'WHERE episodes_search MATCH \'"alert" OR "gateway" OR "rollback"\' AND e.actor_id = \'a1\' '
            f"ORDER BY {BM25}, e.rowid"
        ).fetchall()
    assert "TEMP B-TREE" not in plan and "INDEX 32" in plan  # FTS5's own ORDER BY rank
    scores = {event_id: score for event_id, score in expected}
    assert len(got) == 20 and all(c.lexical == scores[c.event_id] for c in got)
    assert sorted(-c.lexical for c in got) == sorted(-s for _, s in expected[:20])  # the 20 best, ties aside
    store.close()


def _texts(store: SqliteStore, summaries: list[str]) -> None:
    store.episodes.apply(Changes(tenant_id="acme", put=[
        NewEpisode(episode(n, "a0").model_copy(update={"summary": s, "event_id": f"T{n:04d}"}), None)
        for n, s in enumerate(summaries)
    ]))  # fmt: skip


def test_given_a_word_in_half_the_texts_or_more_then_the_search_leaves_it_out_and_no_score_moves(tmp_path):
    """BM25 gives such a word no weight (FTS5's IDF is at most zero there; it uses 1e-6), yet
    FTS5 scores every text holding it: leaving it out only saves that work."""
    store = SqliteStore(tmp_path / "db.sqlite")
    _texts(store, [f"meetings about the {'rollback' if n % 10 == 0 else 'export'} plan" for n in range(40)])
    with store.database.reading() as conn:
        assert store.recall.terms.informative(conn, ["meeting", "rollback", "export"]) == ["rollback"]
        pruned = store.recall._candidates(conn, Scope(tenant_id="acme", now=NOW), "meeting rollback", None, 50, None)
        full = dict(conn.execute(
            f"SELECT e.event_id, -{BM25} FROM episodes_search JOIN episodes e ON e.rowid = episodes_search.rowid "
            "WHERE episodes_search MATCH '\"meeting\" OR \"rollback\"'"
        ).fetchall())  # fmt: skip
    found = {c.event_id: c.lexical for c in pruned.items}
    assert sorted(found) == [f"T{n:04d}" for n in range(0, 40, 10)]  # "meetings": stemmed as FTS5 reads it
    assert all(abs(found[i] - full[i]) < 1e-4 * full[i] for i in found)
    assert all(full[i] < 1e-4 for i in full if i not in found)  # what was left out scored next to nothing
    store.close()


def test_given_a_query_of_common_words_only_then_every_word_is_searched_as_before(tmp_path):
    """In a small tenant every word may be in half the texts: the tiny scores still rank among
    themselves (recall normalises them), and each word must find its own texts."""
    store = SqliteStore(tmp_path / "db.sqlite")
    _texts(store, ["invoice sent", "quote paid", "invoice paid late", "unrelated note"])
    with store.database.reading() as conn:
        assert store.recall.terms.informative(conn, ["invoice", "paid"]) == ["invoice", "paid"]
        assert store.recall.terms.informative(conn, ["invoice", "quote"]) == ["quote"]
        got = store.recall._candidates(conn, Scope(tenant_id="acme", now=NOW), "invoice paid", None, 10, None).items
    assert sorted(c.event_id for c in got) == ["T0000", "T0001", "T0002"]
    store.close()


def _tenant(store: SqliteStore, tenant: str, count: int, start: int = 0) -> None:
    store.episodes.apply(Changes(tenant_id=tenant, put=[
        NewEpisode(episode(n, "a0").model_copy(update={"tenant_id": tenant, "event_id": f"{tenant}-{n:05d}"}), None)
        for n in range(start, start + count)
    ]))  # fmt: skip


def _searched(store: SqliteStore, tenant: str, text: str) -> tuple[list[str], dict[str, float]]:
    """The FTS5 statements one tenant-wide search ran, and its candidates' BM25 scores."""
    with store.database.reading() as conn:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        got = store.recall._candidates(conn, Scope(tenant_id=tenant, now=NOW), text, None, 500, None).items
        conn.set_trace_callback(None)
    return [s for s in statements if "MATCH" in s and "ORDER BY" in s], {c.event_id: c.lexical for c in got}


def test_given_a_small_tenant_beside_a_large_one_then_fts5_searches_its_own_rows_with_the_same_scores(tmp_path):
    """FTS5 scores every row holding a query word before the scope keeps the tenant's; a tenant
    with few of the rows is searched through its tenant word instead. Same candidates, same
    BM25: the tenant column weighs nothing in the rank."""
    store = SqliteStore(tmp_path / "db.sqlite")
    _tenant(store, "large", 900)
    _tenant(store, "small", 60, start=900)
    _tenant(store, "large", 300, start=960)  # the small tenant's rows sit between the large one's
    with store.database.reading() as conn:
        assert store.recall.terms.holds_few(conn, "small") and not store.recall.terms.holds_few(conn, "large")
        (limited,), small = _searched(store, "small", "alert gateway")
    assert f'tenant : "{tenant_token("small")}" AND text :' in limited
    unlimited = dict(store.database.query(
        f"SELECT e.event_id, -{BM25} FROM episodes_search JOIN episodes e ON e.rowid = episodes_search.rowid "
        "WHERE episodes_search MATCH 'text : (\"alert\" OR \"gateway\")' AND e.tenant_id = 'small'"
    ))  # fmt: skip
    assert small and small.keys() == unlimited.keys()
    assert all(abs(small[i] - unlimited[i]) <= 1e-9 * abs(unlimited[i]) for i in small)
    (whole,), large = _searched(store, "large", "alert gateway")
    assert "tenant :" not in whole and large and all(i.startswith("large-") for i in large)
    store.close()


def test_given_a_word_that_is_some_tenants_token_then_it_is_matched_in_texts_only(tmp_path):
    """A query word equal to a tenant's word finds no rows by their tenant column."""
    store = SqliteStore(tmp_path / "db.sqlite")
    _tenant(store, "acme", 20)
    with store.database.reading() as conn:
        got = store.recall._candidates(conn, Scope(tenant_id="acme", now=NOW), tenant_token("acme"), None, 50, None)
    assert got.items == []
    store.close()


def _vm_steps(conn, run) -> int:
    """SQLite virtual-machine steps ``run`` took (counted every 100): a machine-independent measure of work."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 100)
    try:
        run()
    finally:
        conn.set_progress_handler(None, 0)
    return steps[0]


def test_given_a_time_window_then_the_search_still_starts_from_the_matches_and_costs_no_more(tmp_path):
    """A window must not let the planner start from the episodes' time index and rank the matches
    one episode at a time (hundreds of times the work of the same search without the window)."""
    store = SqliteStore(tmp_path / "db.sqlite")
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(n, f"a{n % 3}"), None) for n in range(600)]))
    shared = (PrivacyClass.PUBLIC, PrivacyClass.INTERNAL)  # what a recall that names no actor may see
    whole = Scope(tenant_id="acme", now=NOW, privacy_classes=shared)
    window = replace(whole, occurred_after=datetime(2026, 11, 1, tzinfo=UTC), occurred_before=NOW.replace(day=21))
    query = "alert gateway rollback invoice"
    with store.database.reading() as conn:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        windowed = store.recall._candidates(conn, window, query, None, 200, None).items
        conn.set_trace_callback(None)
        (fts,) = [s for s in statements if "MATCH" in s and "ORDER BY" in s]
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {fts}")]
        with_window = _vm_steps(conn, lambda: store.recall._candidates(conn, window, query, None, 200, None))
        without = _vm_steps(conn, lambda: store.recall._candidates(conn, whole, query, None, 200, None))
        unwindowed = store.recall._candidates(conn, whole, query, None, 200, None).items
    assert plan[0].startswith("SCAN episodes_search") and "episodes_by_time" not in " ".join(plan)
    assert {c.event_id: c.lexical for c in windowed} == {c.event_id: c.lexical for c in unwindowed}  # all in the window
    assert with_window <= 1.5 * without + 10
    store.close()


def test_given_spanish_texts_then_a_question_finds_them_by_the_stem_of_another_form_of_its_word(tmp_path):
    """Porter's English rules leave "trabajo" and "trabajando" apart; the Spanish stems meet."""
    store = SqliteStore(tmp_path / "db.sqlite")
    _texts(store, [
        "Los sábados trabajo en la panadería de mi tío hasta las tres",
        "Ayer fuimos al cine con los primos de Zamora y cenamos pizza",
        "We worked on the panaderia website with the Zamora team",
    ])  # fmt: skip
    scope = Scope(tenant_id="acme", now=NOW)
    with store.database.reading() as conn:
        found = store.recall._candidates(conn, scope, "¿Cuándo estuvo trabajando en la panadería?", None, 10, None)
        named = store.recall._candidates(conn, scope, "Zamora", None, 10, None)
        asked_by_name = store.recall._candidates(conn, scope, "¿Qué dijo Zamora?", None, 10, None)
        unaccented = store.recall._candidates(conn, scope, "¿Cuando estuvo trabajando en la panaderia?", None, 10, None)
    by_id = {c.event_id: c.lexical for c in found.items}
    assert by_id.get("T0000", 0.0) > 0 and max(by_id, key=by_id.__getitem__) == "T0000"
    assert {c.event_id for c in named.items} == {"T0001", "T0002"}  # a word as written finds it in either language
    assert {c.event_id for c in asked_by_name.items} == {"T0001", "T0002"}  # a Spanish question names it alike
    assert {c.event_id: c.lexical for c in unaccented.items} == by_id  # typed without accents, found alike
    store.close()
