"""A scope placed for its search by meaning before the question's vector exists, on the real SQLite
store: the search that uses the placement answers exactly as one without it, and a placement that
anything has outdated since (a write, a deletion by any process, a change of status) is not used."""

import numpy as np
import pytest

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope, StatusChange
from episodic.domain.model import Status
from tests.support.stored import NOW, episode

MODEL = "m1"


def unit(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return (vector / np.linalg.norm(vector)).tolist()


def near(seed: int, toward: int, share: float = 0.8) -> list[float]:
    """A unit vector between ``seed``'s and ``toward``'s: many episodes score close to each other."""
    mixed = (1 - share) * np.asarray(unit(seed)) + share * np.asarray(unit(toward))
    return (mixed / np.linalg.norm(mixed)).tolist()


def write(store: SqliteStore, n: int, **fields) -> None:
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(n, **fields), near(n, 0), MODEL)]))


def found(store: SqliteStore, scope: Scope, placement=None, seeds=(0, 7)) -> list[list[tuple[str, float]]]:
    rounds = store.recall.by_meaning(scope, [unit(s) for s in seeds], 5, MODEL, placement)
    return [[(c.event_id, c.semantic) for c in each.items] for each in rounds]


def same(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> bool:
    """The same episodes in the same order, with the same cosines (to float32's precision)."""
    pairs = [(x, y) for ra, rb in zip(a, b, strict=True) for (_, x), (_, y) in zip(ra, rb, strict=True)]
    return [[i for i, _ in r] for r in a] == [[i for i, _ in r] for r in b] and all(
        x == pytest.approx(y, abs=1e-6) for x, y in pairs
    )


@pytest.fixture
def store(tmp_path):
    store = SqliteStore(tmp_path / "db.sqlite", embedder=MODEL)
    for n in range(1, 31):
        write(store, n, actor="sam" if n % 2 else "kim")
    yield store
    store.close()


def test_given_a_placement_when_searching_by_meaning_then_it_answers_as_a_search_without_one(store):
    scope = Scope(tenant_id="acme", now=NOW)
    found(store, scope)  # the tenant's vectors are in memory, as after any earlier recall
    placement = store.recall.place(scope, MODEL)
    assert placement is not None and placement.placed is not None  # where the rows sit was found ahead
    with_it = found(store, scope, placement)
    assert len(with_it[0]) == 5 and same(with_it, found(store, scope))


def test_given_a_placement_of_another_scope_then_the_scope_asked_for_is_searched(store):
    everyone, sam = Scope(tenant_id="acme", now=NOW), Scope(tenant_id="acme", now=NOW, actor_id="sam")
    placement = store.recall.place(everyone, MODEL)
    answer = found(store, sam, placement)
    assert same(answer, found(store, sam))
    assert {event_id for each in answer for event_id, _ in each} <= {f"E{n:05d}" for n in range(1, 31, 2)}


def test_given_an_episode_erased_by_another_process_after_the_placement_then_it_is_not_found(store, tmp_path):
    scope = Scope(tenant_id="acme", now=NOW)
    best = found(store, scope)[0][0][0]
    placement = store.recall.place(scope, MODEL)
    other = SqliteStore(tmp_path / "db.sqlite", embedder=MODEL)  # another --workers process on the same file
    other.episodes.apply(Changes(tenant_id="acme", delete=[best]))
    other.close()
    answer = found(store, scope, placement)
    assert best not in {event_id for each in answer for event_id, _ in each}
    assert same(answer, found(store, scope))


def test_given_an_episode_written_or_superseded_after_the_placement_then_the_search_sees_the_tenant_as_it_is(store):
    scope = Scope(tenant_id="acme", now=NOW)
    placement = store.recall.place(scope, MODEL)
    store.episodes.apply(Changes(tenant_id="acme", put=[NewEpisode(episode(99), unit(0), MODEL)]))
    assert found(store, scope, placement)[0][0][0] == "E00099"  # its vector is the question's own
    placement = store.recall.place(scope, MODEL)
    store.episodes.apply(Changes(tenant_id="acme", status=[StatusChange("E00099", Status.ACTIVE, Status.SUPERSEDED)]))
    answer = found(store, scope, placement)
    assert "E00099" not in {event_id for each in answer for event_id, _ in each}
    assert same(answer, found(store, scope))
