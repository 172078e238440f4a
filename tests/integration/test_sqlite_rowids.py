"""Rowids of the local store are never reused, on the real SQLite store: the vector cache
follows the table by rowid, so a reused rowid would hide a new episode from recall by meaning
and, in another process still holding the erased row's vector, rank it by that vector."""

import numpy as np
import pytest

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope
from tests.support.stored import NOW, episode, rowid

MODEL = "m1"


def unit(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return (vector / np.linalg.norm(vector)).tolist()


def write(store: SqliteStore, n: int) -> None:
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(n), unit(n), MODEL)]))


def erase(store: SqliteStore, n: int) -> None:
    store.episodes.apply(Changes(tenant_id="acme", delete=[f"E{n:05d}"]))


def nearest(store: SqliteStore, seed: int) -> tuple[str, float]:
    found = store.recall.candidates(Scope(tenant_id="acme", now=NOW), None, unit(seed), 5).items
    return found[0].event_id, found[0].semantic


def test_given_the_newest_episode_erased_by_another_process_then_the_next_write_is_found_by_its_own_vector(tmp_path):
    path = tmp_path / "db.sqlite"
    serving = SqliteStore(path, embedder=MODEL)
    write(serving, 1)
    write(serving, 2)
    event_id, similarity = nearest(serving, 2)
    assert event_id == "E00002" and similarity == pytest.approx(1.0, abs=1e-5)  # the serving process holds both
    erasing = SqliteStore(path, embedder=MODEL)  # another --workers process on the same file
    erase(erasing, 2)
    write(erasing, 3)
    assert rowid(erasing, "E00003") > 2
    event_id, similarity = nearest(serving, 3)
    assert event_id == "E00003" and abs(similarity - 1.0) < 1e-5
    serving.close()
    erasing.close()


def test_given_the_newest_episode_erased_before_a_restart_then_its_rowid_is_not_given_again(tmp_path):
    path = tmp_path / "db.sqlite"
    store = SqliteStore(path, embedder=MODEL)
    for n in (1, 2, 3):
        write(store, n)
    erase(store, 3)
    erase(store, 2)  # the floor keeps the highest rowid ever erased, whatever the order
    store.close()
    reopened = SqliteStore(path, embedder=MODEL)
    write(reopened, 4)
    assert rowid(reopened, "E00004") == 4
    assert nearest(reopened, 4)[0] == "E00004"
    reopened.close()


def test_given_more_rowids_than_are_kept_when_searching_by_meaning_then_every_episode_is_still_named(
    tmp_path, monkeypatch
):
    from episodic.adapters.sqlite import recall

    monkeypatch.setattr(recall, "EVENT_IDS_KEPT", 3)
    store = SqliteStore(tmp_path / "db.sqlite", embedder=MODEL)
    for n in range(1, 8):
        write(store, n)
    for _ in range(2):  # the second search finds some pairs kept and starts afresh when too many are
        for n in range(1, 8):
            assert nearest(store, n)[0] == f"E{n:05d}"
        found = store.recall.candidates(Scope(tenant_id="acme", now=NOW), None, unit(1), 10).items
        assert sorted(c.event_id for c in found) == [f"E{n:05d}" for n in range(1, 8)]
    store.close()
