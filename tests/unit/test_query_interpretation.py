from datetime import UTC, datetime

import pytest

from episodic.query import interpret, widening_names

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a Sunday


def d(day, month=11, hour=0):
    return datetime(2026, month, day, hour, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "after", "before", "text"),
    [
        ("what did we decide last week about retries", d(16), d(23), "what did we decide about retries"),
        ("which deploys failed yesterday?", d(28), d(29), "which deploys failed ?"),
        ("incidents in the last 3 days", datetime(2026, 11, 26, 12, tzinfo=UTC), NOW, "incidents"),
        ("what did Ravi complain about in October", d(1, 10), d(1, 11), "what did Ravi complain about"),
        ("errors this week", d(23), NOW, "errors"),
        ("billing changes last month", d(1, 10), d(1, 11), "billing changes"),
        ("alerts since Monday", d(23), NOW, "alerts"),
        ("what happened on Tuesday with the API", d(24), d(25), "what happened with the API"),
        ("refunds two weeks ago", d(12), d(19), "refunds"),
        ("decisions over the past week", datetime(2026, 11, 22, 12, tzinfo=UTC), NOW, "decisions"),
        ("what shipped in June 2026", d(1, 6), d(1, 7), "what shipped"),
    ],
)
def test_given_a_relative_time_phrase_when_interpreted_then_it_becomes_a_window(query, after, before, text):
    reading = interpret(query, NOW)
    assert (reading.occurred_after, reading.occurred_before) == (after, before)
    assert reading.text == text


@pytest.mark.parametrize(
    "query",
    ["what does Priya prefer for code review", "the Monday standup notes", "you may want the retry policy"],
)
def test_given_no_time_phrase_when_interpreted_then_the_query_is_unchanged(query):
    reading = interpret(query, NOW)
    assert reading.occurred_after is None and reading.text == query


def test_given_december_asked_in_november_when_interpreted_then_last_year_is_meant():
    reading = interpret("what did we ship in December", NOW)
    assert reading.occurred_after == datetime(2025, 12, 1, tzinfo=UTC)
    assert reading.occurred_before == datetime(2026, 1, 1, tzinfo=UTC)


def test_given_the_best_answers_when_widening_then_only_names_the_query_lacks_are_added():
    texts = [
        "Signed up for the Clyde Riverside Half Marathon! Kirsty talked me into it over a pint.",
        "Dana said Kirsty and Ewan met at the Glasgow climbing wall. Thanks!",
    ]
    names = widening_names("who talked Dana into the half marathon?", texts, ["dana", "corinne"])
    # "Signed" and "Dana said" open sentences or are actors; "Half Marathon" is asked already.
    assert names == ["Clyde Riverside", "Kirsty", "Ewan", "Glasgow"]
    assert widening_names("anything", [], []) == []
