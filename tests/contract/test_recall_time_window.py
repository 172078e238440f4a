"""A question that is only a time phrase is a time-window recall: "what happened
yesterday" answers with yesterday's episodes, newest first, not with nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.domain.model import RecallRequest
from tests.support.factories import AGENT, at, proposal

# The clock fixture's "now" is 2026-11-29 12:00 UTC: "yesterday" is 28 November.
EPISODES = [
    (27, "The courier lost parcel 4471 on the way to the Porto warehouse"),
    (28, "Customer Lena Ruiz renewed her support contract for two years"),
    (28, "The finance team moved the invoice run to the first Monday of the month"),
    (29, "The office printer on floor three was replaced with a laser model"),
]


def test_given_only_a_time_phrase_when_recalled_then_the_window_is_returned_newest_first(service):
    for day, summary in EPISODES:
        service.writes.remember(AGENT, proposal(summary=summary, occurredAt=at(day, 9 + len(summary) % 5)))
    response = service.reads.recall(AGENT, RecallRequest(query="what happened yesterday?"))
    summaries = [item.episode.summary for item in response.items]
    assert sorted(summaries) == sorted(s for day, s in EPISODES if day == 28)
    occurred = [item.episode.occurred_at for item in response.items]
    assert occurred == sorted(occurred, reverse=True)
    assert response.interpretation.time_phrase == "yesterday"
    assert all(item.components.relevance == pytest.approx(0.0) for item in response.items)  # no text left to rank by


def test_given_a_time_phrase_and_words_when_recalled_then_the_words_still_rank(service):
    for day, summary in EPISODES:
        service.writes.remember(AGENT, proposal(summary=summary, occurredAt=at(day)))
    response = service.reads.recall(AGENT, RecallRequest(query="what did finance change yesterday?"))
    assert response.items and "invoice run" in response.items[0].episode.summary
    assert response.items[0].components.relevance > 0


def test_given_a_calendar_phrase_when_recalled_then_turns_two_weeks_either_side_are_searched(service):
    """People speak of an event before it (the plan) and after it (how it went): "the first
    week of November" searches 18 October to 22 November, not a month away."""
    dated = [
        (day(10, month=10), "Dana booked the Bergen flights for her mother's birthday"),  # 3 weeks before
        (day(25, month=10), "Dana is packing for the Bergen birthday trip next week"),  # the plan
        (day(4), "Dana landed in Bergen for the birthday dinner"),  # the week itself
        (day(15), "Dana is back from the Bergen birthday trip, it was lovely"),  # how it went
        (day(28), "Dana sorted the Bergen birthday photos into an album"),  # 3 weeks after
    ]
    for moment, summary in dated:
        service.writes.remember(AGENT, proposal(summary=summary, occurredAt=moment.isoformat()))

    response = service.reads.recall(AGENT, RecallRequest(query="What did Dana do in the first week of November 2026?"))

    assert response.interpretation.time_phrase == "in the first week of november 2026"
    assert (response.interpretation.occurred_after, response.interpretation.occurred_before) == (
        datetime(2026, 10, 18, tzinfo=UTC),
        datetime(2026, 11, 22, tzinfo=UTC),
    )
    found = {item.episode.summary for item in response.items}
    assert found == {summary for moment, summary in dated[1:4]}


def day(number: int, month: int = 11) -> datetime:
    return datetime(2026, month, number, 12, tzinfo=UTC)


def test_given_only_a_calendar_phrase_when_recalled_then_that_day_is_the_answer(service):
    for number in (2, 3, 4):
        service.writes.remember(
            AGENT,
            proposal(
                summary=f"Shift report {number}: the night crew restocked ward B", occurredAt=day(number).isoformat()
            ),
        )

    response = service.reads.recall(AGENT, RecallRequest(query="What happened on 3 November 2026?"))

    assert [item.episode.summary for item in response.items] == ["Shift report 3: the night crew restocked ward B"]
    assert response.interpretation.occurred_after == datetime(2026, 11, 3, tzinfo=UTC)
