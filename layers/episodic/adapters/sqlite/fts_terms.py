"""Which words of a query are worth a BM25 search (those in fewer than half of the indexed
texts), and whether a tenant's search is better limited to its own rows inside FTS5.

Why: FTS5 scores every text that matches any word of a query before it can hand over the best
ones, so one common word makes the whole search as slow as the number of texts holding it
(``benchmarks/recall_at_scale.py`` times such a word beside a rarer one). Past a point BM25 gives such a word no
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

A tenant's rows are counted the same way (the rows holding its tenant word, :mod:`.fts_match`)
and kept longer, ten minutes: a tenant's share of the table moves slowly, and a stale count only
picks the slower of two searches that answer alike.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict

from episodic.adapters.sqlite.fts_match import tenant_match, text_match

KEPT_FOR_SECONDS = 60.0
TENANT_KEPT_FOR_SECONDS = 600.0
REMEMBERED_WORDS = 4096
FEW_ROWS = 1 / 3
"""A tenant holding less than this share of the rows has its searches limited to them inside
FTS5. Where the line lies was measured through the store on two interleaved tenants of
different shares of the rows: limiting a search to the tenant's own rows pays for a tenant of a
fifth or a third of the rows, breaks even near a half and costs more beyond
(``benchmarks/recall_at_scale.py`` compares a small tenant beside a large one)."""


class TermFrequencies:
    """How many indexed texts hold each word, and how many rows each tenant has, counted on
    demand and remembered for a while."""

    def __init__(self, ttl: float = KEPT_FOR_SECONDS, size: int = REMEMBERED_WORDS) -> None:
        self.ttl, self.size = ttl, size
        self._counts: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def informative(self, conn: sqlite3.Connection, words: list[str], texts: int | None = None) -> list[str]:
        """``words`` (as :func:`~episodic.domain.recall.query.lexical_terms` gives them) without those held by
        half of the texts or more, in order (``texts``: :func:`row_bound`, when the caller read it)."""
        if not words:
            return []
        texts = row_bound(conn) if texts is None else texts
        kept = [w for w in words if self._count(conn, text_match([w]), self.ttl) < texts / 2]
        return kept or words  # none has a weight: searched whole, the scores rank among themselves

    def holds_few(self, conn: sqlite3.Connection, tenant_id: str, texts: int | None = None) -> bool:
        """Whether ``tenant_id`` holds less than :data:`FEW_ROWS` of the rows (``texts`` as for
        :meth:`informative`)."""
        texts = row_bound(conn) if texts is None else texts
        return self._count(conn, tenant_match(tenant_id), TENANT_KEPT_FOR_SECONDS) < FEW_ROWS * texts

    def _count(self, conn: sqlite3.Connection, match: str, ttl: float) -> int:
        """How many rows ``match`` finds, counted by FTS5 or remembered from the last ``ttl`` seconds."""
        now = time.monotonic()
        with self._lock:
            known = self._counts.get(match)
            if known is not None and now - known[1] < ttl:
                self._counts.move_to_end(match)
                return known[0]
        counted = conn.execute("SELECT count(*) FROM episodes_search WHERE episodes_search MATCH ?", (match,))
        (count,) = counted.fetchone()
        with self._lock:
            self._counts[match] = (int(count), now)
            self._counts.move_to_end(match)
            while len(self._counts) > self.size:
                self._counts.popitem(last=False)
        return int(count)


def row_bound(conn: sqlite3.Connection) -> int:
    """An upper bound of the number of rows: the largest rowid (each episode's row has its rowid)."""
    (newest,) = conn.execute("SELECT max(rowid) FROM episodes").fetchone()
    return int(newest or 0)
