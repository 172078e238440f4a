"""Which words of a query are worth a BM25 search: those in fewer than half of the indexed texts.

Why: FTS5 scores every text that matches any word of a query before it can hand over the best
ones, so one common word makes the whole search as slow as the number of texts holding it (a
word every one of 1,000,000 texts holds: 2.3 s, where the query's other word, in 2% of them,
took 51 ms; ``benchmarks/recall_at_scale.py``). Past a point BM25 gives such a word no
weight: FTS5's IDF, ``log((N - n + 0.5) / (n + 0.5))``, is at or below zero once ``n >= N / 2``,
and FTS5 then uses 1e-6 instead. Beside any word that has a weight, leaving those words out
changes no score by more than that. A query made only of such words is searched whole, as
before: its matches' scores are all tiny, but recall normalises them against the best, so they
still rank (in a small tenant every word may be such a word), and without a model they are all
recall has.

``n`` is counted by FTS5 itself -- the number of matches of the quoted word, read by the same
tokenizer (stemming included) as the texts -- and kept for a minute: a count that old can only
move a word across the line where its weight is about zero. ``N`` is the largest rowid, an upper
bound of the number of texts (each episode has one, under its own rowid), so a word is left out
only when its true weight is zero.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict

KEPT_FOR_SECONDS = 60.0
REMEMBERED_WORDS = 4096


class TermFrequencies:
    """How many indexed texts hold each word, counted on demand and remembered for a while."""

    def __init__(self, ttl: float = KEPT_FOR_SECONDS, size: int = REMEMBERED_WORDS) -> None:
        self.ttl, self.size = ttl, size
        self._counts: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def informative(self, conn: sqlite3.Connection, words: list[str]) -> list[str]:
        """``words`` (as :func:`~episodic.query.lexical_terms` gives them) without those held by
        half of the texts or more, in order."""
        if not words:
            return []
        (newest,) = conn.execute("SELECT max(rowid) FROM episodes").fetchone()
        kept = [w for w in words if self._count(conn, w) < (newest or 0) / 2]
        return kept or words  # none has a weight: searched whole, the scores rank among themselves

    def _count(self, conn: sqlite3.Connection, word: str) -> int:
        now = time.monotonic()
        with self._lock:
            known = self._counts.get(word)
            if known is not None and now - known[1] < self.ttl:
                self._counts.move_to_end(word)
                return known[0]
        counted = conn.execute("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH ?", (f'"{word}"',))
        (count,) = counted.fetchone()
        with self._lock:
            self._counts[word] = (int(count), now)
            self._counts.move_to_end(word)
            while len(self._counts) > self.size:
                self._counts.popitem(last=False)
        return int(count)
