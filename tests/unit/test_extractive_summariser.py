"""The local extractive summariser (episodic.adapters.summarisers.extractive): central sentences,
verbatim, in the events' order, and work bounded whatever the events hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from episodic.adapters.summarisers.extractive import MAX_SENTENCES, SENTENCES_PER_EVENT, ExtractiveSummariser
from episodic.domain.model import Episode
from tests.support.doubles import HashingTestEmbedder

START = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def _event(n: int, summary: str) -> Episode:
    return Episode.model_validate(
        {
            "event_id": f"01KAZ3Q7J9X2B8M4T6V0W{n:05d}",
            "tenant_id": "acme",
            "actor_id": "user-1",
            "event_type": "task_milestone",
            "occurred_at": START + timedelta(minutes=n),
            "recorded_at": START + timedelta(minutes=n),
            "summary": summary,
            "source_refs": [f"ci:run-{n}"],
            "source_trust": "tool_result",
            "policy_version": "test",
        }
    )


def test_given_events_about_one_topic_when_summarised_then_its_sentences_are_chosen_verbatim_in_event_order():
    events = [
        _event(0, "The warehouse migration moved the billing tables to the new cluster."),
        _event(1, "Lunch was pizza at the Italian place near the office."),
        _event(2, "The warehouse migration moved the invoice tables to the new cluster."),
        _event(3, "The warehouse migration moved the ledger tables to the new cluster."),
    ]
    summariser = ExtractiveSummariser(HashingTestEmbedder())
    [central] = summariser.summarise(events, max_lines=1)
    assert central in {events[0].summary, events[2].summary, events[3].summary}
    everything = summariser.summarise(events, max_lines=4)
    assert set(everything) <= {e.summary for e in events}
    assert everything == sorted(everything, key=[e.summary for e in events].index)


def test_given_a_sentence_repeated_in_two_events_when_summarised_then_it_is_chosen_once():
    repeated = "The payment service was restarted after the memory alarm."
    events = [_event(0, repeated), _event(1, repeated), _event(2, "The queue drained within ten minutes.")]
    digest = ExtractiveSummariser(HashingTestEmbedder()).summarise(events, max_lines=3)
    assert digest.count(repeated) == 1
    assert "The queue drained within ten minutes." in digest


def test_given_events_of_hundreds_of_sentences_each_when_summarised_then_at_most_the_bounded_share_is_embedded():
    long_turn = " ".join(f"Room {n}." for n in range(400))[:4000]
    events = [_event(n, long_turn) for n in range(50)]
    embedder = HashingTestEmbedder()
    digest = ExtractiveSummariser(embedder).summarise(events, max_lines=3)
    assert embedder.calls == [min(MAX_SENTENCES, 50 * SENTENCES_PER_EVENT)]
    assert digest and all(line in long_turn for line in digest)


def test_given_more_events_than_the_bound_holds_when_summarised_then_every_event_offers_its_first_sentences():
    summary = "Event {n} opened the gate. Event {n} closed the gate. Event {n} logged it."
    events = [_event(n, summary.format(n=n)) for n in range(200)]
    embedder = HashingTestEmbedder()
    seen: list[str] = []
    original = embedder.embed

    def recording(texts):  # what the summariser offered to the model
        seen.extend(texts)
        return original(texts)

    embedder.embed = recording  # type: ignore[method-assign]
    ExtractiveSummariser(embedder).summarise(events, max_lines=3)
    assert len(seen) == MAX_SENTENCES
    assert {f"Event {n} opened the gate." for n in range(200)} <= set(seen)
