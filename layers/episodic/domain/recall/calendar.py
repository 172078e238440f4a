"""Calendar phrases in a recall query: parts of a named month and ranges of dates.

People ask about months long past by the calendar ("what happened in the first week of
September 2025?", "what did she do in mid-July?", "between 22 October and 1 November 2024",
"November 3-9", "between September and November", "on 2026-11-04"), not by how long ago. These
phrases name a window of their own and are read before the relative ones of
:mod:`episodic.domain.recall.query`, which would otherwise take "the last week of March 2024" for
the last seven days.

Parts of a month: weeks are days 1-7, 8-14, 15-21 and 22-28, "the last week" the month's last
seven days; halves end on the 15th; "early", "the beginning" and "the start" are days 1-10,
"mid" and "the middle" 11-20, "late" and "the end" 21 to the month's end. A month without a year
is the most recent one not in the future, as "in October" is.

Recall searches such a window widened by :data:`CALENDAR_SLACK` on both sides: people talk
about an event before it happens (the plan) and after (how it went), and a turn is dated when
it was said. Not when the phrase is the whole question ("what happened on 3 March 2025?"): with
no words to rank by, the answer is that window's episodes, newest first.
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta
from typing import cast

from episodic.domain import linear
from episodic.domain.linear import Match

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?:,?\s+(\d{4}))?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_LEADS = (
    "in",
    "during",
    "on",
    "around",
    "at",
    "over",
    "from",
    "between",
    "by",
    "until",
    "till",
    "before",
    "since",
    "after",
)
_LEAD = rf"(?:({'|'.join(_LEADS)})\s+)?(?:the\s+)?"
_OPEN_BEFORE = frozenset(["by", "until", "till", "before"])
_OPEN_AFTER = frozenset(["since", "after"])

CALENDAR_SLACK = timedelta(days=14)
"""How far around a calendar phrase's window recall searches: about the time between two chats.
Measured on the conversation benchmark's dev split (temporal recall@10 0.851 with no window,
0.863 with the exact window, 0.900-0.908 with 7, 14 or 21 days either side; see the README)."""

_WEEKS = {"first": (1, 7), "second": (8, 14), "third": (15, 21), "fourth": (22, 28)}
_HALVES = {"first": (1, 15), "second": (16, 31), "latter": (16, 31), "last": (16, 31)}
_PARTS = {"early": (1, 10), "beginning": (1, 10), "start": (1, 10), "mid": (11, 20), "middle": (11, 20),
          "late": (21, 31), "end": (21, 31)}  # fmt: skip

_WEEK_OF = linear.compile(rf"\b{_LEAD}(first|second|third|fourth|last|final)\s+week\s+of\s+{MONTH}{_YEAR}\b")
_HALF_OF = linear.compile(rf"\b{_LEAD}(first|second|latter|last)\s+half\s+of\s+{MONTH}{_YEAR}\b")
_PART_OF = linear.compile(
    rf"\b{_LEAD}(?:(early|mid|late)(?:\s*-\s*|\s+(?:of\s+)?)|(beginning|start|middle|end)\s+of\s+){MONTH}{_YEAR}\b"
)
_TO = r"\s*(?:and|to|until|till|through|-|\u2013|\u2014)\s*"
_RANGE = linear.compile(rf"\b{_LEAD}(?:week\s+of\s+)?{_DAY}(?:\s+{MONTH})?{_TO}{_DAY}\s+(?:of\s+)?{MONTH}{_YEAR}\b")
_RANGE_MONTH_FIRST = linear.compile(rf"\b{_LEAD}(?:week\s+of\s+)?{MONTH}\s+{_DAY}{_TO}(?:{MONTH}\s+)?{_DAY}{_YEAR}\b")
_MONTHS_RANGE = linear.compile(rf"\b{_LEAD}{MONTH}{_TO}{MONTH}{_YEAR}\b")
_ISO_DAY = r"(\d{4})-(\d{1,2})-(\d{1,2})"
_ISO_RANGE = linear.compile(
    rf"\b{_LEAD}{_ISO_DAY}(?:\s*(?:and|to|until|till|through|\u2013|\u2014)\s*|\s+-\s+){_ISO_DAY}\b"
)
_ISO_DATE = linear.compile(rf"\b{_LEAD}{_ISO_DAY}\b")
_WEEK_OF_DATE = linear.compile(
    rf"\b{_LEAD}week\s+of\s+(?:{_DAY}\s+(?:of\s+)?{MONTH}|{MONTH}\s+{_DAY}){_YEAR}\b|\b{_LEAD}week\s+of\s+{_ISO_DAY}\b"
)
_ANY_DATE = linear.compile(rf"\b{MONTH}(?:[^a-z]|$)|\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b")
"""Every calendar phrase names a month, in words or as an ISO date: one scan of the query spares
the rest of the patterns."""
_DATE = linear.compile(rf"\b{_LEAD}{_DAY}\s+(?:of\s+)?{MONTH}{_YEAR}\b|\b{_LEAD}{MONTH}\s+{_DAY}{_YEAR}\b")


def month_year(month: int, written: str | None, now: datetime) -> int:
    """The year a month is meant in: the one written, else the most recent not in the future."""
    if written:
        return int(written)
    return now.year - 1 if month > now.month else now.year


def month_days(year: int, month: int, first: int, last: int, now: datetime) -> tuple[datetime, datetime]:
    """``[first, last]`` of a month as ``[after, before)``, ``last`` held at the month's length."""
    last = min(last, calendar.monthrange(year, month)[1])
    start = now.replace(year=year, month=month, day=first, hour=0, minute=0, second=0, microsecond=0)
    return start, start.replace(day=last) + timedelta(days=1)


