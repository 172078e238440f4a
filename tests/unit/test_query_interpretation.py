from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.domain import linear
from episodic.domain.recall.query import capitalised_runs, interpret, widening_names

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a Sunday


def d(day, month=11, hour=0):
    return datetime(2026, month, day, hour, tzinfo=UTC)


def at(year, month, day):
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "after", "before", "text"),
    [
        ("what did we decide last week about retries", d(16), d(23), "what did we decide about retries"),
        ("which deploys failed yesterday?", d(28), d(29), "which deploys failed?"),
        ("incidents in the last 3 days", datetime(2026, 11, 26, 12, tzinfo=UTC), NOW, "incidents"),
        ("what did Ravi complain about in October", d(1, 10), d(1, 11), "what did Ravi complain about"),
        ("errors this week", d(23), NOW, "errors"),
        ("billing changes last month", d(1, 10), d(1, 11), "billing changes"),
        ("alerts since Monday", d(23), NOW, "alerts"),
        ("what happened on Tuesday with the API", d(24), d(25), "what happened with the API"),
        ("refunds two weeks ago", d(12), d(19), "refunds"),
        ("decisions over the past week", datetime(2026, 11, 22, 12, tzinfo=UTC), NOW, "decisions"),
        ("what shipped in June 2026", d(1, 6), d(1, 7), "what shipped"),
        ("what broke last year", at(2025, 1, 1), at(2026, 1, 1), "what broke"),
        ("tomatoes grown this year", at(2026, 1, 1), NOW, "tomatoes grown"),
        ("how did her job change during 2024?", at(2024, 1, 1), at(2025, 1, 1), "how did her job change?"),
        ("audits since 2025", at(2025, 1, 1), NOW, "audits"),
        ("outages in the last 2 years", datetime(2024, 11, 29, 12, tzinfo=UTC), NOW, "outages"),
        ("in October 2 customers complained", d(1, 10), d(1, 11), "2 customers complained"),  # a count, not a day
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
    # what redaction left in place of a secret names nothing (it would pull in every redacted item)
    assert widening_names("card trouble", ["Paid with [REDACTED:payment_card] at Tesco"], []) == ["Tesco"]


@pytest.mark.parametrize(
    ("query", "after", "before", "text"),
    [
        ("What happened in the first week of September 2025?", at(2025, 9, 1), at(2025, 9, 8), "What happened?"),
        (
            "what was Theo doing in the second week of March 2026",
            at(2026, 3, 8),
            at(2026, 3, 15),
            "what was Theo doing",
        ),
        # "the last week" of a named month, not the last seven days (it used to be read so)
        (
            "What happened to Pilot in the last week of March 2024?",
            at(2024, 3, 25),
            at(2024, 4, 1),
            "What happened to Pilot?",
        ),
        ("the last week of February 2024", at(2024, 2, 23), at(2024, 3, 1), "the last week of February 2024"),
        (
            "What did Dana do in the second half of September 2025?",
            at(2025, 9, 16),
            at(2025, 10, 1),
            "What did Dana do?",
        ),
        ("What did Kofi do in mid-July 2024?", at(2024, 7, 11), at(2024, 7, 21), "What did Kofi do?"),
        ("plans for the end of July 2024", at(2024, 7, 21), at(2024, 8, 1), "plans for"),
        ("early March moves", at(2026, 3, 1), at(2026, 3, 11), "moves"),
        ("what happened between 22 October and 1 November 2024", at(2024, 10, 22), at(2024, 11, 2), "what happened"),
        ("life in the week of 8\u201314 February 2025", at(2025, 2, 8), at(2025, 2, 15), "life"),
        ("trips from 28 December to 3 January 2025", at(2024, 12, 28), at(2025, 1, 4), "trips"),
        ("what did Ilse do on 1 June 2024?", at(2024, 6, 1), at(2024, 6, 2), "what did Ilse do?"),
        ("what happened on March 3, 2025", at(2025, 3, 3), at(2025, 3, 4), "what happened"),
        ("the dinner on 26 December", at(2025, 12, 26), at(2025, 12, 27), "the dinner"),  # last year's: not yet
        ("the outage on November 4th", at(2026, 11, 4), at(2026, 11, 5), "the outage"),
        ("refunds between November 3 and November 9", at(2026, 11, 3), at(2026, 11, 10), "refunds"),
        ("outages Nov 3-9, 2025", at(2025, 11, 3), at(2025, 11, 10), "outages"),
        ("tickets from Dec 28 to Jan 3 2026", at(2025, 12, 28), at(2026, 1, 4), "tickets"),
        ("incidents between September and November?", at(2026, 9, 1), at(2026, 12, 1), "incidents?"),
        ("sales from December to February", at(2025, 12, 1), at(2026, 3, 1), "sales"),  # the February before now
        ("what broke on 2026-11-04 in billing", at(2026, 11, 4), at(2026, 11, 5), "what broke in billing"),
        ("deploys between 2026-11-03 and 2026-11-09", at(2026, 11, 3), at(2026, 11, 10), "deploys"),
        ("deploys 2026-11-09 - 2026-11-03", at(2026, 11, 3), at(2026, 11, 10), "deploys"),  # ISO: either way round
        ("on Nov 4 the deploy failed", at(2026, 11, 4), at(2026, 11, 5), "the deploy failed"),
        # the week that holds the date, Monday to Sunday (3 November 2025 was a Monday, 2026's a Tuesday)
        ("what broke the week of November 3", at(2026, 11, 2), at(2026, 11, 9), "what broke"),
        ("refunds in the week of 3 Nov 2025", at(2025, 11, 3), at(2025, 11, 10), "refunds"),
        ("deploys during the week of 2026-11-04?", at(2026, 11, 2), at(2026, 11, 9), "deploys?"),
        ("plans for the week of May 4", at(2026, 5, 4), at(2026, 5, 11), "plans for"),
        (
            "plans for mid-July to August",
            at(2026, 7, 11),
            at(2026, 7, 21),
            "plans for to August",
        ),  # July's part, not two months
    ],
)
def test_given_a_calendar_phrase_when_interpreted_then_its_window_is_the_dates_it_names(query, after, before, text):
    reading = interpret(query, NOW)
    assert (reading.occurred_after, reading.occurred_before) == (after, before)
    assert reading.calendar and reading.text == text


@pytest.mark.parametrize(
    ("query", "after", "before"),
    [
        ("debt cleared by late September 2024", None, at(2024, 10, 1)),
        ("money raised by 24 March", None, at(2026, 3, 25)),
        ("what changed before 3 March 2025", None, at(2025, 3, 3)),
        ("what happened since 3 March 2025", at(2025, 3, 3), None),
        ("what changed after March 3, 2025", at(2025, 3, 4), None),
    ],
)
def test_given_by_or_since_a_date_when_interpreted_then_the_window_is_open_on_one_side(query, after, before):
    reading = interpret(query, NOW)
    assert (reading.occurred_after, reading.occurred_before) == (after, before)


@pytest.mark.parametrize(
    "query",
    [
        "news on 31 February 2025",
        "3 may be enough",
        "the 2024 budget",
        "build 2026-13-45",
        "may and june plans",
        "error in 2048 bytes",
        "audits since 2030",
        "report in 2026-13-45",
        "the week of Nov 31",
    ],
)
def test_given_no_real_date_when_interpreted_then_no_calendar_window(query):
    reading = interpret(query, NOW)
    assert not reading.calendar and reading.occurred_after is None and reading.occurred_before is None


_NAMES_AS_A_PATTERN = linear.compile(r"(?P<veto>^|[.!?]\s)?\b(?P<name>[A-Z]\pL+(?:\s+[A-Z]\pL+)*)")
"""The rule :func:`capitalised_runs` follows, as a pattern: the reference it is checked against."""


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="AKZakzÖöÜüß_1.!? \t\n'-", max_size=40))
def test_given_any_text_when_names_are_read_then_they_are_the_capitalised_runs_the_pattern_finds(text):
    expected = [m.group("name") for m in _NAMES_AS_A_PATTERN.finditer(text) if m.group("veto") is None]
    assert list(capitalised_runs(text)) == expected
