"""The DynamoDB-only recall index (episodic.adapters.opensearch.scoped): reads the scope through a
``ScopeReader`` (newest first) and ranks it in-process -- the newest without a query; with one, the
union of the best by BM25 and the best by cosine, comparing the query only with vectors of the
same model; it refuses scopes over ``max_scope``. The reader here is an in-memory double."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from episodic.adapters.opensearch.scoped import DynamoScopedIndex, ScopeTooLargeError
from episodic.application.ports import PendingVector, RecallCandidates, Scope, StoredEpisode, Vector
from episodic.domain.model import Episode, PrivacyClass

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
SCOPE = Scope(tenant_id="acme", now=NOW)
MODEL = "test-double/model-a"
OTHER_MODEL = "test-double/model-b"


class InMemoryScopeReaderDouble:
    """TEST DOUBLE for the DynamoDB timeline's scope read: yields the stored episodes the scope
    admits, newest first, and records the scopes asked for and how many episodes it handed out."""

    def __init__(self, stored: Sequence[StoredEpisode]) -> None:
        self.stored = sorted(stored, key=lambda s: s.episode.occurred_at, reverse=True)
        self.scopes: list[Scope] = []
        self.handed_out = 0

    def read_scope(self, scope: Scope) -> Iterator[StoredEpisode]:
        self.scopes.append(scope)
        for stored in self.stored:
            if scope.admits(stored.episode):
                self.handed_out += 1
                yield stored


def _stored(
    n: int,
    summary: str = "Routine note about the weekly sync",
    vector: Vector | None = None,
    embedder: str | None = MODEL,
    **fields: object,
) -> StoredEpisode:
    """Episode ``n`` occurred ``n`` hours before NOW (so a lower ``n`` is newer)."""
    data: dict[str, object] = {
        "event_id": f"01KAZ3Q7J9X2B8M4T6V0W1Y{n:03d}",
        "tenant_id": "acme",
        "actor_id": "user-1",
        "event_type": "task_milestone",
        "occurred_at": NOW - timedelta(hours=n),
        "recorded_at": NOW - timedelta(hours=n),
        "summary": summary,
        "source_refs": [f"ci:run-{n}"],
        "source_trust": "tool_result",
        "policy_version": "test",
    }
    data.update(fields)
    return StoredEpisode(
        episode=Episode.model_validate(data), vector=vector, embedder=embedder if vector is not None else None
    )


def _ids(found: RecallCandidates) -> list[str]:
    return [c.event_id for c in found.items]


def _by_id(found: RecallCandidates) -> dict[str, tuple[float, float]]:
    return {c.event_id: (c.lexical, c.semantic) for c in found.items}


def test_given_no_query_when_candidates_are_asked_then_the_newest_pool_comes_without_reading_further():
    reader = InMemoryScopeReaderDouble([_stored(n) for n in (3, 0, 2, 1, 4)])
    found = DynamoScopedIndex(reader, embedder=MODEL).candidates(SCOPE, None, None, pool_size=2)
    assert _ids(found) == [_stored(0).episode.event_id, _stored(1).episode.event_id]
    assert all(c.lexical == 0 and c.semantic == 0 for c in found.items) and found.degraded == ()
    assert reader.handed_out == 2 and reader.scopes == [SCOPE]


def test_given_no_query_when_the_scope_is_larger_than_max_scope_then_the_newest_still_come():
    reader = InMemoryScopeReaderDouble([_stored(n) for n in range(5)])
    found = DynamoScopedIndex(reader, max_scope=2).candidates(SCOPE, None, None, pool_size=2)
    assert len(found.items) == 2


def test_given_a_query_when_ranked_by_bm25_then_stemmed_terms_match_and_others_score_nothing():
    reader = InMemoryScopeReaderDouble(
        [
            _stored(0, "Customer wants the invoice as a PDF attachment"),
            _stored(1, "Weekly sync moved to Thursday"),
            _stored(2, "Invoices for March and April were re-sent as PDF"),
        ]
    )
    found = DynamoScopedIndex(reader, embedder=MODEL).candidates(SCOPE, "the invoices", None, pool_size=10)
    scores = _by_id(found)
    assert scores[_stored(0).episode.event_id][0] > 0 and scores[_stored(2).episode.event_id][0] > 0
    assert scores.get(_stored(1).episode.event_id, (0.0, 0.0))[0] == 0


def test_given_a_query_of_stop_words_only_when_ranked_then_no_text_scores():
    reader = InMemoryScopeReaderDouble([_stored(0, "The invoice of the month")])
    found = DynamoScopedIndex(reader).candidates(SCOPE, "the of and", [1.0, 0.0], pool_size=10)
    assert all(c.lexical == 0 for c in found.items)


def test_given_vectors_of_two_models_when_ranked_semantically_then_only_the_query_models_are_compared():
    same = _stored(0, vector=[1.0, 0.0, 0.0], embedder=MODEL)
    other = _stored(1, vector=[1.0, 0.0, 0.0], embedder=OTHER_MODEL)  # identical numbers, another model
    orthogonal = _stored(2, vector=np.asarray([0.0, 1.0, 0.0], dtype=np.float32), embedder=MODEL)
    index = DynamoScopedIndex(InMemoryScopeReaderDouble([same, other, orthogonal]), embedder=OTHER_MODEL)
    found = index.candidates(SCOPE, None, [1.0, 0.0, 0.0], pool_size=10, embedder=MODEL)
    scores = _by_id(found)
    assert scores[same.episode.event_id][1] == pytest.approx(1.0)
    assert scores.get(other.episode.event_id, (0.0, 0.0))[1] == 0
    assert scores.get(orthogonal.episode.event_id, (0.0, 0.0))[1] == pytest.approx(0.0)


def test_given_no_embedder_named_by_the_call_when_ranked_then_the_index_default_model_is_used():
    mine = _stored(0, vector=[0.0, 1.0], embedder=OTHER_MODEL)
    index = DynamoScopedIndex(InMemoryScopeReaderDouble([mine]), embedder=OTHER_MODEL)
    found = index.candidates(SCOPE, None, np.asarray([0.0, 1.0], dtype=np.float32), pool_size=10)
    assert _by_id(found)[mine.episode.event_id][1] == pytest.approx(1.0)


def test_given_a_small_pool_when_text_and_vectors_disagree_then_the_best_of_each_are_both_candidates():
    by_text = _stored(0, "Refund for order 4471 was approved", vector=[0.0, 1.0], embedder=MODEL)
    by_vector = _stored(1, "Weekly sync moved to Thursday", vector=[1.0, 0.0], embedder=MODEL)
    neither = _stored(2, "Printer on floor 3 is out of toner", vector=[0.6, 0.8], embedder=MODEL)
    index = DynamoScopedIndex(InMemoryScopeReaderDouble([by_text, by_vector, neither]), embedder=MODEL)
    found = index.candidates(SCOPE, "refund order 4471", [1.0, 0.0], pool_size=1)
    assert _ids(found) == [by_text.episode.event_id, by_vector.episode.event_id]  # in scope order: newest first
    scores = _by_id(found)
    assert scores[by_text.episode.event_id][0] > 0 and scores[by_vector.episode.event_id][1] == pytest.approx(1.0)


def test_given_a_scope_larger_than_max_scope_when_queried_then_it_is_refused():
    index = DynamoScopedIndex(InMemoryScopeReaderDouble([_stored(n) for n in range(4)]), max_scope=3)
    with pytest.raises(ScopeTooLargeError) as refused:
        index.candidates(SCOPE, "weekly sync", None, pool_size=10)
    assert refused.value.details == {"maxScope": 3}


def test_given_a_scope_of_exactly_max_scope_after_filtering_when_queried_then_it_is_ranked():
    stored = [_stored(n) for n in range(3)] + [_stored(9, privacy_class=PrivacyClass.PRIVATE)]
    index = DynamoScopedIndex(InMemoryScopeReaderDouble(stored), max_scope=3)
    scope = Scope(tenant_id="acme", now=NOW, privacy_classes=(PrivacyClass.PUBLIC, PrivacyClass.INTERNAL))
    found = index.candidates(scope, "weekly sync", None, pool_size=10)
    assert set(_ids(found)) == {s.episode.event_id for s in stored[:3]}


@pytest.mark.parametrize(("text", "vector"), [(None, None), ("weekly sync", [1.0, 0.0]), (None, [1.0, 0.0])])
def test_given_an_empty_scope_when_candidates_are_asked_then_there_are_none(text, vector):
    other_tenant = _stored(0, vector=[1.0, 0.0], tenant_id="globex")
    found = DynamoScopedIndex(InMemoryScopeReaderDouble([other_tenant]), embedder=MODEL).candidates(
        SCOPE, text, vector, pool_size=10
    )
    assert found == RecallCandidates()


def test_given_a_query_matching_nothing_and_no_comparable_vector_when_queried_then_no_candidates_come():
    stored = [_stored(n, "Weekly sync moved to Thursday", vector=[1.0, 0.0], embedder=OTHER_MODEL) for n in range(3)]
    found = DynamoScopedIndex(InMemoryScopeReaderDouble(stored), embedder=MODEL).candidates(
        SCOPE, "refund for order 4471", [1.0, 0.0], pool_size=2
    )
    assert found.items == []


def test_given_a_pending_query_vector_when_ranked_then_it_is_read_once_and_ranks_as_the_vector_would():
    by_text = _stored(0, "Refund for order 4471 was approved", vector=[0.0, 1.0], embedder=MODEL)
    by_vector = _stored(1, "Weekly sync moved to Thursday", vector=[1.0, 0.0], embedder=MODEL)
    index = DynamoScopedIndex(InMemoryScopeReaderDouble([by_text, by_vector]), embedder=MODEL)
    reads: list[int] = []
    pending = PendingVector(lambda: reads.append(1) or [1.0, 0.0])
    found = index.candidates(SCOPE, "refund order 4471", pending, pool_size=2)
    assert reads == [1] and found == index.candidates(SCOPE, "refund order 4471", [1.0, 0.0], pool_size=2)
