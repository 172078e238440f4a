"""Idempotent writes (episodic.application.usecases.idempotency): the same key and body replay the first
result and store nothing new; the same key with another body is a conflict; keys are stored
hashed, one per item."""

from __future__ import annotations

import pytest

from episodic.application.usecases.feedback import Feedback
from episodic.application.usecases.idempotency import stored_idempotency_key
from episodic.application.usecases.writes import Writes
from episodic.domain.errors import IdempotencyConflictError, InvalidRequestError
from episodic.domain.model import Decision, Status
from tests.support.factories import AGENT, proposal
from tests.unit.usecases.doubles import StoreSpyDouble


def test_given_a_repeated_key_and_body_when_remembered_then_the_result_is_replayed_without_embedding(
    writes, store, embedder
):
    first = writes.remember(AGENT, proposal(), idempotency_key="k-1")
    calls = list(embedder.calls)
    again = writes.remember(AGENT, proposal(), idempotency_key="k-1")
    assert again.event_id == first.event_id and again.decision is Decision.ALLOW
    assert embedder.calls == calls and store.episodes.count("acme") == 1


def test_given_a_key_used_for_one_write_when_reused_for_a_batch_of_the_same_body_then_it_conflicts(writes, store):
    writes.remember(AGENT, proposal(), idempotency_key="k-kind")
    with pytest.raises(IdempotencyConflictError):
        writes.remember_batch(AGENT, [proposal()], idempotency_key="k-kind")
    assert store.episodes.count("acme") == 1


@pytest.mark.parametrize("key", ["", "k" * 256])
def test_given_a_key_of_an_invalid_length_when_remembered_then_it_is_refused_before_anything_is_written(
    writes, store, key
):
    with pytest.raises(InvalidRequestError):
        writes.remember(AGENT, proposal(), idempotency_key=key)
    assert store.episodes.count("acme") == 0


def test_given_a_key_of_255_characters_when_remembered_then_it_is_accepted(writes):
    assert writes.remember(AGENT, proposal(), idempotency_key="k" * 255).decision is Decision.ALLOW


def test_given_a_batch_with_a_key_when_stored_then_each_item_has_its_own_hashed_key_and_replays(writes, store):
    items = [proposal(), proposal(summary="User's timezone is Europe/Lisbon")]
    results = writes.remember_batch(AGENT, items, idempotency_key="batch-7")
    for position, result in enumerate(results):
        record = store.episodes.find_idempotency("acme", stored_idempotency_key(AGENT, f"batch-7\x1f{position}"))
        assert record is not None and record.result["eventId"] == result.event_id
        assert "batch-7" not in record.key
    assert store.episodes.find_idempotency("acme", stored_idempotency_key(AGENT, "batch-7")) is None
    again = writes.remember_batch(AGENT, items, idempotency_key="batch-7")
    assert [r.event_id for r in again] == [r.event_id for r in results] and store.episodes.count("acme") == 2


def test_given_a_replayed_write_when_its_episode_changed_since_then_the_replay_shows_it_as_it_is_now(deps, writes):
    first = writes.remember(AGENT, proposal(), idempotency_key="k-now")
    Feedback(deps).feedback(AGENT, first.event_id, helpful=True)
    writes.correct(AGENT, first.event_id, proposal(summary="User now wants XML invoices"))
    again = writes.remember(AGENT, proposal(), idempotency_key="k-now")
    assert again.status is Status.SUPERSEDED and again.episode.status is Status.SUPERSEDED
    assert again.episode.feedback_count == 1


def test_given_a_replayed_write_held_for_review_when_repeated_then_the_review_is_not_notified_again(
    writes, notifier, store
):
    first = writes.remember(AGENT, proposal(sourceTrust="untrusted_content"), idempotency_key="k-held")
    again = writes.remember(AGENT, proposal(sourceTrust="untrusted_content"), idempotency_key="k-held")
    assert again.decision is Decision.REVIEW and again.review_id == first.review_id
    assert len(notifier.requested) == 1 and len(store.reviews.list_reviews("acme", None, 10)) == 1


def test_given_a_concurrent_request_with_the_same_key_when_it_commits_first_then_its_result_is_replayed(deps, store):
    spy = StoreSpyDouble(store.episodes)
    deps.episodes = spy
    writes = Writes(deps)
    first = writes.remember(AGENT, proposal(), idempotency_key="k-race")
    spy.idempotency_misses = 1  # this request's lookup ran before the other one committed
    again = writes.remember(AGENT, proposal(), idempotency_key="k-race")
    assert again.event_id == first.event_id and store.episodes.count("acme") == 1


def test_given_a_concurrent_request_with_the_same_key_and_another_body_when_it_committed_first_then_it_conflicts(
    deps, store
):
    spy = StoreSpyDouble(store.episodes)
    deps.episodes = spy
    writes = Writes(deps)
    writes.remember(AGENT, proposal(), idempotency_key="k-race-2")
    spy.idempotency_misses = 1
    with pytest.raises(IdempotencyConflictError):
        writes.remember(AGENT, proposal(summary="User wants XML invoices"), idempotency_key="k-race-2")
    assert store.episodes.count("acme") == 1


def test_given_a_correction_with_a_key_when_retried_with_the_same_key_and_body_then_the_result_is_replayed(writes):
    old = writes.remember(AGENT, proposal())
    fix = writes.correct(AGENT, old.event_id, proposal(summary="User now wants XML invoices"), idempotency_key="c-1")
    again = writes.correct(AGENT, old.event_id, proposal(summary="User now wants XML invoices"), idempotency_key="c-1")
    assert again.event_id == fix.event_id
