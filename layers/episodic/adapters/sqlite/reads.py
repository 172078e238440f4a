"""What every read of stored episodes shares: parsing a stored document, and lists of ids in chunks.

Lists of ids are queried in chunks of :data:`CHUNK` so no statement exceeds SQLite's limit
on bound parameters, whatever the caller passes.

Why parsed episodes are memoised: a recall reads every candidate of its pool (a few hundred
episodes) to admit and rank them, and turning each stored JSON document back into a validated
:class:`~episodic.domain.model.Episode` was a fifth of its time. :func:`parsed` keeps the most recent
documents' episodes, keyed by the document itself, so a changed episode (a new status, an
access count) is a new key and never answered from an old copy. Nothing mutates an episode in
place (changes are ``model_copy``), so a shared instance is safe. An erasure empties the memo
in the process that erases (:mod:`.episodes`); another ``--workers`` process keeps its
parsed copy until it is evicted, and never serves it, since no row holds that document any more.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

from episodic.domain.model import Episode

CHUNK = 500
PARSED_EPISODES = 4096
"""How many parsed episodes :func:`parsed` keeps (a few MiB)."""


@lru_cache(maxsize=PARSED_EPISODES)
def parsed(doc: str) -> Episode:
    """The episode a stored document holds (memoised: see the module docstring)."""
    return Episode.model_validate_json(doc)


def chunks(values: Sequence[str]) -> Iterator[tuple[Sequence[str], str]]:
    """``(chunk, marks)``: slices of at most :data:`CHUNK` values, with their ``?,?,...`` list."""
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        yield chunk, ",".join("?" * len(chunk))
