"""The :class:`~episodic.application.ports.RecallIndex` over the same database: BM25 over its words and
cosine similarity from the stored vectors, both limited to the scope first.

Why it needs no separate index service: the indexed texts and vectors are written in the same
transaction as their episodes (:mod:`.writes`), so what recall searches is always exactly
the timeline. Words and vectors are searched in memory (:class:`~.word_index.WordIndex`,
:class:`~episodic.adapters.vectors.index.VectorSearch`), each following the table by rowid
watermark; this module only hands them the rowids the scope admits, so nothing outside the scope
can ever be returned.

Every query runs on one borrowed reader connection, so its lexical and semantic halves see
the same snapshot of the database.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from episodic.adapters.sqlite.database import Database
from episodic.adapters.sqlite.erasures import erasures_of, live_rowids
from episodic.adapters.sqlite.scope import scope_sql
from episodic.adapters.sqlite.scope_cache import ScopeCache, generation_of
from episodic.adapters.sqlite.word_index import WordIndex, terms
from episodic.adapters.vectors.exact import Mix, Placed
from episodic.adapters.vectors.index import VectorSearch
from episodic.application.ports import Leaning, PendingVector, RecallCandidates, Scope, Vector, resolved
from episodic.domain.recall.candidates import Candidate, by_meaning_alone
from episodic.domain.recall.languages import searched
from episodic.domain.recall.query import lexical_terms

WARM_MIN_EPISODES = 10_000
"""Tenants at least this large have their words and vectors read at start (:meth:`RecallReads.warm_up`):
from here on the first read takes a noticeable part of a second, at a million several seconds."""
log = logging.getLogger(__name__)


QUERY_WORDS = 32
"""At most this many of a query's words are searched."""

EVENT_IDS_KEPT = 200_000
"""How many rowid -> event id pairs the search by meaning keeps (~30 MiB at most), then starts afresh."""


@dataclass(frozen=True)
class Placement:
    """A scope read, and placed among its tenant's vectors, before its search by meaning (:meth:`RecallReads.place`)."""

    scope: Scope
    embedder: str
    generation: int
    """The tenant's scope generation when the scope was read: the placement holds while it does."""
    rowids: np.ndarray
    placed: Placed | None

    def holds(self, conn: sqlite3.Connection, scope: Scope, embedder: str) -> bool:
        """Whether this placement answers for ``scope`` and ``embedder`` now: the same scope and model,
        and nothing the scope filters on written or changed since it was placed."""
        same = self.scope == scope and self.embedder == embedder
        return same and generation_of(conn, scope.tenant_id) == self.generation


