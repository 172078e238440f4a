"""What an index hands recall: each episode it found, with its raw relevance signals."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from itertools import repeat
from typing import NamedTuple


class Candidate(NamedTuple):
    """A scoped episode with its raw relevance signals from the index (a tuple: an index hands
    over hundreds a recall, and a tuple is the cheapest immutable record to build)."""

    event_id: str
    lexical: float = 0.0
    """BM25 score, larger is better (0 when the text did not match)."""
    semantic: float = 0.0
    """Cosine similarity between query and episode embeddings, in [-1, 1]."""


_tupled = partial(tuple.__new__, Candidate)


def by_meaning_alone(event_ids: Iterable[str], cosines: Iterable[float]) -> list[Candidate]:
    """Candidates a search by meaning found (no words' score), in order: built from C alone, with no
    Python call each, as an index hands over hundreds a recall."""
    return list(map(_tupled, zip(event_ids, repeat(0.0), cosines)))
