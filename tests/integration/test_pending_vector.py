"""A query vector still being computed, on the real SQLite store: the index searches by words
before it reads the vector (so the model runs meanwhile), finds what it finds with the vector
in hand, and goes on by words alone when the embedder failed."""

from __future__ import annotations

import numpy as np

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, PendingVector, Scope
from episodic.domain.errors import StorageError
from tests.support.stored import NOW, episode

MODEL = "m1"


def unit(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return (vector / np.linalg.norm(vector)).tolist()


def stocked(tmp_path) -> SqliteStore:
    store = SqliteStore(tmp_path / "db.sqlite", embedder=MODEL)
    put = [NewEpisode(episode(n), unit(n), MODEL) for n in range(1, 9)]
    store.episodes.apply(Changes(tenant_id="acme", put=put))
    return store


def test_given_a_pending_vector_when_searched_then_words_come_first_and_the_result_is_the_same(tmp_path, monkeypatch):
    store = stocked(tmp_path)
    scope = Scope(tenant_id="acme", now=NOW)
    text = episode(3).summary
    order: list[str] = []
    by_words = store.word_index.search

    def lexical(*args, **kwargs):
        order.append("words")
        return by_words(*args, **kwargs)

    def wait() -> list[float]:
        order.append("vector")
        return unit(5)

    monkeypatch.setattr(store.word_index, "search", lexical)
    pending = PendingVector(wait)
    with_pending = store.recall.candidates(scope, text, pending, 5, embedder=MODEL).items
    assert order == ["words", "vector"] and pending.value() == unit(5)  # waited for once, after the words
    assert with_pending == store.recall.candidates(scope, text, unit(5), 5, embedder=MODEL).items
    assert any(c.lexical > 0 for c in with_pending) and any(c.semantic > 0 for c in with_pending)


def test_given_the_embedder_failing_when_searched_then_it_is_by_words_alone_and_the_failure_is_kept(tmp_path):
    store = stocked(tmp_path)
    scope = Scope(tenant_id="acme", now=NOW)

    def wait() -> list[float]:
        raise StorageError("the model is unavailable")

    pending = PendingVector(wait)
    found = store.recall.candidates(scope, episode(3).summary, pending, 5, embedder=MODEL).items
    assert pending.failed and pending.value() is None
    assert found == store.recall.candidates(scope, episode(3).summary, None, 5, embedder=MODEL).items
    assert found and not any(c.semantic for c in found)  # no cosine was computed
