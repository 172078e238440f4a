"""The SQLite store's vector index: kept beside the database, emptied of what an erasure removes."""

from datetime import UTC, datetime

import numpy as np

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope
from episodic.domain.model import Episode

NOW = datetime(2026, 11, 20, tzinfo=UTC)
DIM = 16


def vectors(count: int) -> np.ndarray:
    rng = np.random.default_rng(4)
    v = rng.standard_normal((count, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def episode(n: int) -> Episode:
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": "a", "tenantId": "acme", "eventId": f"E{n:04d}",
         "occurredAt": NOW, "recordedAt": NOW, "policyVersion": "v", "summary": f"observation {n}",
         "sourceRefs": ["t:1"], "sourceTrust": "tool_result"}
    )  # fmt: skip


def filled(path, count: int) -> tuple[SqliteStore, np.ndarray]:
    store = SqliteStore(path, embedder="m", ann_threshold=200)
    vs = vectors(count)
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(n), vs[n], "m") for n in range(count)]))
    return store, vs


def nearest(store: SqliteStore, query: np.ndarray) -> list[str]:
    return [c.event_id for c in store.recall.candidates(Scope(tenant_id="acme", now=NOW), None, query, 5).items]


def test_given_an_erased_episode_then_its_vector_leaves_the_index_and_memory_and_restarts_skip_it(tmp_path):
    store, vs = filled(tmp_path / "db.sqlite", 400)
    nearest(store, vs[0])
    assert store.vector_search.wait_for_indexing(timeout=60)
    assert nearest(store, vs[7])[0] == "E0007"
    store.episodes.apply(Changes(tenant_id="acme", delete=["E0007"]))

    tenant = store.vector_search._tenants[("acme", "m")]
    rowid = 8  # the eighth row written
    assert rowid not in tenant.index.assignments()[0]
    assert not tenant.matrix[tenant.positions(np.array([rowid]))].any()
    assert "E0007" not in nearest(store, vs[7])
    store.close()

    (saved,) = (tmp_path / "db.sqlite.ann").glob("*.npz")
    reopened = SqliteStore(tmp_path / "db.sqlite", embedder="m", ann_threshold=200)
    nearest(reopened, vs[1])
    assert reopened.vector_search.wait_for_indexing(timeout=60)
    assert reopened.vector_search._tenants[("acme", "m")].index.size == 399
    assert nearest(reopened, vs[1])[0] == "E0001" and saved.exists()
    reopened.close()


def test_given_large_and_small_tenants_when_the_store_warms_up_then_only_the_large_ones_are_read_ahead(tmp_path):
    store, vs = filled(tmp_path / "db.sqlite", 300)
    small = episode(999).model_copy(update={"tenant_id": "globex"})
    store.episodes.apply(Changes(tenant_id="globex", put=[NewEpisode(small, vs[0], "m")]))
    store.close()

    reopened = SqliteStore(tmp_path / "db.sqlite", embedder="m", ann_threshold=200)
    reopened.recall.warm_up(DIM, min_episodes=100).join(timeout=60)
    assert set(reopened.vector_search._tenants) == {("acme", "m")}  # globex waits for its first recall
    assert reopened.vector_search._tenants[("acme", "m")].count == 300
    assert reopened.vector_search.wait_for_indexing(timeout=60)  # and the large tenant's index was started
    assert reopened.vector_search._tenants[("acme", "m")].index is not None
    assert nearest(reopened, vs[5])[0] == "E0005"
    reopened.close()


def test_given_an_erasure_through_another_process_then_the_vector_leaves_this_ones_memory_at_its_next_search(
    tmp_path,
):
    """Another ``--workers`` process's store on the same file erases an episode: this process held
    its vector (and its index cell) and lets go of both at its next search of the tenant."""
    store, vs = filled(tmp_path / "db.sqlite", 400)
    other = SqliteStore(tmp_path / "db.sqlite", embedder="m", ann_threshold=200)
    nearest(store, vs[0])
    assert store.vector_search.wait_for_indexing(timeout=60)
    tenant = store.vector_search._tenants[("acme", "m")]
    rowid = 8  # E0007, the eighth row written
    assert tenant.matrix[tenant.positions(np.array([rowid]))].any()

    other.episodes.apply(Changes(tenant_id="acme", delete=["E0007"]))
    assert tenant.matrix[tenant.positions(np.array([rowid]))].any()  # not this process's erasure yet

    assert "E0007" not in nearest(store, vs[7])
    assert not tenant.matrix[tenant.positions(np.array([rowid]))].any()
    assert rowid not in tenant.index.assignments()[0]
    assert tenant.matrix[tenant.positions(np.array([9]))].any()  # the others stay
    other.close()
    store.close()


def test_given_an_erasure_by_any_process_then_the_next_search_tells_whose_episodes_went(tmp_path):
    """What an embedder keeps for a tenant (its questions, the names its recalls widened with) is
    dropped once its episodes are erased, whichever process erased them: the store tells whom at
    its next search of the tenant, and only when the tenant's deletes moved (this process's own
    erasure also at once)."""
    told: list[str] = []
    path = tmp_path / "db.sqlite"
    filled(path, 20)[0].close()
    store = SqliteStore(path, embedder="m", on_erasures=told.append)
    other = SqliteStore(path, embedder="m")
    query = vectors(20)[3]
    nearest(store, query)
    nearest(store, query)
    assert told == []  # nothing deleted since the first search
    other.episodes.apply(Changes(tenant_id="acme", delete=["E0003"]))
    assert told == []  # heard of at the next search, not before
    nearest(store, query)
    assert told == ["acme"]
    nearest(store, query)
    store.episodes.apply(Changes(tenant_id="acme", delete=["E0004"]))  # this process's own erasure: at once
    assert told == ["acme", "acme"]
    nearest(store, query)
    assert told == ["acme", "acme", "acme"]  # and at the search (dropping twice drops nothing more)
    other.close()
    store.close()
