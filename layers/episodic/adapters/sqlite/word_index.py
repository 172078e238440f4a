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

The statistics are those of what the caller may read: the number of texts, their mean length and
how many of them hold each word, counted over the texts of the search's scope without the
request's own filters (:meth:`~episodic.application.ports.Scope.readable`: its tenant, actor,
statuses and privacy classes; a time window or a tag does not narrow them, so a word keeps its
weight inside a week). Counted over more, another actor's private episodes or the writes held for
review would move a caller's scores, and a caller could learn from them which words texts it may
not read contain. Words held by half of those texts or more have no BM25 weight and are left out
of a query that has any other word (:meth:`TenantWords.best`).

Keeping up with the database: like the vectors (:mod:`episodic.adapters.vectors.index`), a
tenant's words follow the table by a rowid watermark, so writes of any process show up at the
next search; texts never change under a rowid (a correction is a new episode). A deleted text
(erasure, expiry, rejection) leaves at once in the process that deleted it
(:meth:`WordIndex.forget`); other processes learn of it by ``tenant_erasures``
(:mod:`.erasures`), which each search reads before anything else: when it moved, the search first reads the
tenant's rowids and removes the texts no longer there. Removing a text takes its words out of
every posting list that held it, and a word no text holds any more out of the vocabulary, so
neither the statistics nor the memory keep anything of it (another process's, by its next search
of that tenant).
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from episodic.adapters.sqlite.erasures import erasures_of, live_rowids
from episodic.adapters.vectors.exact import present
from episodic.domain import linear
from episodic.domain.recall.candidates import word_weights
from episodic.domain.recall.languages import stems, unaccented

K1 = 1.2
B = 0.75
"""BM25's term-frequency saturation and length normalisation: FTS5's and Lucene's defaults."""
TABLE_MIN_SPAN = 1 << 20
TABLE_SPREAD = 64
"""The scope is checked by a table of one byte per rowid of its span while the span is at most
:data:`TABLE_MIN_SPAN` rowids or this many times the scope's size; past that, by sorting. Rowids are
the whole database's, so a small tenant's span grows with every other tenant's writes: a table over
a span of 100 million rowids took 11 ms and 100 MB a search, sorting 0.2 ms, for a scope of 2,000
(a span of a million: 0.03 ms against 0.18)."""
READ_AT_ONCE = 10_000
"""Texts read from SQLite per step when a tenant's words are first read (a large tenant's texts
are never all in Python at once)."""
NEW_TEXTS_TOLD = 2_000
"""The most texts of one read that ``on_new_texts`` is told (the newest): a large tenant read for
the first time is not handed whole."""
REMOVED_KEPT = 10_000
"""A tenant's removed texts keep their positions (~30 bytes each, nothing of their words) until
there are this many and more than texts held; then its words are read afresh at its next search."""
STEMMED_FROM = 3
"""Words shorter than this are counted as written (FTS5's Porter tokenizer leaves them too)."""
SCOPE_SEARCHED_FROM = 8
"""A scope this many times smaller than its tenant is found among the texts by binary search (its
rowids sorted); a larger one by :func:`numpy.isin` over every text's rowid."""


def terms(text: str) -> list[str]:
    """The words of ``text`` as the index counts them, in order, repeats included."""
    words = [unaccented(w) for w in linear.words(text.lower().replace("_", " "))]  # "ship_to": two words
    stemmed = stems("porter", words)
    return [stem if len(word) >= STEMMED_FROM else word for word, stem in zip(words, stemmed, strict=True)]


