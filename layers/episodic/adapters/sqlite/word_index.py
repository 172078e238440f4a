"""In-memory BM25 for the local store: each tenant's words, counted in this process.

Why not a full-text engine's ranking: SQLite's FTS5, which recall used before, scores every text
that holds any word of a query before it can hand over the best, one row lookup at a time, and
then SQLite joins each to the scope: a ticket question matching 800 of a tenant's 2,000 texts took
~1.7 ms a search, two searches a widened recall, more than the rest of the recall's own work. Here
a search is a few array operations over the posting lists of the query's words, restricted to the
rowids the scope admits (the same :class:`~.scope_cache.ScopeCache` answer the search by meaning
uses).

What is counted: each episode's row of ``episode_texts`` (its search text, with the stems line
of :func:`~episodic.domain.recall.languages.indexed`), written with the episode, read as
:func:`terms` reads it: words lower-cased and without accents, words of three letters or more by
their Porter stems, as FTS5's ``porter unicode61`` tokenizer read them before. A query's words are
read the same way.

The statistics are the tenant's own: the number of its texts, their mean length and how many of
them hold each word. With FTS5 they were the whole table's, so one tenant's writes moved another
tenant's scores. Words held by half of the tenant's texts or more have no BM25 weight and are
left out of a query that has any other word (:meth:`TenantWords.best`).

Keeping up with the database: like the vectors (:mod:`episodic.adapters.vectors.index`), a
tenant's words follow the table by a rowid watermark, so writes of any process show up at the
next search; texts never change under a rowid (a correction is a new episode). An erasure in
this process drops the tenant's words here; one in another process moves the tenant's count in
``tenant_erasures`` (a trigger on every delete), which the next search reads before anything
else, and a moved count drops them too. Either way the tenant's words are read again from the
database at its next search, so no word of an erased text stays in memory, nor in the
statistics.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import Stemmer

from episodic.domain import linear
from episodic.domain.recall.languages import unaccented

K1 = 1.2
B = 0.75
"""BM25's term-frequency saturation and length normalisation: FTS5's and Lucene's defaults."""
NO_WEIGHT = 1e-6
"""The weight of a word held by half of the texts or more (FTS5's floor for such a word)."""
STEMMED_FROM = 3
"""Words shorter than this are counted as written (FTS5's Porter tokenizer leaves them too)."""

_STEMMERS = threading.local()


def terms(text: str) -> list[str]:
    """The words of ``text`` as the index counts them, in order, repeats included."""
    words = [unaccented(w) for w in linear.words(text.lower().replace("_", " "))]  # "ship_to": two words
    stemmer = _STEMMERS.__dict__.get("porter")
    if stemmer is None:
        stemmer = _STEMMERS.__dict__["porter"] = Stemmer.Stemmer("porter")
    stems: list[str] = stemmer.stemWords(words)
    return [stem if len(word) >= STEMMED_FROM else word for word, stem in zip(words, stems, strict=True)]


