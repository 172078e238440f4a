"""What an index hands recall: each episode it found, with its raw relevance signals."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
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


NO_WEIGHT = 1e-6
"""The weight of a word held by half of the texts or more (FTS5's floor for such a word)."""


def word_weights(texts: int, holding: Mapping[str, int]) -> dict[str, float]:
    """BM25's weight (IDF) of each word some of ``texts`` hold (``holding``: how many hold each):
    the words held by fewer than half of them; when there is none, every held word at
    :data:`NO_WEIGHT`, so they rank among themselves (a search without a model still finds
    something). The counts must be of what the caller may read: weights counted over texts it may
    not read let it tell which words those hold. A count above ``texts`` (counted apart, a moment
    later) is taken as ``texts``."""
    weights = {word: math.log((texts - min(held, texts) + 0.5) / (min(held, texts) + 0.5))
               for word, held in holding.items() if held}  # fmt: skip
    weighty = {word: weight for word, weight in weights.items() if weight > 0}
    return weighty or dict.fromkeys(weights, NO_WEIGHT)
