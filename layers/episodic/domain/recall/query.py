"""Reading a recall query the way an agent means it: time phrases and the people named.

"What did we decide last week about the retry policy" asks for a time window, not for
episodes containing the words "last" and "week". This module turns English relative time
phrases into an ``[after, before)`` window (as of the request's *now*, in UTC) and strips
them from the text that BM25 and the embedder see. It also finds tokens of the query that
name an actor of the candidate pool ("Priya" for ``dev-priya-nair``), which recall uses as
a scope hint: those actors' episodes are preferred, others still fill the remaining slots.

Weeks start on Monday. "Last week" is the previous calendar week, while "the last week",
"the past week" and "last 3 days" are trailing windows; "in October" is the most recent
October not in the future.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from episodic.domain import linear
from episodic.domain.linear import Match
from episodic.domain.recall.calendar import MONTH, MONTHS, calendar_window, month_days, month_year

_WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)"
_WEEKDAY = r"(" + "|".join(_WEEKDAYS) + r")"
_PATTERNS: list[tuple[str, linear.Pattern]] = [
    (
        "trailing",
        linear.compile(rf"\b(?:in\s+|over\s+|during\s+)?(?:the\s+)?(?:last|past)\s+{_NUM}\s+(day|week|month|year)s?\b"),
    ),
    ("ago", linear.compile(rf"\b{_NUM}\s+(day|week|month)s?\s+ago\b")),
    ("yesterday", linear.compile(r"\b(?:yesterday|last\s+night)\b")),
    ("today", linear.compile(r"\b(?:today|this\s+morning|this\s+afternoon|tonight)\b")),
    ("past_unit", linear.compile(r"\b(?:in\s+|over\s+|during\s+|within\s+)?the\s+(?:past|last)\s+(week|month|year)\b")),
    ("last_week", linear.compile(r"\b(?:last|previous)\s+week\b")),
    ("this_week", linear.compile(r"\bthis\s+week\b")),
    ("last_month", linear.compile(r"\b(?:last|previous)\s+month\b")),
    ("this_month", linear.compile(r"\bthis\s+month\b")),
    ("since_weekday", linear.compile(rf"\bsince\s+(?:last\s+)?{_WEEKDAY}\b")),
    ("weekday", linear.compile(rf"\b(?:on|last|this\s+past)\s+{_WEEKDAY}\b")),
    ("month", linear.compile(rf"\b(?:in|during|back\s+in|from|since)\s+{MONTH}(?:\s+(\d{{4}}))?\b")),
    ("last_year", linear.compile(r"\b(?:last|previous)\s+year\b")),
    ("this_year", linear.compile(r"\b(?:this|so\s+far\s+this)\s+year\b")),
    ("year", linear.compile(r"\b(?:in|during|back\s+in|throughout|since)\s+((?:19|20)\d\d)\b")),
]


@dataclass(frozen=True)
class Interpretation:
    text: str
    """The query with its time phrase removed (what BM25 and the embedder see)."""
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    time_phrase: str | None = None
    calendar: bool = False
    """Whether the phrase named dates ("the first week of September 2025"), not a time relative
    to now: recall then searches :data:`~episodic.domain.recall.calendar.CALENDAR_SLACK` around them."""


def _start_of_day(value: datetime) -> datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _window(kind: str, match: Match, now: datetime) -> tuple[datetime, datetime] | None:
    today = _start_of_day(now)
    week_start = today - timedelta(days=today.weekday())
    if kind == "trailing":
        return now - timedelta(days=_count(match.group(1)) * _UNIT_DAYS[match.group(2)]), now
    if kind == "ago":
        center = today - timedelta(days=_count(match.group(1)) * _UNIT_DAYS[match.group(2)])
        spread = timedelta(days=0 if match.group(2) == "day" else 3)
        return center - spread, center + timedelta(days=1) + spread
    if kind == "past_unit":
        return now - timedelta(days=_UNIT_DAYS[match.group(1)]), now
    if kind == "yesterday":
        return today - timedelta(days=1), today
    if kind == "today":
        return today, now
    if kind == "last_week":
        return week_start - timedelta(days=7), week_start
    if kind == "this_week":
        return week_start, now
    if kind == "last_month":
        first = today.replace(day=1)
        previous = (first - timedelta(days=1)).replace(day=1)
        return previous, first
    if kind == "this_month":
        return today.replace(day=1), now
    if kind in ("weekday", "since_weekday"):
        target = _WEEKDAYS[match.group(1)]
        back = (today.weekday() - target) % 7 or 7
        day = today - timedelta(days=back)
        return (day, now) if kind == "since_weekday" else (day, day + timedelta(days=1))
    if kind == "last_year":
        return today.replace(year=today.year - 1, month=1, day=1), today.replace(month=1, day=1)
    if kind == "this_year":
        return today.replace(month=1, day=1), now
    if kind == "year":
        if int(match.group(1)) > today.year or match.string[match.end() : match.end() + 1] in ("-", "/"):
            return None  # "in 2048 bytes" is a count; "in 2026-13-45" no date
        start = today.replace(year=int(match.group(1)), month=1, day=1)
        return (start, now) if match.group(0).split()[0] == "since" else (start, start.replace(year=start.year + 1))
    if kind == "month":
        month = MONTHS[match.group(1)]
        start, end = month_days(month_year(month, match.group(2), now), month, 1, 31, now)
        return (start, now) if match.group(0).split()[0] == "since" else (start, end)
    return None


def interpret(query: str, now: datetime) -> Interpretation:
    """Find the first time phrase: a calendar phrase (:mod:`episodic.domain.recall.calendar`: "the first
    week of September 2025") before the relative ones, most specific patterns first. The phrases
    are English words, read as :func:`episodic.domain.linear.ascii_words` reads them."""
    lowered = linear.ascii_words(query.lower())
    dated = calendar_window(lowered, now)
    if dated is not None:
        phrase, after, before = dated
        return Interpretation(_without(query, phrase), after, before, phrase.group(0).strip(), calendar=True)
    for kind, pattern in _PATTERNS:
        match = pattern.search(lowered)
        if match is None:
            continue
        if kind == "month" and match.group(1) == "may" and not _IN_MAY.search(lowered):
            continue  # "may" is usually the verb
        try:
            window = _window(kind, match, now)
        except (OverflowError, ValueError):
            window = None  # "in the last 99999999 days", "in december 9999": no representable window
        if window is None:
            continue
        return Interpretation(_without(query, match), window[0], window[1], match.group(0))
    return Interpretation(query)


_IN_MAY = linear.compile(r"\b(?:in|during)\s+may\b")
_SPACES = linear.compile(r"\s{2,}")
_SPACE_BEFORE_MARK = linear.compile(r"\s+(?P<mark>[?.!,;:])|\s+$")


def _without(query: str, match: Match) -> str:
    """The query with the phrase ``match`` found (in its lower-cased copy) taken out."""
    text = _SPACES.sub(" ", (query[: match.start()] + query[match.end() :]).strip())
    return _SPACE_BEFORE_MARK.sub(lambda m: m.group("mark") or "", text) or query


_FILLER = frozenset(
    """
    a an the of in on at to for from with by about into over under and or but so if then than as is are
    was were be been being am do does did done doing have has had having will would shall should can
    could may might must what which who whom whose when where why how any anything something everything
    all some there here this that these those it its i me my we us our you your he him his she her they
    them their happen happens happened happening going go went up new news tell show list give find
    recall remember events event things thing stuff redacted
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Words that ask but name nothing: a query made of these and a time phrase asks for the window."""


def has_content(text: str) -> bool:
    """Whether ``text`` names anything: a word outside the question filler and stop words."""
    return bool(lexical_terms(text))


def lexical_terms(text: str) -> list[str]:
    """The words of ``text`` worth matching exactly, once each, in order: the filler and stop
    words are left out, so "what is the weather" matches on "weather" alone and "the" on
    nothing (a stop-word hit, scored against the best hit of a small pool, used to look like
    a perfect match)."""
    words = linear.words(text.lower())
    return list(dict.fromkeys(w for w in words if w not in _FILLER and (len(w) > 1 or w.isdigit())))


_ACTOR_SEPARATORS = str.maketrans("-_.:@", "     ")

WIDENING_SOURCES = 3
"""How many of the best items a second round takes names from."""


def widening_names(query: str, texts: Iterable[str], actor_ids: Iterable[str], limit: int = 8) -> list[str]:
    """The names ``texts`` mention that the query does not: who, where and what a multi-part
    question's first answers point to ("the friend who talked her into it" -> "Kirsty").
    Names that are actors (the query's own subjects) and words that name nothing are left out."""
    asked = {w.lower() for w in linear.words(query)}
    actors = {part for actor in actor_ids for part in actor.lower().translate(_ACTOR_SEPARATORS).split(" ")}
    names: list[str] = []
    for text in texts:
        for name in capitalised_runs(text):
            new = [w for w in name.split() if not {w.lower()} & (asked | actors | _FILLER)]
            if new:
                names.append(" ".join(new))
    return list(dict.fromkeys(names))[:limit]


def capitalised_runs(text: str) -> Iterator[str]:
    """Each capitalised word, or run of them apart only by whitespace, that does not open a
    sentence: a name, mostly. A capitalised word is an ASCII capital that no ASCII letter, digit
    or ``_`` precedes, then one or more letters; a run that starts the text or follows ``.``, ``!``
    or ``?`` and one whitespace character opens a sentence.

    One pass of string methods over the text: recall reads the best items' texts for names on
    every widened recall, where a pattern's per-match cost showed in the profile."""
    i, size = 0, len(text)
    while i < size:
        if not _word_start(text, i):
            i += 1
            continue
        end = _letters_end(text, i + 1)
        while True:  # further capitalised words after whitespace belong to the same run
            gap = end
            while gap < size and text[gap].isspace():
                gap += 1
            if gap == end or gap + 1 >= size or not _capital_then_letter(text, gap):
                break
            end = _letters_end(text, gap + 1)
        opens = i == 0 or (i >= 2 and text[i - 2] in ".!?" and text[i - 1].isspace())
        if not opens:
            yield text[i:end]
        i = end


def _capital_then_letter(text: str, i: int) -> bool:
    return "A" <= text[i] <= "Z" and i + 1 < len(text) and text[i + 1].isalpha()


def _word_start(text: str, i: int) -> bool:
    """A capitalised word starts at ``i``: nothing of an ASCII word just before it."""
    if not _capital_then_letter(text, i):
        return False
    if i == 0:
        return True
    before = text[i - 1]
    return not (before.isascii() and (before.isalnum() or before == "_"))


def _letters_end(text: str, i: int) -> int:
    while i < len(text) and text[i].isalpha():
        i += 1
    return i