class TenantWords:
    """One tenant's texts as posting lists: for each word, the positions of the texts holding it
    and how often each does; for each position, its rowid, event id and length."""

    def __init__(self, erasures: int) -> None:
        self.erasures = erasures
        """The tenant's ``tenant_erasures`` count when its rows were first read."""
        self.watermark = 0
        self.count = 0
        self._rowids = np.empty(1024, dtype=np.int64)
        self._lengths = np.empty(1024, dtype=np.int32)
        self.event_ids: list[str] = []
        self.total_length = 0
        self.positions: dict[str, array[int]] = {}
        self.counts: dict[str, array[int]] = {}
        self.lock = threading.Lock()
        """Held while this tenant's words are read from SQLite or searched."""

    def extend(self, rows: Sequence[tuple[int, str, str]]) -> None:
        """Add ``(rowid, event_id, text)`` rows, rowids ascending and above every row held."""
        needed = self.count + len(rows)
        if needed > len(self._rowids):
            capacity = max(needed, 2 * len(self._rowids))
            self._rowids, self._lengths = np.resize(self._rowids, capacity), np.resize(self._lengths, capacity)
        for position, (rowid, event_id, text) in enumerate(rows, start=self.count):
            counted = Counter(terms(text))
            length = sum(counted.values())
            self._rowids[position], self._lengths[position] = rowid, length
            self.event_ids.append(event_id)
            self.total_length += length
            for word, count in counted.items():
                held = self.positions.get(word)
                if held is None:
                    held = self.positions[word] = array("i")
                    self.counts[word] = array("i")
                held.append(position)
                self.counts[word].append(count)
        self.count = needed

    def best(self, query: Sequence[str], scope_rowids: np.ndarray, k: int) -> list[tuple[str, float]]:
        """``(event_id, BM25)`` of the best ``k`` texts among ``scope_rowids`` holding any word of
        ``query`` (as :func:`terms` gives them), best first."""
        texts = self.count
        weighted = self._weights(query, texts)
        if not weighted or not len(scope_rowids):
            return []
        lengths = self._lengths[:texts]
        mean_length = self.total_length / texts
        held, scores = [], []
        for word, weight in weighted:
            positions = np.array(self.positions[word], dtype=np.int32)  # copies: the lists may grow
            counts = np.array(self.counts[word], dtype=np.float64)
            norm = K1 * (1.0 - B + B * lengths[positions] / mean_length)
            held.append(positions)
            scores.append(weight * counts * (K1 + 1.0) / (counts + norm))
        total = np.bincount(np.concatenate(held), weights=np.concatenate(scores), minlength=texts)
        found = np.flatnonzero(total)  # the scope checked on the matches only, by a table of rowids:
        found = found[np.isin(self._rowids[found], scope_rowids, kind="table")]  # linear in both
        if len(found) > k:
            found = found[np.argpartition(-total[found], k - 1)[:k]]
        found = found[np.argsort(-total[found], kind="stable")]
        return [(self.event_ids[p], float(total[p])) for p in found.tolist()]

    def _weights(self, query: Sequence[str], texts: int) -> list[tuple[str, float]]:
        """The IDF of each of ``query``'s words the tenant holds; those with no weight only
        when no word has one (then they rank among themselves, and a recall without a model
        still finds something)."""
        weights = []
        for word in dict.fromkeys(query):
            held = self.positions.get(word)
            if held is not None:
                weights.append((word, math.log((texts - len(held) + 0.5) / (len(held) + 0.5))))
        weighty = [(word, weight) for word, weight in weights if weight > 0]
        return weighty or [(word, NO_WEIGHT) for word, _ in weights]


class WordIndex:
    """Every tenant's :class:`TenantWords` this process has searched, kept up with the database."""

    def __init__(self) -> None:
        self._tenants: dict[str, TenantWords] = {}
        self._lock = threading.Lock()
        """Guards the registry only; a tenant's words are read and searched under its own lock."""

    def search(
        self, conn: Any, tenant_id: str, query: Sequence[str], scope_rowids: np.ndarray, k: int
    ) -> list[tuple[str, float]]:
        """:meth:`TenantWords.best` over the tenant's words as the database holds them now."""
        words = self._tenant(tenant_id, _erasures(conn, tenant_id))
        with words.lock:
            self._sync(conn, tenant_id, words)
            return words.best(query, scope_rowids, k)

    def load(self, conn: Any, tenant_id: str) -> int:
        """Read the tenant's words now, as its first search would (``episodic serve`` does so for
        large tenants at start: ~10 us a text); returns how many texts it holds."""
        words = self._tenant(tenant_id, _erasures(conn, tenant_id))
        with words.lock:
            self._sync(conn, tenant_id, words)
            return words.count

    def forget(self, tenant_id: str) -> None:
        """Drop the tenant's words (some of its texts were erased): its next search reads them again."""
        with self._lock:
            self._tenants.pop(tenant_id, None)

    def invalidate(self) -> None:
        """Drop every tenant's words (texts were rewritten in place)."""
        with self._lock:
            self._tenants.clear()

    def _tenant(self, tenant_id: str, erasures: int) -> TenantWords:
        """The tenant's words, read afresh when texts were erased since they were read (the count
        is read before the rows, so rows read after an erasure are never taken for older ones)."""
        with self._lock:
            words = self._tenants.get(tenant_id)
            if words is None or words.erasures != erasures:
                words = self._tenants[tenant_id] = TenantWords(erasures)
            return words

    @staticmethod
    def _sync(conn: Any, tenant_id: str, words: TenantWords) -> None:
        """Texts written since the last look, added (the caller holds ``words.lock``)."""
        newest = conn.execute("SELECT max(rowid) FROM episodes").fetchone()[0] or 0
        if newest <= words.watermark:
            return
        # NOT INDEXED: walk the rowid range, not the tenant index (which would visit every row).
        rows = conn.execute(
            "SELECT e.rowid, e.event_id, s.text FROM episodes e NOT INDEXED "
            "JOIN episode_texts s ON s.rowid = e.rowid WHERE e.rowid > ? AND e.tenant_id = ? ORDER BY e.rowid",
            (words.watermark, tenant_id),
        ).fetchall()
        words.extend(rows)
        words.watermark = max(words.watermark, newest)


def _erasures(conn: Any, tenant_id: str) -> int:
    """How many of the tenant's episodes were ever deleted (``tenant_erasures``)."""
    row = conn.execute("SELECT erased FROM tenant_erasures WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return int(row[0]) if row else 0
