"""What every read of stored episodes shares: turning a stored row back into an episode, and lists
of ids in chunks.

A stored episode is its JSON document plus two columns the document does not keep current: how
often it was recalled and when last (:data:`EPISODE_COLUMNS`). A recall counts in those columns
only, so the document changes only when the episode does (its status, feedback, retention).

Why parsed episodes are memoised: a recall reads every candidate of its pool (a few hundred
episodes) to admit and rank them, and turning each stored JSON document back into a validated
:class:`~episodic.domain.model.Episode` was a fifth of its time. :func:`parsed` keeps the most recent
documents' episodes, keyed by the document itself, so a changed episode (a new status, a feedback
score) is a new key and never answered from an old copy; :func:`stored` keeps them with their
counts, so a recalled episode costs a copy with its new count, not a new parse. Nothing mutates an
episode in place (changes are ``model_copy``), so a shared instance is safe. An erasure empties
the memos in the process that erases (:mod:`.episodes`); another ``--workers`` process keeps its
parsed copy until it is evicted, and never serves it, since no row holds that document any more.

Lists of ids are queried in chunks of :data:`CHUNK` so no statement exceeds SQLite's limit
on bound parameters, whatever the caller passes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import lru_cache

from episodic.domain.model import Episode

CHUNK = 500
PARSED_EPISODES = 4096
"""How many parsed episodes :func:`parsed` and :func:`stored` each keep (a few MiB)."""

EPISODE_COLUMNS = "doc, access_count, last_accessed_at"
"""The columns :func:`stored` makes an episode from, in its order (prefix them for a join)."""


@lru_cache(maxsize=PARSED_EPISODES)
def parsed(doc: str) -> Episode:
    """The episode a stored document holds (memoised: see the module docstring)."""
    return Episode.model_validate_json(doc)


@lru_cache(maxsize=PARSED_EPISODES)
def stored(doc: str, access_count: int, last_accessed_at: str | None) -> Episode:
    """The episode a row holds (memoised: see the module docstring)."""
    return with_counts(parsed(doc), access_count, last_accessed_at)


def scanned(doc: str, access_count: int, last_accessed_at: str | None) -> Episode:
    """The episode a row holds, parsed afresh: for scans over whole tables, which would
    otherwise evict from the memos what recalls keep there."""
    return with_counts(Episode.model_validate_json(doc), access_count, last_accessed_at)


def with_counts(episode: Episode, access_count: int, last_accessed_at: str | None) -> Episode:
    """``episode`` with the recalls counted in its row's columns."""
    if last_accessed_at is None:  # never recalled since the counts moved to columns
        return episode
    last = datetime.fromisoformat(last_accessed_at)
    if episode.access_count == access_count and episode.last_accessed_at == last:
        return episode
    return episode.model_copy(update={"access_count": access_count, "last_accessed_at": last})


def forget_parsed() -> None:
    """Empty both memos (an erasure: no parsed copy of a deleted episode outlives it here)."""
    stored.cache_clear()
    parsed.cache_clear()


def chunks(values: Sequence[str]) -> Iterator[tuple[Sequence[str], str]]:
    """``(chunk, marks)``: slices of at most :data:`CHUNK` values, with their ``?,?,...`` list."""
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        yield chunk, ",".join("?" * len(chunk))
