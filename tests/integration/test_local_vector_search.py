"""Local vector search on real SQLite + numpy + faiss, with synthetic unit vectors."""

import sqlite3

import numpy as np
import pytest

from episodic.adapters.local.vectors import VectorSearch

DIM = 32


@pytest.fixture
def db(tmp_path):
    conn = sqlite3.connect(tmp_path / "v.db")
    conn.execute("CREATE TABLE episodes (rowid INTEGER PRIMARY KEY, tenant_id TEXT, embedder TEXT, vector BLOB)")
    yield conn
    conn.close()


def add(conn, count, tenant="acme", embedder="m1", seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    conn.executemany(
        "INSERT INTO episodes (tenant_id, embedder, vector) VALUES (?, ?, ?)",
        [(tenant, embedder, v.tobytes()) for v in vectors],
    )
    conn.commit()
    return vectors


def all_rowids(conn, tenant="acme"):
    return np.array([r[0] for r in conn.execute("SELECT rowid FROM episodes WHERE tenant_id = ?", (tenant,))])


def test_given_a_small_scope_when_searched_then_exact_top_k_is_returned(db):
    vectors = add(db, 500)
    search = VectorSearch(ann_threshold=10_000)
    scope = all_rowids(db)[::2]  # every other row is in scope
    ids, sims, strategy = search.search(db, "acme", "m1", scope, vectors[0], 5)
    brute = sorted(scope, key=lambda r: -float(vectors[r - 1] @ vectors[0]))[:5]
    assert strategy == "exact" and list(ids) == brute
    assert sims[0] == pytest.approx(1.0, abs=1e-5)


def test_given_a_large_scope_when_searched_then_filtered_hnsw_agrees_with_exact(db):
    vectors = add(db, 3000)
    scope = all_rowids(db)[:2500]
    ann = VectorSearch(ann_threshold=1000)
    exact = VectorSearch(ann_threshold=10**9)
    agree = 0
    for q in range(20):
        query = vectors[q * 7]
        ann_ids, _, strategy = ann.search(db, "acme", "m1", scope, query, 10)
        exact_ids, _, _ = exact.search(db, "acme", "m1", scope, query, 10)
        assert strategy == "hnsw" and set(ann_ids) <= set(scope)
        agree += len(set(ann_ids) & set(exact_ids))
    assert agree / 200 >= 0.9  # recall@10 of the filtered graph walk


def test_given_a_filter_too_selective_for_the_graph_when_searched_then_exact_search_answers(db):
    vectors = add(db, 20_000)
    scope = all_rowids(db)[::20]  # 1,000 rows scattered through a 20,000-node graph
    search = VectorSearch(ann_threshold=1000, ef_search=16)
    ids, _, strategy = search.search(db, "acme", "m1", scope, vectors[3], 10)
    assert strategy == "hnsw" and len(ids) == 10
    ids, _, strategy = search.search(db, "acme", "m1", scope, vectors[3], 1000)
    assert strategy == "exact" and sorted(ids) == sorted(scope)  # the graph walk found fewer than k


def test_given_rows_written_by_another_connection_when_searched_then_they_are_found(db, tmp_path):
    add(db, 100)
    search = VectorSearch()
    search.search(db, "acme", "m1", all_rowids(db), np.ones(DIM, dtype=np.float32) / DIM**0.5, 3)
    other = sqlite3.connect(tmp_path / "v.db")
    fresh = add(other, 1, seed=99)
    other.close()
    ids, _, _ = search.search(db, "acme", "m1", all_rowids(db), fresh[0], 1)
    assert list(ids) == [101]


def test_given_vectors_of_another_model_or_tenant_when_searched_then_they_are_never_mixed(db):
    add(db, 50, embedder="m1")
    other_model = add(db, 50, embedder="m2", seed=5)
    add(db, 50, tenant="globex", seed=6)
    search = VectorSearch()
    ids, _, _ = search.search(db, "acme", "m1", all_rowids(db), other_model[0], 100)
    assert len(ids) == 50 and all(1 <= r <= 50 for r in ids)