class RecallReads:
    """Scoped recall candidates with their raw lexical and semantic scores."""

    searches_apart = True
    """Words and meaning are two queries here, so asking for one costs only that one."""

    def __init__(
        self,
        db: Database,
        vectors: VectorSearch,
        words: WordIndex,
        scopes: ScopeCache,
        embedder: str | None,
        on_erasures: Callable[[str], None] | None = None,
    ) -> None:
        """``embedder`` names the model whose vectors a query is compared with when the caller names
        none: episodes embedded by another model take part by BM25 only until they are re-embedded.
        ``on_erasures`` is told a tenant's name when a search finds that its episodes were deleted
        (by any process) since this process's last search of it: the embedder drops what it keeps
        for the tenant."""
        self.db, self.vectors, self.words, self.scopes, self.embedder = db, vectors, words, scopes, embedder
        self._on_erasures = on_erasures
        self._erasures_seen: dict[str, int] = {}
        """Each tenant's count of deletes (``tenant_erasures``) at this process's last search of it."""
        self._event_ids: dict[int, str] = {}
        """The event id of each rowid the search by meaning has returned. A rowid names one row
        for good (rowids are never reused, :data:`.writes.ROWID_FLOOR`), so a pair never goes
        stale; one of an erased row is never asked for again, since its vector is forgotten
        (and an event id is an identifier, which the audit log keeps as well)."""

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | PendingVector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        with self.db.reading() as conn:
            return self._candidates(conn, scope, query_text, query_vector, pool_size, embedder or self.embedder)

    def _candidates(
        self,
        conn: sqlite3.Connection,
        scope: Scope,
        query_text: str | None,
        pending: Vector | PendingVector | None,
        pool_size: int,
        embedder: str | None,
    ) -> RecallCandidates:
        """Without a query, the newest ``pool_size`` of the scope; with one, the union of the
        best ``pool_size`` by vector (only vectors ``embedder`` made) and by BM25. The words
        are searched first: a pending query vector is waited for only after them."""
        if query_text is None and pending is None:
            where, params = scope_sql(scope)
            rows = conn.execute(
                f"SELECT e.event_id FROM episodes e WHERE {where} ORDER BY e.occurred_at DESC LIMIT ?",
                (*params, pool_size),
            ).fetchall()
            return RecallCandidates([Candidate(event_id=r[0]) for r in rows])
        lexical = self._words(conn, scope, query_text, pool_size) if query_text else {}
        semantic: dict[str, float] = {}
        query_vector = resolved(pending)
        if query_vector is not None and embedder is not None:
            semantic = dict(zip(*self._semantic(conn, scope, [query_vector], pool_size, embedder)[0], strict=True))
        ids = dict.fromkeys([*semantic, *lexical])
        return RecallCandidates([Candidate(i, lexical.get(i, 0.0), semantic.get(i, 0.0)) for i in ids])

    def _words(self, conn: sqlite3.Connection, scope: Scope, text: str, pool_size: int) -> dict[str, float]:
        """``{event_id: BM25}`` of the best ``pool_size`` texts of the scope for the words of ``text``
        (:mod:`.word_index`)."""
        query = list(dict.fromkeys(terms(" ".join(lexical_terms(searched(text))[:QUERY_WORDS]))))[:QUERY_WORDS]
        if not query:
            return {}
        rowids = self.scopes.rowids(conn, scope)
        readable = scope.readable()
        counted = rowids if readable == scope else self.scopes.rowids(conn, readable)
        return dict(self.words.search(conn, scope.tenant_id, query, rowids, pool_size, counted))

    def warm_up(self, dimension: int, min_episodes: int = WARM_MIN_EPISODES) -> threading.Thread:
        """Read the words and vectors of every tenant with ``min_episodes`` or more into memory in
        the background, largest first (and start their vector indexes), so that no large tenant's
        first recall after a start waits seconds for them. A recall that comes first loads its own
        tenant as it always did; other tenants' recalls never wait (each tenant has its lock)."""

        def load(embedder: str | None) -> None:
            try:
                with self.db.reading() as conn:
                    tenants = conn.execute(
                        "SELECT tenant_id FROM episodes GROUP BY tenant_id HAVING count(*) >= ? ORDER BY count(*) DESC",
                        (min_episodes,),
                    ).fetchall()
                    for (tenant,) in tenants:
                        self.words.load(conn, tenant)
                        if embedder is not None:
                            self.vectors.load(conn, tenant, embedder, dimension)
            except Exception:  # the recalls load what they need; say why once
                log.warning("could not read the large tenants' words and vectors at start", exc_info=True)

        thread = threading.Thread(target=load, args=(self.embedder,), name="episodic-vectors-warm-up", daemon=True)
        thread.start()
        return thread

    def place(self, scope: Scope, embedder: str | None = None, toward: Vector | None = None) -> Placement | None:
        """What a search by meaning of ``scope`` reads before it needs a vector: the scope's rowids,
        erasures by other processes, and where the rows sit among the tenant's vectors (with
        ``toward``, their cosines with it too). Read while the model embeds the question, it is then
        not read after (:meth:`by_meaning`)."""
        embedder = embedder or self.embedder
        if embedder is None:
            return None
        with self.db.reading() as conn:
            generation, rowids = self._admitted(conn, scope)
            placed = self.vectors.place(conn, scope.tenant_id, embedder, rowids, toward) if len(rowids) else None
        return Placement(scope, embedder, generation, rowids, placed)

    def by_meaning(
        self,
        scope: Scope,
        vectors: Sequence[Vector | Leaning],
        pool_size: int,
        embedder: str | None = None,
        placement: Placement | None = None,
    ) -> list[RecallCandidates]:
        """For each of ``vectors``, the best ``pool_size`` of the scope by cosine alone, in one request:
        the scope is read and its vectors brought up to date once (a recall's two rounds ask together),
        or taken from ``placement`` (:meth:`place`) when it placed the same scope for the same model and
        nothing the scope filters on has changed since (its generation: an episode written, deleted or
        moved in or out of a scope moves it), so the answer is the one a search without it gives."""
        embedder = embedder or self.embedder
        if embedder is None or not vectors:
            return [RecallCandidates() for _ in vectors]
        with self.db.reading() as conn:
            found = self._semantic(conn, scope, vectors, pool_size, embedder, placement)
        return [RecallCandidates(by_meaning_alone(ids, cosines)) for ids, cosines in found]

    def _admitted(self, conn: sqlite3.Connection, scope: Scope) -> tuple[int, np.ndarray]:
        """The tenant's scope generation and the rowids ``scope`` admits under it, once the tenant's
        vectors here have forgotten every row another process deleted."""
        generation, rowids = self.scopes.admitted(conn, scope)
        if len(rowids):
            tenant = scope.tenant_id
            erasures = erasures_of(conn, tenant)
            self.vectors.forget_gone(tenant, erasures, lambda: live_rowids(conn, tenant))
            self._saw_erasures(tenant, erasures)
        return generation, rowids

    def _semantic(
        self,
        conn: sqlite3.Connection,
        scope: Scope,
        query_vectors: Sequence[Vector | Leaning],
        pool_size: int,
        embedder: str,
        placement: Placement | None = None,
    ) -> list[tuple[list[str], list[float]]]:
        """The event ids and cosines of the best ``pool_size`` vectors among the scope's rowids, best
        first, for each of ``query_vectors``."""
        if placement is not None and not placement.holds(conn, scope, embedder):
            placement = None
        rowids = self._admitted(conn, scope)[1] if placement is None else placement.rowids
        if not len(rowids):
            return [([], []) for _ in query_vectors]
        placed = None if placement is None else placement.placed
        queries = [_query(vector, n, query_vectors, placed) for n, vector in enumerate(query_vectors)]
        found = []
        searched = self.vectors.search_many(conn, scope.tenant_id, embedder, rowids, queries, pool_size, placed)
        for top, sims, _ in searched:
            names = self._named(conn, top.tolist())
            if None in names:  # rows deleted since their vectors were read: left out
                kept = [(name, cosine) for name, cosine in zip(names, sims.tolist(), strict=True) if name is not None]
                found.append(([name for name, _ in kept], [cosine for _, cosine in kept]))
            else:
                found.append((cast(list[str], names), sims.tolist()))
        return found

    def _saw_erasures(self, tenant: str, erasures: int) -> None:
        """Tell ``on_erasures`` when ``tenant``'s count of deletes moved since the last search (the first
        search of a tenant only notes it: what was kept before it was kept after any earlier delete)."""
        seen = self._erasures_seen.get(tenant)
        self._erasures_seen[tenant] = erasures
        if seen is not None and seen != erasures and self._on_erasures is not None:
            self._on_erasures(tenant)

    def _named(self, conn: sqlite3.Connection, rowids: list[int]) -> list[str | None]:
        """The event id of each of ``rowids`` (``None`` for a row that no longer exists), from what is
        kept where it can. Request threads share what is kept; each reads it with ``get``, so another's
        clearing it meanwhile costs one more query, never an error."""
        kept = self._event_ids
        names = list(map(kept.get, rowids))
        if None not in names:
            return names
        missing = [r for r, name in zip(rowids, names, strict=True) if name is None]
        marks = ",".join("?" * len(missing))
        named = dict(conn.execute(f"SELECT rowid, event_id FROM episodes WHERE rowid IN ({marks})", missing))
        if len(kept) + len(named) > EVENT_IDS_KEPT:
            kept.clear()
        kept.update(named)
        return [name if name is not None else named.get(r) for r, name in zip(rowids, names, strict=True)]


def _query(
    vector: Vector | Leaning, at: int, request: Sequence[Vector | Leaning], placed: Placed | None
) -> np.ndarray | Mix:
    """One of a search's query vectors as the vector index takes it: a :class:`Leaning` (on a plain
    vector before it) as a :class:`Mix`, with the cosines ``placed`` measured for the same ``toward``
    (the very vector it was given); any other as an array."""
    if not isinstance(vector, Leaning):
        return np.asarray(vector, dtype=np.float32)
    if not 0 <= vector.base < at or isinstance(request[vector.base], Leaning):
        raise ValueError("a leaning vector leans on a plain vector before it in the same request")
    known = placed.toward_cosines if placed is not None and placed.toward is vector.toward else None
    return Mix(vector.base, np.asarray(vector.toward, dtype=np.float32), vector.weight, known)
