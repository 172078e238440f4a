"""Local vector search on real SQLite + numpy + faiss, with synthetic unit vectors."""

import sqlite3
import threading

import numpy as np
import pytest

from episodic.adapters.vectors import ann
from episodic.adapters.vectors.exact import Mix
from episodic.adapters.vectors.index import VectorSearch
from episodic.adapters.vectors.rowid_slots import MIN_ROWS

DIM = 32


@pytest.fixture
def db(tmp_path):
    conn = sqlite3.connect(tmp_path / "v.db")
    conn.execute("CREATE TABLE episodes (rowid INTEGER PRIMARY KEY, tenant_id TEXT, embedder TEXT, vector BLOB)")
    yield conn
    conn.close()


def clustered(count, seed):
    """Unit vectors around 40 centres, like embeddings of text on a few topics."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(1).standard_normal((40, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, count)] + 0.4 * rng.standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def add(conn, count, tenant="acme", embedder="m1", seed=0):
    vectors = clustered(count, seed)
    conn.executemany(
        "INSERT INTO episodes (tenant_id, embedder, vector) VALUES (?, ?, ?)",
        [(tenant, embedder, v.tobytes()) for v in vectors],
    )
    conn.commit()
    return vectors


def all_rowids(conn, tenant="acme"):
    return np.array([r[0] for r in conn.execute("SELECT rowid FROM episodes WHERE tenant_id = ?", (tenant,))])


def ready(search, db, scope, query, k=10):
    """Search once (which starts the index in the background), wait for it, search again."""
    search.search(db, "acme", "m1", scope, query, k)
    assert search.wait_for_indexing(timeout=60)
    return search.search(db, "acme", "m1", scope, query, k)


def test_given_a_small_scope_when_searched_then_exact_top_k_is_returned(db):
    vectors = add(db, 500)
    search = VectorSearch(ann_threshold=10_000)
    scope = all_rowids(db)[::2]  # every other row is in scope
    ids, sims, strategy = search.search(db, "acme", "m1", scope, vectors[0], 5)
    brute = sorted(scope, key=lambda r: -float(vectors[r - 1] @ vectors[0]))[:5]
    assert strategy == "exact" and list(ids) == brute
    assert sims[0] == pytest.approx(1.0, abs=1e-5)


def test_given_a_large_tenant_among_others_when_a_small_scope_is_searched_then_its_rows_are_found_by_table(db):
    """A tenant of ``MIN_ROWS`` or more finds its scope's rows through the rowid table (written
    in two rounds, with another tenant's rows between): the same top-k as brute force, and an
    erasure zeroes the right row."""
    first = add(db, MIN_ROWS // 2)
    add(db, 3000, tenant="globex", seed=5)
    second = add(db, MIN_ROWS // 2 + 100, seed=9)
    vectors = np.concatenate([first, second])
    rowids = all_rowids(db)
    search = VectorSearch(ann_threshold=10 * MIN_ROWS)
    scope = rowids[np.random.default_rng(2).choice(len(rowids), 800, replace=False)]
    ids, _, strategy = search.search(db, "acme", "m1", scope, vectors[-1], 10)
    tenant = search._tenants[("acme", "m1")]
    assert tenant._slots.active
    by_rowid = dict(zip(rowids.tolist(), vectors, strict=True))
    brute = sorted(scope.tolist(), key=lambda r: -float(by_rowid[r] @ vectors[-1]))[:10]
    assert strategy == "exact" and list(ids) == brute
    search.forget("acme", [int(rowids[-1])])
    assert not tenant.matrix[-1].any() and tenant.matrix[-2].any()


def test_given_a_large_tenant_when_first_searched_then_exact_answers_while_the_index_is_built_aside(db):
    vectors = add(db, 3000)
    search = VectorSearch(ann_threshold=1000)
    scope = all_rowids(db)
    _, _, first = search.search(db, "acme", "m1", scope, vectors[0], 10)
    assert first == "exact"  # the index is not waited for
    assert search.wait_for_indexing(timeout=60)
    _, _, later = search.search(db, "acme", "m1", scope, vectors[0], 10)
    assert later == "ivf"


def test_given_a_large_scope_when_searched_then_the_filtered_index_agrees_with_exact(db):
    vectors = add(db, 3000)
    scope = all_rowids(db)[::3]  # a third of the tenant, scattered
    ann_search = VectorSearch(ann_threshold=500)
    exact = VectorSearch(ann_threshold=10**9)
    ready(ann_search, db, scope, vectors[0])
    agree = 0
    for q in range(20):
        query = vectors[q * 7 + 1]
        ann_ids, _, strategy = ann_search.search(db, "acme", "m1", scope, query, 10)
        exact_ids, _, _ = exact.search(db, "acme", "m1", scope, query, 10)
        assert strategy == "ivf" and set(ann_ids) <= set(scope)
        agree += len(set(ann_ids) & set(exact_ids))
    assert agree / 200 >= 0.95


@pytest.mark.parametrize("threshold", [10**9, 500])
def test_given_several_queries_when_searched_together_then_each_gets_what_it_gets_alone(db, threshold):
    """One pass for several queries (a recall's two rounds) answers each as its own search does,
    exact or through the index."""
    vectors = add(db, 3000)
    scope = all_rowids(db)[::2]
    search = VectorSearch(ann_threshold=threshold)
    ready(search, db, scope, vectors[0])
    queries = [vectors[5], vectors[900], vectors[2000]]
    together = search.search_many(db, "acme", "m1", scope, queries, 10)
    for query, (ids, sims, strategy) in zip(queries, together, strict=True):
        alone_ids, alone_sims, alone_strategy = search.search(db, "acme", "m1", scope, query, 10)
        assert strategy == alone_strategy == ("exact" if threshold > 3000 else "ivf")
        assert list(ids) == list(alone_ids)
        assert sims == pytest.approx(alone_sims, abs=1e-5)


@pytest.mark.parametrize("threshold", [10**9, 500])
@pytest.mark.parametrize("ahead", [True, False])
def test_given_a_query_leaning_on_another_when_searched_then_it_finds_what_its_vector_finds(db, threshold, ahead):
    """A second round's query given as the first plus a share of the names' vector finds what that
    sum, made unit length, finds as a query of its own: scored from cosines (the names' measured
    when the scope was placed, or in the search) when searched exactly, as the vector through the index."""
    vectors = add(db, 3000)
    scope = all_rowids(db)[::2]
    search = VectorSearch(ann_threshold=threshold)
    ready(search, db, scope, vectors[0])
    question, names = vectors[5], vectors[2000]
    placed = search.place(db, "acme", "m1", scope, names if ahead else None)
    mixed = Mix(0, names, 0.5, placed.toward_cosines if placed is not None else None)
    _, (ids, sims, strategy) = search.search_many(db, "acme", "m1", scope, [question, mixed], 10, placed)
    summed = question + 0.5 * names
    alone_ids, alone_sims, alone_strategy = search.search(db, "acme", "m1", scope, summed / np.linalg.norm(summed), 10)
    assert strategy == alone_strategy == ("exact" if threshold > 3000 else "ivf")
    assert (placed is not None and placed.toward_cosines is not None) == (ahead and threshold > 3000)
    assert list(ids) == list(alone_ids)
    assert sims == pytest.approx(alone_sims, abs=1e-5)


def test_given_rows_written_after_the_index_was_built_when_searched_then_the_index_finds_them(db, tmp_path):
    add(db, 3000)
    search = VectorSearch(ann_threshold=1000)
    ready(search, db, all_rowids(db), clustered(1, 5)[0])
    other = sqlite3.connect(tmp_path / "v.db")
    fresh = add(other, 1, seed=99)
    other.close()
    ids, _, strategy = search.search(db, "acme", "m1", all_rowids(db), fresh[0], 1)
    assert strategy == "ivf" and list(ids) == [3001]


def test_given_probed_cells_holding_fewer_than_k_of_the_scope_when_searched_then_exact_search_answers(db, monkeypatch):
    vectors = add(db, 3000)
    scope = all_rowids(db)
    search = VectorSearch(ann_threshold=1000)
    ready(search, db, scope, vectors[0])
    monkeypatch.setattr(ann, "MIN_PROBES", 1)
    monkeypatch.setattr(ann, "IN_SCOPE_SCANNED", 1)  # one cell of ~40 rows, half of them in scope
    ids, _, strategy = search.search(db, "acme", "m1", scope[::2], vectors[3], 100)
    assert strategy == "exact" and len(ids) == 100 and set(ids) <= set(scope[::2])


def test_given_a_persisted_index_when_a_process_starts_then_it_is_loaded_not_learned_again(db, tmp_path, monkeypatch):
    vectors = add(db, 3000)
    directory = tmp_path / "v.db.ann"
    first = VectorSearch(ann_threshold=1000, directory=directory)
    ready(first, db, all_rowids(db), vectors[0])
    (saved,) = directory.glob("*.npz")
    with np.load(saved) as data:
        assert sorted(data.files) == ["cells", "centres", "embedder", "format", "rowids"]  # no vectors
        assert len(data["rowids"]) == 3000
    db.execute("DELETE FROM episodes WHERE rowid = 5")  # erased after the save
    db.commit()
    add(db, 10, seed=3)  # written after the save

    def no_learning(*_):
        raise AssertionError("the cells were learned again")

    monkeypatch.setattr(ann.CellIndex, "train", classmethod(no_learning))
    second = VectorSearch(ann_threshold=1000, directory=directory)
    _, _, strategy = ready(second, db, all_rowids(db), vectors[0])
    index = second._tenants[("acme", "m1")].index
    assert strategy == "ivf" and index.size == 3000 - 1 + 10  # the erased row skipped, the new ones added
    assert 5 not in index.assignments()[0]
    exact = VectorSearch(ann_threshold=10**9)
    agree = 0
    for query in [*vectors[10:20], *clustered(10, 3)]:
        got, _, _ = second.search(db, "acme", "m1", all_rowids(db), query, 10)
        want, _, _ = exact.search(db, "acme", "m1", all_rowids(db), query, 10)
        agree += len(set(got) & set(want))
    assert agree / 200 >= 0.95


def test_given_a_persisted_index_of_another_model_or_damaged_when_loaded_then_cells_are_learned_afresh(db, tmp_path):
    vectors = add(db, 3000)
    directory = tmp_path / "v.db.ann"
    ready(VectorSearch(ann_threshold=1000, directory=directory), db, all_rowids(db), vectors[0])
    (saved,) = directory.glob("*.npz")
    assert ann.load(saved, "m2", DIM) is None and ann.load(saved, "m1", DIM + 1) is None
    saved.write_bytes(b"not an index")
    assert ann.load(saved, "m1", DIM) is None
    _, _, strategy = ready(VectorSearch(ann_threshold=1000, directory=directory), db, all_rowids(db), vectors[0])
    assert strategy == "ivf" and ann.load(saved, "m1", DIM) is not None  # learned and written again


def test_given_an_erasure_when_forgotten_then_no_copy_of_the_vector_stays_in_memory(db):
    vectors = add(db, 3000)
    search = VectorSearch(ann_threshold=1000)
    ready(search, db, all_rowids(db), vectors[0])
    search.forget("acme", [8])
    ids, _, strategy = search.search(db, "acme", "m1", all_rowids(db), vectors[7], 10)
    tenant = search._tenants[("acme", "m1")]
    assert strategy == "ivf" and 8 not in ids and 8 not in tenant.index.assignments()[0]  # gone from the index
    assert not tenant.matrix[tenant.positions(np.array([8]))].any()  # and zeroed in the matrix


def test_given_re_embedding_when_invalidated_then_persisted_indexes_are_deleted(db, tmp_path):
    vectors = add(db, 3000)
    directory = tmp_path / "v.db.ann"
    search = VectorSearch(ann_threshold=1000, directory=directory)
    ready(search, db, all_rowids(db), vectors[0])
    assert list(directory.glob("*.npz"))
    search.invalidate()
    assert not list(directory.glob("*.npz"))


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


def test_given_an_erasure_while_the_index_is_prepared_then_the_new_index_does_not_hold_it(db, monkeypatch):
    vectors = add(db, 3000)
    search = VectorSearch(ann_threshold=1000)
    learning, release = threading.Event(), threading.Event()
    train = ann.CellIndex.train.__func__

    def slow_train(cls, matrix):
        learning.set()
        release.wait(30)
        return train(cls, matrix)

    monkeypatch.setattr(ann.CellIndex, "train", classmethod(slow_train))
    search.search(db, "acme", "m1", all_rowids(db), vectors[0], 10)  # starts preparing from a snapshot
    assert learning.wait(30)
    search.forget("acme", [8])
    release.set()
    assert search.wait_for_indexing(timeout=60)
    assert 8 not in search._tenants[("acme", "m1")].index.assignments()[0]


class SlowReadConnectionDouble:
    """A test double of a SQLite connection whose read of vector blobs waits for ``release``:
    one tenant's long first load (seconds at a million rows) held open on purpose."""

    def __init__(self, conn, release: threading.Event) -> None:
        self.conn, self.release, self.reading = conn, release, threading.Event()

    def execute(self, sql, params=()):
        if "SELECT rowid, vector" in sql:
            self.reading.set()
            assert self.release.wait(timeout=30)
        return self.conn.execute(sql, params)


def test_given_one_tenant_loading_its_vectors_when_another_is_searched_then_it_does_not_wait(tmp_path):
    path = tmp_path / "v.db"
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE episodes (rowid INTEGER PRIMARY KEY, tenant_id TEXT, embedder TEXT, vector BLOB)")
    vectors = add(setup, 200, tenant="big")
    add(setup, 50, tenant="small", seed=3)
    setup.close()
    search, release = VectorSearch(ann_threshold=10_000), threading.Event()
    slow = SlowReadConnectionDouble(sqlite3.connect(path, check_same_thread=False), release)
    loading = threading.Thread(target=search.search, args=(slow, "big", "m1", np.arange(1, 201), vectors[0], 5))
    loading.start()
    try:
        assert slow.reading.wait(timeout=30)
        answered: list[str] = []
        other = sqlite3.connect(path, check_same_thread=False)
        small = threading.Thread(
            target=lambda: answered.append(search.search(other, "small", "m1", np.arange(201, 251), vectors[0], 5)[2])
        )
        small.start()
        small.join(timeout=10)
        assert answered == ["exact"], "a tenant's search waited for another tenant's load"
        assert loading.is_alive()  # the big tenant is still loading
    finally:
        release.set()
        loading.join(timeout=30)