def _part(match: Match, spans: dict[str, tuple[int, int]], now: datetime) -> tuple[datetime, datetime]:
    _, *whichever, month_name, written = match.groups()
    which, month = next(w for w in whichever if w), MONTHS[month_name]
    year = month_year(month, written, now)
    if which in ("last", "final") and spans is _WEEKS:
        length = calendar.monthrange(year, month)[1]
        return month_days(year, month, length - 6, length, now)
    first, last = spans[which]
    return month_days(year, month, first, last, now)


def _range(match: Match, now: datetime) -> tuple[datetime, datetime]:
    """ "22 October to 1 November 2024", "8-14 February"."""
    _, first_day, first_month, last_day, last_month, written = match.groups()
    return _days(int(first_day), first_month or last_month, int(last_day), last_month, written, now)


def _range_month_first(match: Match, now: datetime) -> tuple[datetime, datetime]:
    """ "November 3 to November 9", "Nov 3-9, 2026"."""
    _, first_month, first_day, last_month, last_day, written = match.groups()
    return _days(int(first_day), first_month, int(last_day), last_month or first_month, written, now)


def _months_range(match: Match, now: datetime) -> tuple[datetime, datetime]:
    """ "between September and November": from the first day of one to the last of the other."""
    _, first_month, last_month, written = match.groups()
    start_month, end_month = MONTHS[first_month], MONTHS[last_month]
    start_year, year = _span_years(start_month, end_month, written, now)
    start, _ = month_days(start_year, start_month, 1, 1, now)
    _, end = month_days(year, end_month, 1, 31, now)
    return start, end


def _days(
    first_day: int, first_month: str, last_day: int, last_month: str, written: str | None, now: datetime
) -> tuple[datetime, datetime]:
    """From ``first_day`` of ``first_month`` to ``last_day`` of ``last_month`` (:func:`_span_years`)."""
    start_month, end_month = MONTHS[first_month], MONTHS[last_month]
    start_year, year = _span_years(start_month, end_month, written, now)
    start, _ = month_days(start_year, start_month, first_day, first_day, now)
    _, end = month_days(year, end_month, last_day, last_day, now)
    if end <= start:
        raise ValueError("a range that ends before it starts")
    return start, end


def _span_years(start_month: int, end_month: int, written: str | None, now: datetime) -> tuple[int, int]:
    """The years of a span's first and last months: the last's as written, else the most recent;
    a first month after the last is the year before ("28 December to 3 January 2025")."""
    year = month_year(end_month, written, now)
    return (year - 1 if start_month > end_month else year), year


def _iso_range(match: Match, now: datetime) -> tuple[datetime, datetime]:
    """ "2026-11-03 to 2026-11-09" (either way round: an ISO date is never ambiguous)."""
    _, *parts = match.groups()
    first, last = sorted([_iso_day([int(part) for part in parts[:3]], now), _iso_day([int(p) for p in parts[3:]], now)])
    return first, last + timedelta(days=1)


