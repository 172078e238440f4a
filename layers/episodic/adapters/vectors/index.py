"""In-memory vector search for the local backend: exact for small scopes, an inverted file
(:mod:`.ann`) for large ones.

The vectors live in SQLite with their episodes (the source of truth); this keeps, per
tenant and embedder, a float32 matrix of them so a query does not re-read blobs from disk.
It follows the database by a rowid watermark: each search first loads rows newer than
the last one seen, so writes from this process or any other show up without a restart.
Rows deleted or filtered out need no bookkeeping to stay unreachable: the caller passes the
rowids its scope query admitted, and only those are searched. Still, no copy of an erased
episode's vector outlives it in memory: an erasure in this process zeroes its rows here and drops
them from the index at once (:meth:`VectorSearch.forget`), and one in another process (``serve
--workers``) at this process's next search of the tenant (:meth:`VectorSearch.forget_gone`).

Search strategy (the one OpenSearch uses for filtered k-NN):
* scopes smaller than ``ann_threshold``: exact inner product over the scope's rows;
* larger scopes, once the tenant has its index: the cells nearest the query, scanned with
  the scope as a filter; if that finds fewer than ``k``, exact search answers instead.

Why no query ever waits for an index to be built: the first search that finds a tenant with
``ann_threshold`` vectors starts a background thread that loads the tenant's persisted cells
(or learns them, when there are none) and fills the index, while exact search answers. From
then on every search first adds the rows written since the last one (one nearest-cell lookup
each), so the
index is as current as the matrix; it is written beside the database when it has grown by a
tenth since the last save, and when the store closes.

Each tenant has its own lock: loading a large tenant's vectors (seconds at a million rows)
holds up that tenant's searches only, never another tenant's. ``episodic serve`` loads the
large tenants in the background at start (:meth:`VectorSearch.load`), so their first query
after a restart does not pay for it either.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from episodic.adapters.codec import unpack_vectors
from episodic.adapters.vectors import ann
from episodic.adapters.vectors.exact import Mix, Placed, cosines, exact, present
from episodic.adapters.vectors.rowid_slots import RowidSlots

DEFAULT_ANN_THRESHOLD = 50_000
log = logging.getLogger(__name__)


class TenantVectors:
    """One tenant's vectors of one embedder, rowid-ascending, in a buffer that grows by doubling
    (so appending the few rows of a new write does not copy the whole matrix), and its index."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.count = 0
        self.watermark = 0
        self._ids = np.empty(1024, dtype=np.int64)
        self._buf = np.empty((1024, dimension), dtype=np.float32)
        self._slots = RowidSlots()
        self.index: ann.CellIndex | None = None
        self.indexed = 0
        """Rows ``[0, indexed)`` of the matrix are in :attr:`index`."""
        self.saved = 0
        self.preparing = False
        self.failed = False
        self.erasures = -1
        """The tenant's count of deletes (any process's) these rows agree with (-1: not compared yet)."""
        self.erased_meanwhile: list[int] = []
        """Rows erased while an index was being prepared from a snapshot that may hold them."""
        self.lock = threading.Lock()
        """Held while this tenant's vectors are read from SQLite, searched or changed."""
        self.retired = False
        """Dropped by :meth:`VectorSearch.invalidate`: a search still holding it may finish, but
        nothing of it is saved or installed any more."""

    @property
    def rowids(self) -> np.ndarray:
        return self._ids[: self.count]

    @property
    def matrix(self) -> np.ndarray:
        return self._buf[: self.count]

    def append(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        if len(rowids) == 0:
            return
        needed = self.count + len(rowids)
        if needed > len(self._ids):
            capacity = max(needed, 2 * len(self._ids))
            self._ids = np.resize(self._ids, capacity)
            grown = np.empty((capacity, self.dimension), dtype=np.float32)
            grown[: self.count] = self._buf[: self.count]
            self._buf = grown  # views handed out earlier keep the old buffer, whose rows never change
        self._ids[self.count : needed] = rowids
        self._buf[self.count : needed] = vectors
        start, self.count = self.count, needed
        self.watermark = int(rowids.max())
        self._slots.extend(self.rowids, start)

    def positions(self, rowids: np.ndarray) -> np.ndarray:
        """Positions of the given (sorted) rowids that have a row here, ascending: by a table
        for a large tenant (:mod:`.rowid_slots`), else by a binary search (rowids ascend)."""
        found = self._slots.find(rowids)
        return present(self.rowids, rowids) if found is None else found

    def forget(self, rowids: np.ndarray) -> None:
        """Zero the vectors of erased rows and drop them from the index."""
        self._buf[self.positions(np.sort(rowids))] = 0.0
        if self.index is not None:
            self.index.remove(rowids)
        elif self.preparing:
            self.erased_meanwhile.extend(int(r) for r in rowids)


class VectorSearch:
    """Exact or inverted-file search over one SQLite database's episode vectors.

    ``directory`` is where each tenant's index is persisted (none: kept in memory only)."""

    def __init__(self, ann_threshold: int = DEFAULT_ANN_THRESHOLD, directory: Path | None = None) -> None:
        self.ann_threshold = ann_threshold
        self.directory = directory
        self._tenants: dict[tuple[str, str], TenantVectors] = {}
        self._lock = threading.Lock()
        """Guards the registry of tenants, the workers and the counter; never held while a
        tenant's vectors are read or searched (each :class:`TenantVectors` has its own lock)."""
        self._workers: list[threading.Thread] = []
        self.strategies: Counter[str] = Counter()
        """How many searches each strategy answered (read by the benchmarks)."""

    def invalidate(self) -> None:
        """Forget every cached matrix and persisted index (vectors were rewritten in place, e.g.
        re-embedding: neither the watermark nor the learned cells can see that)."""
        with self._lock:
            held = list(self._tenants.values())
            self._tenants.clear()
        for vectors in held:
            with vectors.lock:  # after this, no save of theirs can follow the deletion below
                vectors.retired = True
        if self.directory is not None and self.directory.is_dir():
            for stale in self.directory.glob("*.npz"):
                stale.unlink(missing_ok=True)

    def forget(self, tenant_id: str, rowids: list[int]) -> None:
        """Erased rows of ``tenant_id``: no copy of their vectors stays in this process."""
        with self._lock:
            held = [vectors for (tenant, _), vectors in self._tenants.items() if tenant == tenant_id]
        for vectors in held:
            with vectors.lock:
                vectors.forget(np.asarray(rowids, dtype=np.int64))

    def forget_gone(self, tenant_id: str, erasures: int, live: Callable[[], np.ndarray]) -> None:
        """Rows of ``tenant_id`` deleted by any process: when ``erasures``, the tenant's count of
        deletes now, is not the one its vectors here agree with, those whose rowids ``live`` (the
        tenant's rowids now) no longer holds are forgotten as :meth:`forget` forgets them. The
        caller reads ``erasures`` before its search's rows, so a delete after it is seen next time."""
        with self._lock:
            held = [vectors for (tenant, _), vectors in self._tenants.items() if tenant == tenant_id]
        there: np.ndarray | None = None
        for vectors in held:
            with vectors.lock:
                if vectors.erasures == erasures:
                    continue
                if vectors.count:
                    there = live() if there is None else there
                    vectors.forget(np.setdiff1d(vectors.rowids, there))
                vectors.erasures = erasures

    def place(
        self, conn: Any, tenant_id: str, embedder: str, scope_rowids: np.ndarray, toward: Any = None
    ) -> Placed | None:
        """Where ``scope_rowids`` sit among the tenant's vectors, brought up to date: what an exact
        search of that scope needs but its queries, found before them (``None``: the tenant has not
        been searched yet, or its scope is searched by its index); with ``toward``, the cosines of
        those rows with it too (a :class:`Mix` of a later search then needs no product for it)."""
        with self._lock:
            vectors = self._tenants.get((tenant_id, embedder))
        if vectors is None:
            return None
        with vectors.lock:
            self._sync(conn, tenant_id, embedder, vectors)
            if len(scope_rowids) >= self.ann_threshold and vectors.index is not None:
                return None
            positions = vectors.positions(np.sort(scope_rowids))
            if toward is None or not len(positions):
                return Placed(vectors, vectors.count, positions)
            measured = cosines(vectors, positions, [np.asarray(toward, dtype=np.float32)])[0]
            return Placed(vectors, vectors.count, positions, toward, measured)

    def search(
        self,
        conn: Any,
        tenant_id: str,
        embedder: str,
        scope_rowids: np.ndarray,
        query: np.ndarray,
        k: int,
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """Top ``k`` (rowids, similarities, strategy) among ``scope_rowids``."""
        return self.search_many(conn, tenant_id, embedder, scope_rowids, [query], k)[0]

    def search_many(
        self,
        conn: Any,
        tenant_id: str,
        embedder: str,
        scope_rowids: np.ndarray,
        queries: list[np.ndarray | Mix],
        k: int,
        placed: Placed | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray, str]]:
        """:meth:`search` for each of ``queries`` over the same scope: the vectors are brought up to
        date and the scope placed once (and gathered once, when it is a small part of them), or
        ``placed`` used, when no row came since :meth:`place` placed these ``scope_rowids``. A
        :class:`Mix` is scored from its base's cosines and its own where both are searched exactly
        (its cosines measured ahead only while ``placed`` holds), else searched as its vector."""
        explicit: list[np.ndarray] = []  # a mix's base comes before it
        for query in queries:
            explicit.append(query.vector(explicit) if isinstance(query, Mix) else query)
        vectors = self._tenant(tenant_id, embedder, len(explicit[0]))
        with vectors.lock:
            self._sync(conn, tenant_id, embedder, vectors)
            self._keep_index(tenant_id, embedder, vectors)
            found: dict[int, tuple[np.ndarray, np.ndarray, str]] = {}
            if len(scope_rowids) >= self.ann_threshold and vectors.index is not None:
                share = len(scope_rowids) / vectors.count
                for n, query in enumerate(explicit):
                    ids, sims = vectors.index.search(query, k, scope_rowids, share)
                    if len(ids) >= min(k, len(scope_rowids)):
                        self._count("ivf")
                        found[n] = (ids, sims, "ivf")
            rest = [n for n in range(len(queries)) if n not in found]
            current = placed is not None and placed.vectors is vectors and placed.count == vectors.count
            positions = placed.positions if placed is not None and current else None
            asked: list[np.ndarray | Mix] = []
            for n in rest:
                query = queries[n]
                if not isinstance(query, Mix) or query.base not in rest:
                    asked.append(explicit[n])
                else:  # its base's cosines are measured here: only its own are wanted
                    known = query.cosines if current else None
                    asked.append(Mix(rest.index(query.base), query.toward, query.weight, known))
            for n, top in zip(rest, exact(vectors, scope_rowids, asked, k, positions), strict=True):
                self._count("exact")
                found[n] = top
            return [found[n] for n in range(len(queries))]

    def load(self, conn: Any, tenant_id: str, embedder: str, dimension: int) -> int:
        """Read the tenant's vectors into memory now (and start its index, when it is large
        enough), as its first search would; returns how many it holds."""
        vectors = self._tenant(tenant_id, embedder, dimension)
        with vectors.lock:
            self._sync(conn, tenant_id, embedder, vectors)
            self._keep_index(tenant_id, embedder, vectors)
            return vectors.count

    def wait_for_indexing(self, timeout: float | None = None) -> bool:
        """Block until every background index load or build has finished (benchmarks and tests);
        whether they all did within ``timeout`` seconds."""
        for worker in list(self._workers):
            worker.join(timeout)
        return not any(w.is_alive() for w in self._workers)

    def close(self) -> None:
        """Write every index that grew since its last save."""
        with self._lock:
            held = list(self._tenants.items())
        for (tenant, embedder), vectors in held:
            with vectors.lock:
                if vectors.index is not None and vectors.index.size != vectors.saved:
                    self._save(tenant, embedder, vectors)

    def _tenant(self, tenant_id: str, embedder: str, dimension: int) -> TenantVectors:
        with self._lock:
            vectors = self._tenants.get((tenant_id, embedder))
            if vectors is None:
                vectors = self._tenants[tenant_id, embedder] = TenantVectors(dimension=dimension)
            return vectors

    def _count(self, strategy: str) -> None:
        with self._lock:
            self.strategies[strategy] += 1

    def _sync(self, conn: Any, tenant_id: str, embedder: str, vectors: TenantVectors) -> None:
        """Rows written since the last look, appended (the caller holds ``vectors.lock``)."""
        newest = conn.execute("SELECT max(rowid) FROM episodes").fetchone()[0] or 0
        if newest <= vectors.watermark:
            return  # nothing written since the last look (the common case: O(1))
        # NOT INDEXED: walk the rowid range, not the tenant index (which would visit every row).
        rows = conn.execute(
            "SELECT rowid, vector FROM episodes NOT INDEXED WHERE rowid > ? AND tenant_id = ? AND embedder = ? "
            "AND vector IS NOT NULL ORDER BY rowid",
            (vectors.watermark, tenant_id, embedder),
        ).fetchall()
        if rows:
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = unpack_vectors([r[1] for r in rows], vectors.dimension)
            vectors.append(ids, matrix)
        vectors.watermark = max(vectors.watermark, newest)  # other tenants' rows need no second look

    def _keep_index(self, tenant_id: str, embedder: str, vectors: TenantVectors) -> None:
        """Add the rows written since the last search to the tenant's index, or start preparing
        one when the tenant has grown large enough to need it."""
        if vectors.index is not None:
            fresh = slice(vectors.indexed, vectors.count)
            vectors.index.add(vectors.rowids[fresh], vectors.matrix[fresh])
            vectors.indexed = vectors.count
            if vectors.index.size - vectors.saved >= max(1000, vectors.saved // 10):
                self._save(tenant_id, embedder, vectors)
        elif vectors.count >= self.ann_threshold and not vectors.preparing and not vectors.failed:
            vectors.preparing = True
            worker = threading.Thread(
                target=self._prepare, args=(tenant_id, embedder, vectors), name="episodic-ann", daemon=True
            )
            with self._lock:
                self._workers = [w for w in self._workers if w.is_alive()] + [worker]
            worker.start()

    def _prepare(self, tenant_id: str, embedder: str, vectors: TenantVectors) -> None:
        """Background: the tenant's index from its persisted cells, or from newly learned ones."""
        try:
            with vectors.lock:
                ids, matrix = vectors.rowids, vectors.matrix  # views: these rows never change
            path = self._path(tenant_id, embedder)
            stored = ann.load(path, embedder, vectors.dimension) if path and path.exists() else None
            index = _refill(stored, ids, matrix) if stored else ann.CellIndex.train(matrix)
            if not stored:
                index.add(ids, matrix)
            with vectors.lock:
                if vectors.retired:
                    return  # invalidated meanwhile
                index.remove(np.asarray(vectors.erased_meanwhile, dtype=np.int64))
                vectors.index, vectors.indexed, vectors.erased_meanwhile = index, len(ids), []
                vectors.saved = len(stored[1]) if stored else 0
                self._keep_index(tenant_id, embedder, vectors)
        except Exception:  # exact search keeps answering; say why once
            log.exception("could not prepare the vector index of a tenant; exact search answers")
            vectors.failed = True
        finally:
            vectors.preparing = False

    def _save(self, tenant_id: str, embedder: str, vectors: TenantVectors) -> None:
        path = self._path(tenant_id, embedder)
        if path is None or vectors.index is None or vectors.retired:
            return
        try:
            ann.save(path, vectors.index, embedder)
            vectors.saved = vectors.index.size
        except OSError:
            log.warning("could not persist the vector index at %s; it is rebuilt at the next start", path)

    def _path(self, tenant_id: str, embedder: str) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"{tenant_id}\0{embedder}".encode()).hexdigest()[:32]
        return self.directory / f"{digest}.npz"


def _refill(stored: tuple[np.ndarray, np.ndarray, np.ndarray], ids: np.ndarray, matrix: np.ndarray) -> ann.CellIndex:
    """An index with the persisted centres, each row still present put back in its persisted
    cell and every other row (written after the save) in its nearest one. A persisted rowid
    whose row is gone (erased since) is skipped."""
    centres, rowids, cells = stored
    index = ann.CellIndex(centres)
    at = np.clip(np.searchsorted(ids, rowids), 0, len(ids) - 1)
    hit = ids[at] == rowids
    index.add(ids[at[hit]], matrix[at[hit]], cells[hit])
    rest = np.ones(len(ids), dtype=bool)
    rest[at[hit]] = False
    index.add(ids[rest], matrix[rest])
    return index
