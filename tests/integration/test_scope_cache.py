"""Scopes kept between recalls, on the real SQLite store: stale the moment anything changes."""

import sqlite3
from datetime import timedelta

from episodic.adapters.sqlite.scope_cache import ScopeCache
from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, Scope, StatusChange
from episodic.domain.model import Status
from tests.support.stored import NOW, episode, put, rowid


class Admissions:
    """Counts the scope queries a connection runs (SQLite's own trace hook)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.count = self.with_expiries = 0
        conn.set_trace_callback(self._traced)

    def _traced(self, sql: str) -> None:
        self.count += "group_concat" in sql
        self.with_expiries += "group_concat(ifnull" in sql  # read to be kept


def test_given_an_unchanged_tenant_when_a_scope_is_admitted_again_then_the_kept_answer_is_used(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(50)])
    cache, scope = ScopeCache(min_rows=10), Scope(tenant_id="acme", now=NOW)
    with store.database.reading() as conn:
        seen = Admissions(conn)
        first = cache.rowids(conn, scope)
        admissions = seen.count
        second = cache.rowids(conn, Scope(tenant_id="acme", now=NOW + timedelta(seconds=5)))
    assert len(first) == 50 and sorted(first) == sorted(second) and admissions >= 1 and seen.count == admissions
    store.close()


def test_given_writes_status_changes_deletions_and_other_processes_then_the_kept_answer_is_never_stale(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(50)])
    put(store, [episode(n, tenant="globex") for n in range(100, 150)])
    cache, scope = ScopeCache(min_rows=10), Scope(tenant_id="acme", now=NOW)

    def admitted() -> set[int]:
        with store.database.reading() as conn:
            return set(cache.rowids(conn, scope).tolist())

    before = admitted()
    archived, erased = rowid(store, "E00001"), rowid(store, "E00002")
    put(store, [episode(60)])
    added = rowid(store, "E00060")
    assert admitted() == before | {added}  # a new episode
    store.episodes.apply(Changes(tenant_id="acme", status=[StatusChange("E00001", Status.ACTIVE, Status.ARCHIVED)]))
    assert admitted() == before - {archived} | {added}
    store.episodes.apply(Changes(tenant_id="acme", delete=["E00002"]))
    assert admitted() == before - {archived, erased} | {added}
    other = SqliteStore(tmp_path / "db.sqlite")  # another process's store on the same file
    put(other, [episode(61)])
    other.close()
    assert rowid(store, "E00061") in admitted()
    store.close()


def test_given_a_write_to_another_tenant_then_the_kept_answer_stays_valid(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(50)])
    cache, scope = ScopeCache(min_rows=10), Scope(tenant_id="acme", now=NOW)
    with store.database.reading() as conn:
        seen = Admissions(conn)
        cache.rowids(conn, scope)
        admissions = seen.count
        put(store, [episode(n, tenant="globex") for n in range(100, 110)])
        cache.rowids(conn, scope)
    assert seen.count == admissions
    store.close()


def test_given_an_episode_expiring_between_two_recalls_then_it_leaves_without_any_write(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(20)] + [episode(99, expires=NOW + timedelta(minutes=1))])
    cache = ScopeCache(min_rows=10)
    late = rowid(store, "E00099")
    with store.database.reading() as conn:
        seen = Admissions(conn)
        assert late in cache.rowids(conn, Scope(tenant_id="acme", now=NOW))
        admissions = seen.count
        assert late not in cache.rowids(conn, Scope(tenant_id="acme", now=NOW + timedelta(minutes=2)))
    assert seen.count == admissions  # no SQL: the kept expiry did it
    store.close()


def test_given_a_small_scope_asked_for_once_then_it_is_admitted_with_one_query_and_not_kept(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(5)] + [episode(9, expires=NOW - timedelta(minutes=1))])
    cache = ScopeCache(min_rows=10)
    with store.database.reading() as conn:
        seen = Admissions(conn)
        assert len(cache.rowids(conn, Scope(tenant_id="acme", now=NOW))) == 5  # the expired one left out
    assert seen.count == 1 and not seen.with_expiries and not cache._small
    store.close()


def test_given_a_small_scope_asked_again_with_no_write_between_then_it_is_kept(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(5)] + [episode(9, expires=NOW + timedelta(minutes=1))])
    cache, late = ScopeCache(min_rows=10), rowid(store, "E00009")
    with store.database.reading() as conn:
        seen = Admissions(conn)
        first = cache.rowids(conn, Scope(tenant_id="acme", now=NOW))
        second = cache.rowids(conn, Scope(tenant_id="acme", now=NOW + timedelta(seconds=5)))
        assert seen.count == 2 and seen.with_expiries == 1  # the second read it to keep it
        third = cache.rowids(conn, Scope(tenant_id="acme", now=NOW + timedelta(minutes=2)))
    assert seen.count == 2  # the third read no scope
    assert sorted(first) == sorted(second) and late in second and sorted(third) == sorted(set(first) - {late})
    assert not cache._large  # kept apart from the large ones
    put(store, [episode(60)])
    with store.database.reading() as conn:
        assert rowid(store, "E00060") in cache.rowids(conn, Scope(tenant_id="acme", now=NOW))  # never stale
    store.close()


def test_given_writes_between_the_recalls_of_a_small_scope_then_each_is_admitted_with_one_query(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(5)])
    cache = ScopeCache(min_rows=10)
    with store.database.reading() as conn:
        seen = Admissions(conn)
        for n in range(4):
            assert len(cache.rowids(conn, Scope(tenant_id="acme", now=NOW))) == 5 + n
            put(store, [episode(100 + n)])
    assert seen.count == 4 and not seen.with_expiries and not cache._small
    store.close()


def test_given_a_kept_small_scope_that_grows_large_then_it_is_kept_once_among_the_large(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n) for n in range(5)])
    cache, scope = ScopeCache(min_rows=10), Scope(tenant_id="acme", now=NOW)
    with store.database.reading() as conn:
        cache.rowids(conn, scope)
        cache.rowids(conn, scope)
    assert len(cache._small) == 1 and not cache._large
    put(store, [episode(n) for n in range(10, 20)])
    with store.database.reading() as conn:
        assert len(cache.rowids(conn, scope)) == 15
    assert len(cache._large) == 1 and not cache._small
    store.close()


def test_given_small_scopes_or_many_scopes_then_only_the_large_and_recent_are_kept(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite")
    put(store, [episode(n, actor=f"actor-{n % 5}") for n in range(100)])
    cache = ScopeCache(capacity=2, min_rows=15)
    with store.database.reading() as conn:
        for actor in ("actor-0", "actor-1", "actor-2"):
            cache.rowids(conn, Scope(tenant_id="acme", now=NOW, actor_id=actor))  # 20 rows each
        cache.rowids(conn, Scope(tenant_id="acme", now=NOW, actor_id="nobody"))
    assert [s.actor_id for s in cache._large] == ["actor-1", "actor-2"]  # actor-0 pushed out
    assert not cache._small  # "nobody" too small, and asked for once
    store.close()