def _iso_date(match: Match, now: datetime) -> tuple[datetime, datetime]:
    """ "2026-11-04": that day."""
    _, *parts = match.groups()
    start = _iso_day([int(part) for part in parts], now)
    return start, start + timedelta(days=1)


def _iso_day(parts: list[int], now: datetime) -> datetime:
    year, month, day = parts
    return now.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)


def _date(match: Match, now: datetime) -> tuple[datetime, datetime]:
    _, day, month_name, written, lead, month_first, day_second, year_second = match.groups()
    if day is None:  # "March 3, 2025", "on Nov 4"
        if year_second is None and _a_count(match, lead):
            raise ValueError("a month and then a count, not a date")
        day, month_name, written = day_second, month_first, year_second
    month = MONTHS[month_name]
    return month_days(month_year(month, written, now), month, int(day), int(day), now)


def _week_of_date(match: Match, now: datetime) -> tuple[datetime, datetime]:
    """ "the week of November 3", "week of 3 Nov 2025", "the week of 2026-11-03": Monday to Sunday
    of the week that holds the date (read as :func:`_iso_date` or :func:`_date` read it alone)."""
    phrase = match.group(0)
    iso = _ISO_DATE.search(phrase)
    start, _ = _iso_date(iso, now) if iso is not None else _date(cast(Match, _DATE.search(phrase)), now)
    monday = start - timedelta(days=start.weekday())
    return monday, monday + timedelta(days=7)


_DATE_LEADS = frozenset(["on", "by", "until", "till", "before", "since", "after", "around", "at"])


def _a_count(match: Match, lead: str | None) -> bool:
    """Whether a month and a bare number with no year read as the month and a count: "in October
    2 customers complained", "during December 24 hours of downtime". Not after "on", "by", "since"
    and the like ("on Nov 4 the deploy failed"), nor with an ordinal ("Nov 4th") or nothing worded
    after it ("what happened Nov 4?")."""
    ordinal = match.group(0).rstrip()[-2:] in ("st", "nd", "rd", "th")
    after = match.string[match.end() :].lstrip()[:1]
    return not ordinal and lead not in _DATE_LEADS and after.isalnum()


def _may_be_the_verb(phrase: str, lead: str) -> bool:
    """ "3 may be enough": "may" is a month only with a year or after "on", "by", "in"..."""
    return bool(_MAY.search(phrase)) and not _YEAR_DIGITS.search(phrase) and lead not in (*_LEADS, "the", "week")


_MAY = linear.compile(r"\bmay\b")
_YEAR_DIGITS = linear.compile(r"\d{4}")


def calendar_window(lowered: str, now: datetime) -> tuple[Match, datetime | None, datetime | None] | None:
    """The first calendar phrase of the lower-cased query (read as :func:`episodic.domain.linear.ascii_words`
    reads it: English words bounded as Python's Unicode ``\\b`` bounds them), with its ``[after,
    before)`` window;
    None when it has none (or names no real date: "31 February" is not a window). "By", "until"
    and "before" leave the window open before, "since" and "after" open after ("by late
    September" is everything up to September's end).

    Most specific first: a range of days, a week, a half, a part of a month ("the last week of
    March and April" is March's last week), a range of months, then one date."""
    lowered = linear.ascii_words(lowered)
    if not _ANY_DATE.search(lowered):
        return None
    readers = (
        (_ISO_RANGE, _iso_range),
        (_RANGE, _range),
        (_RANGE_MONTH_FIRST, _range_month_first),
        (_WEEK_OF, lambda m, n: _part(m, _WEEKS, n)),
        (_WEEK_OF_DATE, _week_of_date),
        (_HALF_OF, lambda m, n: _part(m, _HALVES, n)),
        (_PART_OF, lambda m, n: _part(m, _PARTS, n)),
        (_MONTHS_RANGE, _months_range),
        (_ISO_DATE, _iso_date),
        (_DATE, _date),
    )
    for pattern, read in readers:
        for match in pattern.finditer(lowered):
            try:
                after, before = read(match, now)
            except (ValueError, OverflowError):
                continue
            lead = match.group(0).split()[0]
            if _may_be_the_verb(match.group(0), lead):
                continue
            if lead in _OPEN_BEFORE:
                return match, None, (after if lead == "before" else before)
            if lead in _OPEN_AFTER:
                return match, (before if lead == "after" else after), None
            return match, after, before
    return None
