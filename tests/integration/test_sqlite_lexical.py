"""BM25 candidates on the real SQLite store: the in-memory word index against BM25 computed here
from its definition, kept up with writes and erasures of any process."""

import math
import sqlite3
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np

from episodic.adapters.sqlite import word_index
from episodic.adapters.sqlite.store import SqliteStore
from episodic.adapters.sqlite.word_index import _membership, terms
from episodic.application.ports import Changes, NewEpisode, Scope
from episodic.domain.model import Episode, PrivacyClass, Status

NOW = datetime(2026, 11, 20, tzinfo=UTC)
WORDS = ["export", "warehouse", "alert", "gateway", "invoice", "deploy", "rollback", "latency"]


def episode(n: int, actor: str, tenant: str = "acme") -> Episode:
    words = " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 1 + n % 5))
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": actor, "tenantId": tenant, "eventId": f"{tenant}-{n:05d}",
         "occurredAt": NOW.replace(day=1 + n % 20), "recordedAt": NOW, "policyVersion": "v",
         "summary": f"job {n}: {words}", "sourceRefs": ["t:1"], "sourceTrust": "tool_result"}
    )  # fmt: skip


def test_given_texts_then_their_words_are_read_as_sqlites_porter_tokenizer_reads_them():
    """What the store's full-text engine counted before, word for word: the statistics and scores
    recall was tuned with stay what they were."""
    texts = [
        "Ticket T-4471: ship_to address changed; priority_repair set by Dana (café Zürich)",
        "Running the rollback now -- deploys were failing at 03:12, see INV-2024-001.",
        "Los sábados trabajo en la panadería de mi tío\ntrabaj panaderi",
        "He's been cycling to work; the e-mail said it's fine",
    ]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5 (text, tokenize = 'porter unicode61')")
    db.executemany("INSERT INTO f (rowid, text) VALUES (?, ?)", list(enumerate(texts, 1)))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (f, instance)")
    read = {n: [] for n in range(1, len(texts) + 1)}
    for term, doc in db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        read[doc].append(term)
    assert [terms(t) for t in texts] == [read[n] for n in range(1, len(texts) + 1)]


def reference_bm25(texts: dict[str, str], query: list[str]) -> dict[str, float]:
    """BM25 (k1 1.2, b 0.75) over ``texts`` as one collection, written out term by term; words in
    half of the texts or more weigh nothing unless no word weighs anything (then 1e-6 each)."""
    counted = {i: Counter(terms(t)) for i, t in texts.items()}
    n, mean = len(texts), sum(sum(c.values()) for c in counted.values()) / len(texts)
    held = {w: sum(1 for c in counted.values() if w in c) for w in dict.fromkeys(query)}
    idf = {w: math.log((n - d + 0.5) / (d + 0.5)) for w, d in held.items() if d}
    weights = {w: v for w, v in idf.items() if v > 0} or dict.fromkeys(idf, 1e-6)
    scores = {}
    for i, c in counted.items():
        length = sum(c.values())
        s = sum(v * c[w] * 2.2 / (c[w] + 1.2 * (0.25 + 0.75 * length / mean)) for w, v in weights.items() if c[w])
        if s > 0:
            scores[i] = s
    return scores


def _put(store: SqliteStore, episodes: list[Episode]) -> None:
    store.episodes.apply(Changes(tenant_id=episodes[0].tenant_id, put=[NewEpisode(e, None) for e in episodes]))


def _found(store: SqliteStore, scope: Scope, text: str, pool: int = 500) -> dict[str, float]:
    with store.database.reading() as conn:
        return {c.event_id: c.lexical for c in store.recall._candidates(conn, scope, text, None, pool, None).items}


def _close(got: dict[str, float], expected: dict[str, float]) -> bool:
    return got.keys() == expected.keys() and all(abs(got[i] - expected[i]) <= 1e-9 * expected[i] for i in got)