class TenantWords:
    """One tenant's texts as posting lists: for each word, the positions of the texts holding it
    and how often each does; for each position, its rowid, event id, length and the words it holds
    (to take them out of their lists when the text is removed)."""

    def __init__(self) -> None:
        self.erasures = -1
        """The tenant's ``tenant_erasures`` count its texts agree with (-1: not read yet)."""
        self.watermark = 0
        self.count = 0
        """Positions used, removed texts' included (a position is never reused)."""
        self.live = 0
        self.total_length = 0
        self.rowid_sum = 0
        """The sum of the held texts' rowids: with :attr:`live`, how a search tells a scope of every
        text held (the common one) without checking each."""
        self.event_ids: list[str] = []
        self.positions: dict[str, array[int]] = {}
        self.counts: dict[str, array[int]] = {}
        self.lock = threading.Lock()
        """Held while this tenant's words are read from SQLite, searched or removed."""
        self._rowids = np.empty(1024, dtype=np.int64)
        self._lengths = np.empty(1024, dtype=np.int32)
        self._gone = np.zeros(1024, dtype=bool)
        self._starts = np.empty(1024, dtype=np.int64)
        """Where each position's words begin in :attr:`_held`."""
        self._held = array("i")
        """The ids of each text's distinct words, text after text (-1 once the text is removed)."""
        self._ids: dict[str, int] = {}
        self._words: list[str] = []

    def extend(self, rows: Sequence[tuple[int, str, str]]) -> None:
        """Add ``(rowid, event_id, text)`` rows, rowids ascending and above every row held."""
        needed = self.count + len(rows)
        if needed > len(self._rowids):
            capacity = max(needed, 2 * len(self._rowids))
            grown = [np.resize(a, capacity) for a in (self._rowids, self._lengths, self._gone, self._starts)]
            self._rowids, self._lengths, self._gone, self._starts = grown
            self._gone[self.count :] = False
        for position, (rowid, event_id, text) in enumerate(rows, start=self.count):
            counted = Counter(terms(text))
            length = sum(counted.values())
            self._rowids[position], self._lengths[position] = rowid, length
            self._starts[position] = len(self._held)
            self.event_ids.append(event_id)
            self.total_length += length
            self.rowid_sum += rowid
            for word, count in counted.items():
                held = self.positions.get(word)
                if held is None:
                    held = self.positions[word] = array("i")
                    self.counts[word] = array("i")
                    self._ids[word] = len(self._words)
                    self._words.append(word)
                held.append(position)
                self.counts[word].append(count)
                self._held.append(self._ids[word])
        self.count, self.live = needed, self.live + len(rows)

    def rowids(self) -> np.ndarray:
        """The rowids of the texts held (ascending)."""
        return self._rowids[: self.count][~self._gone[: self.count]]

    def remove(self, rowids: np.ndarray) -> None:
        """Take the texts of ``rowids`` out (those held): out of the statistics, of every posting
        list that held them, and words no text holds any more out of the vocabulary."""
        found = present(self._rowids[: self.count], np.sort(np.asarray(rowids, dtype=np.int64)))
        found = found[~self._gone[found]]
        if not len(found):
            return
        self._gone[found] = True
        self.live -= len(found)
        self.total_length -= int(self._lengths[found].sum())
        self.rowid_sum -= int(self._rowids[found].sum())
        touched: set[int] = set()
        for position in found.tolist():
            start = int(self._starts[position])
            end = int(self._starts[position + 1]) if position + 1 < self.count else len(self._held)
            touched.update(self._held[start:end])
            self._held[start:end] = array("i", [-1] * (end - start))
            self.event_ids[position] = ""
        for word_id in touched:
            word = self._words[word_id]
            positions = np.array(self.positions[word], dtype=np.int32)
            kept = ~self._gone[positions]
            if kept.any():
                self.positions[word] = array("i", positions[kept].tolist())
                self.counts[word] = array("i", np.array(self.counts[word], dtype=np.int32)[kept].tolist())
            else:
                del self.positions[word], self.counts[word], self._ids[word]
                self._words[word_id] = ""

    def best(
        self, query: Sequence[str], scope_rowids: np.ndarray, k: int, counted_rowids: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        """``(event_id, BM25)`` of the best ``k`` texts among ``scope_rowids`` holding any word of
        ``query`` (as :func:`terms` gives them), best first. The statistics are those of the texts
        of ``counted_rowids`` (a wider scope than the search's, holding all of it), or of the
        scope's own (see the module docstring)."""
        words = [word for word in dict.fromkeys(query) if word in self.positions]
        if not words or not len(scope_rowids):
            return []
        searched = self._admitted(scope_rowids)
        counted = searched
        if counted_rowids is not None and counted_rowids is not scope_rowids:
            counted = self._admitted(counted_rowids)
        texts = self.live if counted is None else int(np.count_nonzero(counted))
        if not texts:
            return []
        lengths = self._lengths[: self.count]
        mean_length = (self.total_length / self.live if counted is None else float(lengths[counted].mean())) or 1.0
        postings = {word: np.array(self.positions[word], dtype=np.int32) for word in words}  # copies: lists grow
        holding = {
            word: len(p) if counted is None else int(np.count_nonzero(counted[p])) for word, p in postings.items()
        }
        held, scores = [], []
        for word, weight in word_weights(texts, holding).items():
            kept = slice(None) if searched is None else searched[postings[word]]
            positions = postings[word][kept]
            counts = np.array(self.counts[word], dtype=np.float64)[kept]
            norm = K1 * (1.0 - B + B * lengths[positions] / mean_length)
            held.append(positions)
            scores.append(weight * counts * (K1 + 1.0) / (counts + norm))
        if not held:
            return []
        total = np.bincount(np.concatenate(held), weights=np.concatenate(scores), minlength=self.count)
        found = np.flatnonzero(total)
        if len(found) > k:
            found = found[np.argpartition(-total[found], k - 1)[:k]]
        found = found[np.argsort(-total[found], kind="stable")]
        return [(self.event_ids[p], float(total[p])) for p in found.tolist()]

    def _admitted(self, scope_rowids: np.ndarray) -> np.ndarray | None:
        """For each position, whether the scope admits its text (a removed text never); None when it
        admits every text held (as many texts, the same rowid sum: not checked one by one)."""
        if len(scope_rowids) == self.live and int(scope_rowids.sum()) == self.rowid_sum:
            return None
        rowids = self._rowids[: self.count]
        if len(scope_rowids) * SCOPE_SEARCHED_FROM < self.count:  # a small scope in a large tenant
            admitted = np.zeros(self.count, dtype=bool)
            admitted[present(rowids, np.sort(scope_rowids))] = True
        else:
            admitted = np.isin(rowids, scope_rowids, kind=_membership(scope_rowids))
        admitted &= ~self._gone[: self.count]
        return admitted


class WordIndex:
    """Every tenant's :class:`TenantWords` this process has searched, kept up with the database."""

    def __init__(self, on_new_texts: Callable[[str, Sequence[str]], None] | None = None) -> None:
        """``on_new_texts`` is told the summaries of each tenant's episodes this process reads for the
        first time (at most the newest :data:`NEW_TEXTS_TOLD` of one read), under the tenant's lock:
        it must return at once (the names they mention are embedded ahead, in the background)."""
        self._on_new_texts = on_new_texts
        self._tenants: dict[str, TenantWords] = {}
        self._lock = threading.Lock()
        """Guards the registry only; a tenant's words are read and searched under its own lock."""

    def search(
        self,
        conn: Any,
        tenant_id: str,
        query: Sequence[str],
        scope_rowids: np.ndarray,
        k: int,
        counted_rowids: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """:meth:`TenantWords.best` over the tenant's words as the database holds them now."""
        erasures = erasures_of(conn, tenant_id)  # before the rows: a delete after it is seen next time
        words = self._tenant(tenant_id)
        with words.lock:
            self._catch_up(conn, tenant_id, words, erasures)
            return words.best(query, scope_rowids, k, counted_rowids)

    def load(self, conn: Any, tenant_id: str) -> int:
        """Read the tenant's words now, as its first search would (``episodic serve`` does so for
        large tenants at start: ~10 us a text); returns how many texts it holds."""
        erasures = erasures_of(conn, tenant_id)
        words = self._tenant(tenant_id)
        with words.lock:
            self._catch_up(conn, tenant_id, words, erasures)
            return words.live

    def written(self, tenant_id: str, summaries: Sequence[str]) -> None:
        """The summaries of ``tenant_id``'s episodes this process just wrote: ``on_new_texts`` hears of
        them now, before a search reads them (it hears again then; once is enough for what it does)."""
        if summaries and self._on_new_texts is not None:
            self._on_new_texts(tenant_id, summaries)

    def forget(self, tenant_id: str, rowids: Sequence[int]) -> None:
        """Erased rows of ``tenant_id``: their words leave this process now."""
        with self._lock:
            words = self._tenants.get(tenant_id)
        if words is not None:
            with words.lock:
                words.remove(np.asarray(rowids, dtype=np.int64))

    def invalidate(self) -> None:
        """Drop every tenant's words (texts were rewritten in place)."""
        with self._lock:
            self._tenants.clear()

    def _tenant(self, tenant_id: str) -> TenantWords:
        """The tenant's words; a new, empty one (read at once) when it has none or when the positions
        of removed texts outnumber the texts held (:data:`REMOVED_KEPT`)."""
        with self._lock:
            words = self._tenants.get(tenant_id)
            if words is None or words.count - words.live > max(words.live, REMOVED_KEPT):
                words = self._tenants[tenant_id] = TenantWords()
            return words

    def _catch_up(self, conn: Any, tenant_id: str, words: TenantWords, erasures: int) -> None:
        """Remove the texts deleted and add those written since the last look (the caller holds
        ``words.lock``)."""
        if erasures != words.erasures:
            if words.live:
                words.remove(np.setdiff1d(words.rowids(), live_rowids(conn, tenant_id)))
            words.erasures = erasures
        newest = conn.execute("SELECT max(rowid) FROM episodes").fetchone()[0] or 0
        if newest <= words.watermark:
            return
        # Past the first read, NOT INDEXED: walk the rowid range, not the tenant index (every row).
        walk = "NOT INDEXED" if words.watermark else ""
        rows = conn.execute(
            f"SELECT e.rowid, e.event_id, s.text FROM episodes e {walk} JOIN episode_texts s ON s.rowid = e.rowid "
            "WHERE e.tenant_id = ? AND e.rowid > ? AND e.rowid <= ? ORDER BY e.rowid",
            (tenant_id, words.watermark, newest),
        )
        while chunk := rows.fetchmany(READ_AT_ONCE):
            words.extend(chunk)
        if self._on_new_texts is not None:
            self._tell(conn, tenant_id, words.watermark, newest)
        words.watermark = newest

    def _tell(self, conn: Any, tenant_id: str, after: int, upto: int) -> None:
        """Tell ``on_new_texts`` the summaries of ``tenant_id``'s active rows in ``(after, upto]`` (the
        newest :data:`NEW_TEXTS_TOLD`, oldest first): the texts a recall reads names from."""
        assert self._on_new_texts is not None
        rows = conn.execute(
            "SELECT json_extract(doc, '$.summary') FROM episodes WHERE tenant_id = ? AND rowid > ? AND rowid <= ? "
            "AND status = 'active' ORDER BY rowid DESC LIMIT ?",
            (tenant_id, after, upto, NEW_TEXTS_TOLD),
        ).fetchall()
        if rows:
            self._on_new_texts(tenant_id, [summary for (summary,) in reversed(rows) if summary])


def _membership(scope_rowids: np.ndarray) -> Literal["table", "sort"]:
    """How ``np.isin`` checks rowids against the scope: by a table over the scope's rowid span (linear
    in both) while that span is small, by sorting once it is spread (:data:`TABLE_SPREAD`)."""
    span = int(scope_rowids.max()) - int(scope_rowids.min()) + 1
    return "table" if span <= max(TABLE_MIN_SPAN, TABLE_SPREAD * len(scope_rowids)) else "sort"