def test_given_a_scope_then_its_best_texts_come_with_the_bm25_of_its_own_texts_best_first(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    eps = [episode(n, f"a{n % 3}") for n in range(600)]
    _put(store, eps)
    scope = Scope(tenant_id="acme", now=NOW, actor_id="a1")
    with store.database.reading() as conn:
        got = store.recall._candidates(conn, scope, "alert gateway rollback", None, 20, None).items
    own = {e.event_id: e.search_text() for e in eps if e.actor_id == "a1"}
    expected = reference_bm25(own, terms("alert gateway rollback"))
    in_scope = sorted((s, i) for i, s in expected.items())
    assert len(got) == 20 and all(abs(c.lexical - expected[c.event_id]) <= 1e-9 * c.lexical for c in got)
    assert [c.lexical for c in got] == sorted((c.lexical for c in got), reverse=True)
    assert abs(got[-1].lexical - in_scope[-20][0]) <= 1e-9 * got[-1].lexical  # the 20 best of the scope, ties aside
    store.close()


def test_given_a_time_window_then_only_texts_inside_it_are_found_with_the_same_scores(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    _put(store, [episode(n, "a0") for n in range(200)])
    whole = Scope(tenant_id="acme", now=NOW)
    window = replace(whole, occurred_after=NOW.replace(day=5), occurred_before=NOW.replace(day=9))
    everywhere, windowed = _found(store, whole, "alert invoice"), _found(store, window, "alert invoice")
    inside = {f"acme-{n:05d}" for n in range(200) if 5 <= 1 + n % 20 < 9}
    assert windowed and set(windowed) == set(everywhere) & inside
    assert all(windowed[i] == everywhere[i] for i in windowed)


def test_given_a_word_in_half_the_texts_or_more_then_it_weighs_nothing_beside_a_rarer_one(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    summaries = [f"meetings about the {'rollback' if n % 10 == 0 else 'export'} plan" for n in range(40)]
    eps = [episode(n, "a0").model_copy(update={"summary": s}) for n, s in enumerate(summaries)]
    _put(store, eps)
    found = _found(store, Scope(tenant_id="acme", now=NOW), "meeting rollback")
    assert sorted(found) == [f"acme-{n:05d}" for n in range(0, 40, 10)]  # "meetings": stemmed alike
    assert _close(found, reference_bm25({e.event_id: e.search_text() for e in eps}, terms("meeting rollback")))


def test_given_a_query_of_common_words_only_then_every_word_still_finds_its_texts(tmp_path):
    """In a small tenant every word may be in half the texts: the tiny scores still rank among
    themselves (recall normalises them), and each word must find its own texts."""
    store = SqliteStore(tmp_path / "db.sqlite")
    summaries = ["invoice sent", "quote paid", "invoice paid late", "unrelated note"]
    _put(store, [episode(n, "a0").model_copy(update={"summary": s}) for n, s in enumerate(summaries)])
    found = _found(store, Scope(tenant_id="acme", now=NOW), "invoice paid")
    assert sorted(found) == ["acme-00000", "acme-00001", "acme-00002"]
    assert found["acme-00002"] > found["acme-00000"]  # both words beat one


def test_given_two_tenants_then_each_is_scored_on_its_own_texts_and_never_finds_the_other(tmp_path):
    """The statistics are the tenant's: another tenant's writes move none of its scores."""
    store = SqliteStore(tmp_path / "db.sqlite")
    small = [episode(n, "a0", "small") for n in range(60)]
    _put(store, small)
    before = _found(store, Scope(tenant_id="small", now=NOW), "alert gateway")
    _put(store, [episode(n, "a0", "large").model_copy(update={"summary": "alert " * (n % 4 + 1)}) for n in range(900)])
    after = _found(store, Scope(tenant_id="small", now=NOW), "alert gateway")
    assert before and after == before
    assert _close(after, reference_bm25({e.event_id: e.search_text() for e in small}, terms("alert gateway")))
    assert all(i.startswith("large-") for i in _found(store, Scope(tenant_id="large", now=NOW), "alert gateway"))


def test_given_texts_the_caller_may_not_read_then_they_move_none_of_its_scores(tmp_path):
    """Another actor's private and sensitive episodes and a write held for review are left out of
    the statistics: a caller could otherwise tell, from its own texts' scores, which words they hold."""
    store = SqliteStore(tmp_path / "db.sqlite")
    mine = [episode(n, "a1").model_copy(update={"summary": f"job {n}: vorpal export {n}"}) for n in range(30)]
    _put(store, mine)
    readers = {
        "tenant-wide": Scope(tenant_id="acme", now=NOW, privacy_classes=(PrivacyClass.PUBLIC, PrivacyClass.INTERNAL)),
        "a1's own": Scope(tenant_id="acme", now=NOW, actor_id="a1"),
    }
    before = {name: _found(store, scope, "vorpal export") for name, scope in readers.items()}
    hidden = [
        episode(100 + n, "a2").model_copy(update={"summary": "vorpal vorpal", "privacy_class": privacy})
        for n, privacy in enumerate([PrivacyClass.PRIVATE, PrivacyClass.SENSITIVE, PrivacyClass.PRIVATE])
    ]
    hidden.append(episode(200, "a1").model_copy(update={"summary": "vorpal", "status": Status.PENDING_REVIEW}))
    _put(store, hidden)
    for name, scope in readers.items():
        after = _found(store, scope, "vorpal export")
        assert len(after) == 30 and _close(after, before[name]), name
    everything = Scope(tenant_id="acme", now=NOW, statuses=(Status.ACTIVE, Status.PENDING_REVIEW))
    assert len(_found(store, everything, "vorpal")) == 34  # an operator's scope holds them, and counts them
    store.close()


def test_given_writes_and_erasures_through_another_process_then_the_next_search_sees_them(tmp_path):
    """Another ``--workers`` process's store on the same file: its writes show up by the rowid
    watermark, its erasures take the erased texts' words out of this process's memory and
    statistics at its next search, without reading the tenant's other texts again."""
    path = tmp_path / "db.sqlite"
    store, other = SqliteStore(path), SqliteStore(path)
    _put(store, [episode(n, "a0") for n in range(30)])
    scope = Scope(tenant_id="acme", now=NOW)
    assert "acme-00100" not in _found(store, scope, "zeppelin")
    _put(other, [episode(100, "a0").model_copy(update={"summary": "zeppelin landed at the gateway"})])
    assert list(_found(store, scope, "zeppelin")) == ["acme-00100"]
    held = store.word_index._tenants["acme"]
    assert "zeppelin" in held.positions
    other.episodes.apply(Changes(tenant_id="acme", delete=["acme-00100"]))
    assert _found(store, scope, "zeppelin") == {}
    assert store.word_index._tenants["acme"] is held and held.live == 30  # removed, not read again
    assert "zeppelin" not in held.positions and "zeppelin" not in held._ids and "zeppelin" not in held._words
    remaining = {f"acme-{n:05d}": episode(n, "a0").search_text() for n in range(30)}
    assert _close(_found(store, scope, "gateway"), reference_bm25(remaining, terms("gateway")))
    other.close()
    store.close()


def test_given_an_erasure_in_this_process_then_its_words_leave_memory_at_once(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    _put(store, [episode(n, "a0") for n in range(10)])
    _put(store, [episode(50, "a0").model_copy(update={"summary": "the quokka file about the gateway"})])
    scope = Scope(tenant_id="acme", now=NOW)
    assert list(_found(store, scope, "quokka")) == ["acme-00050"]
    held = store.word_index._tenants["acme"]
    store.episodes.apply(Changes(tenant_id="acme", delete=["acme-00050"]))
    assert "quokka" not in held.positions and "quokka" not in held._words  # before any search
    erased_from = int(held._starts[10])  # the eleventh text's words, last in the list
    assert set(held._held[erased_from:]) == {-1} and -1 not in held._held[:erased_from]
    assert "acme-00050" not in held.event_ids and held.live == 10
    remaining = {f"acme-{n:05d}": episode(n, "a0").search_text() for n in range(10)}
    assert _close(_found(store, scope, "gateway"), reference_bm25(remaining, terms("gateway")))
    store.close()


class _WriteAfterNewest:
    """Test double of a reader connection: another store writes right after the newest rowid was
    read, before the rows are (two statements, two snapshots)."""

    def __init__(self, conn: sqlite3.Connection, write) -> None:
        self.conn, self.write, self.done = conn, write, False

    def execute(self, sql: str, params=()):
        cursor = self.conn.execute(sql, params)
        if "max(rowid)" in sql and not self.done:
            self.done = True
            self.write()
        return cursor


def test_given_a_write_between_the_newest_rowid_and_the_rows_then_no_text_is_counted_twice(tmp_path):
    path = tmp_path / "db.sqlite"
    store, other = SqliteStore(path), SqliteStore(path)
    _put(store, [episode(n, "a0") for n in range(5)])
    late = episode(7, "a0").model_copy(update={"summary": "the wombat report"})
    with store.database.reading() as conn:
        store.word_index.search(_WriteAfterNewest(conn, lambda: _put(other, [late])), "acme", ["wombat"], [1], 5)
    found = _found(store, Scope(tenant_id="acme", now=NOW), "wombat")
    held = store.word_index._tenants["acme"]
    assert list(found) == ["acme-00007"] and held.live == 6 and len(held.positions["wombat"]) == 1
    other.close()
    store.close()


def test_given_spanish_texts_then_a_question_finds_them_by_the_stem_of_another_form_of_its_word(tmp_path):
    """Porter's English rules leave "trabajo" and "trabajando" apart; the Spanish stems meet."""
    store = SqliteStore(tmp_path / "db.sqlite")
    summaries = [
        "Los sábados trabajo en la panadería de mi tío hasta las tres",
        "Ayer fuimos al cine con los primos de Zamora y cenamos pizza",
        "We worked on the panaderia website with the Zamora team",
    ]
    _put(store, [episode(n, "a0").model_copy(update={"summary": s}) for n, s in enumerate(summaries)])
    scope = Scope(tenant_id="acme", now=NOW)
    by_id = _found(store, scope, "¿Cuándo estuvo trabajando en la panadería?")
    assert by_id.get("acme-00000", 0.0) > 0 and max(by_id, key=by_id.__getitem__) == "acme-00000"
    assert set(_found(store, scope, "Zamora")) == {"acme-00001", "acme-00002"}  # as written, either language
    assert set(_found(store, scope, "¿Qué dijo Zamora?")) == {"acme-00001", "acme-00002"}
    assert _found(store, scope, "¿Cuando estuvo trabajando en la panaderia?") == by_id  # typed without accents
    store.close()


def test_given_more_texts_removed_than_held_then_the_tenants_words_are_read_afresh(tmp_path, monkeypatch):
    from episodic.adapters.sqlite import word_index

    monkeypatch.setattr(word_index, "REMOVED_KEPT", 3)
    store = SqliteStore(tmp_path / "db.sqlite")
    _put(store, [episode(n, "a0") for n in range(10)])
    scope = Scope(tenant_id="acme", now=NOW)
    _found(store, scope, "gateway")
    held = store.word_index._tenants["acme"]
    store.episodes.apply(Changes(tenant_id="acme", delete=[f"acme-{n:05d}" for n in range(6)]))
    assert held.count == 10 and held.live == 4
    remaining = {f"acme-{n:05d}": episode(n, "a0").search_text() for n in range(6, 10)}
    found = _found(store, scope, "gateway")
    assert found and _close(found, reference_bm25(remaining, terms("gateway")))
    fresh = store.word_index._tenants["acme"]
    assert fresh is not held and fresh.count == fresh.live == 4
    store.close()


def test_given_a_scope_spread_over_a_huge_rowid_span_then_it_is_checked_by_sorting_with_the_same_answer(tmp_path):
    """Rowids are the whole database's: a small tenant's scope can span a hundred million of them.
    A table over that span would take a gigabyte a search; the scope is then checked by sorting."""
    store = SqliteStore(tmp_path / "db.sqlite")
    _put(store, [episode(n, "a0") for n in range(40)])
    scope = Scope(tenant_id="acme", now=NOW)
    expected = _found(store, scope, "gateway")
    held = store.word_index._tenants["acme"]
    rowids = held.rowids()
    spread = np.concatenate([rowids, np.array([10**9], dtype=np.int64)])  # one far rowid, held by nothing
    assert _membership(rowids) == "table" and _membership(spread) == "sort"
    got = dict(held.best(terms("gateway"), spread, 500))
    assert got.keys() == expected.keys()
    assert all(abs(got[i] - expected[i]) <= 1e-9 * expected[i] for i in got)
    store.close()


def test_given_texts_written_by_any_process_then_on_new_texts_hears_of_their_summaries(tmp_path, monkeypatch):
    """What names are embedded ahead from (``on_new_texts``): the summaries of another process's new
    rows when a search first reads them (oldest first, the newest ``NEW_TEXTS_TOLD`` of a read, each
    read once, another tenant's never); this process's own writes at once, and again when read."""
    monkeypatch.setattr(word_index, "NEW_TEXTS_TOLD", 4)
    path = tmp_path / "db.sqlite"
    told: list[tuple[str, list[str]]] = []
    store = SqliteStore(path, on_new_texts=lambda tenant, texts: told.append((tenant, list(texts))))
    other = SqliteStore(path)
    _put(other, [episode(n, "a0") for n in range(6)])
    _put(other, [episode(50, "a0", tenant="globex")])
    scope = Scope(tenant_id="acme", now=NOW)
    _found(store, scope, "gateway")
    assert told == [("acme", [episode(n, "a0").summary for n in range(2, 6)])]  # the newest four
    _found(store, scope, "gateway")
    assert len(told) == 1  # nothing new
    _put(store, [episode(100, "a0").model_copy(update={"summary": "Kirsty landed at the gateway"})])
    assert told[1:] == [("acme", ["Kirsty landed at the gateway"])]  # at once
    _found(store, scope, "gateway")
    assert told[2:] == [("acme", ["Kirsty landed at the gateway"])]
    other.close()
    store.close()


def test_given_a_batch_written_as_one_set_an_episode_then_on_new_texts_hears_once_a_tenant_of_the_active_ones(
    tmp_path,
):
    told: list[tuple[str, list[str]]] = []
    store = SqliteStore(tmp_path / "db.sqlite", on_new_texts=lambda tenant, texts: told.append((tenant, list(texts))))
    held = episode(3, "a0").model_copy(update={"status": Status.PENDING_REVIEW, "summary": "Held for Ingrid"})
    sets = [Changes(tenant_id="acme", put=[NewEpisode(e, None)]) for e in (episode(1, "a0"), episode(2, "a0"), held)]
    store.episodes.apply_many(sets)
    assert told == [("acme", [episode(1, "a0").summary, episode(2, "a0").summary])]  # never a held one
    store.close()


def test_given_an_erasure_in_this_process_then_on_erasures_hears_of_the_tenant_at_once(tmp_path):
    """What drops the names kept and offered for a tenant: this process's own erasure says so at once,
    not at the next search."""
    heard: list[str] = []
    store = SqliteStore(tmp_path / "db.sqlite", on_erasures=heard.append)
    _put(store, [episode(n, "a0") for n in range(3)])
    assert heard == []
    store.episodes.apply(Changes(tenant_id="acme", delete=["acme-00001"]))
    assert heard == ["acme"]
    store.close()
