"""In-memory vector search for the local backend: exact by default, HNSW for large scopes.

The vectors live in SQLite with their episodes (the source of truth); this keeps, per
tenant and embedder, a float32 matrix of them so a query does not re-read blobs from disk.
It follows the database by a rowid watermark: each search first loads rows newer than
the last one seen, so writes from this process or any other show up without a restart.
Rows deleted or filtered out need no bookkeeping: the caller passes the rowids its scope
query admitted, and only those are searched.

Search strategy (the one OpenSearch uses for filtered k-NN):
* scopes smaller than ``ann_threshold``: exact inner product over the scope's rows;
* larger scopes: a faiss HNSW index over all of the tenant's vectors, searched with an
  ``IDSelectorBatch`` of the scope's rowids (the filter is applied inside the graph walk,
  not afterwards); if that returns fewer than ``k`` hits, exact search answers instead.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from episodic.adapters.codec import unpack_vectors

DEFAULT_ANN_THRESHOLD = 50_000


class TenantVectors:
    """One tenant's vectors of one embedder, rowid-ascending, in a buffer that grows by doubling
    (so appending the few rows of a new write does not copy the whole matrix)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.count = 0
        self.watermark = 0
        self._ids = np.empty(1024, dtype=np.int64)
        self._buf = np.empty((1024, dimension), dtype=np.float32)
        self.ann: Any = None
        self.ann_size = 0

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
            self._buf = grown
        self._ids[self.count : needed] = rowids
        self._buf[self.count : needed] = vectors
        self.count = needed
        self.watermark = int(rowids.max())

    def positions(self, rowids: np.ndarray) -> np.ndarray:
        """Positions of the given (sorted) rowids; rowids ascend, so a binary search finds them."""
        if self.count == 0:
            return np.empty(0, dtype=np.int64)
        pos = np.clip(np.searchsorted(self.rowids, rowids), 0, self.count - 1)
        return pos[self.rowids[pos] == rowids]


class VectorSearch:
    """Exact or filtered-HNSW search over one SQLite database's episode vectors."""

    def __init__(self, ann_threshold: int = DEFAULT_ANN_THRESHOLD, ef_search: int = 128) -> None:
        self.ann_threshold = ann_threshold
        self.ef_search = ef_search
        self._tenants: dict[tuple[str, str], TenantVectors] = {}
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        """Forget every cached matrix (after vectors were rewritten in place, e.g. re-embedding)."""
        with self._lock:
            self._tenants.clear()

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
        with self._lock:
            vectors = self._sync(conn, tenant_id, embedder, len(query))
            if len(scope_rowids) >= self.ann_threshold:
                found = self._ann(vectors, scope_rowids, query, k)
                if found is not None and len(found[0]) >= min(k, len(scope_rowids)):
                    return found[0], found[1], "hnsw"
            positions = vectors.positions(np.sort(scope_rowids))
            if len(positions) == 0:
                return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), "exact"
            if len(positions) * 8 > vectors.count:
                sims = (vectors.matrix @ query)[positions]  # one contiguous BLAS pass beats a large gather
            else:
                sims = vectors.matrix[positions] @ query
            top = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else np.arange(len(sims))
            top = top[np.argsort(-sims[top])]
            return vectors.rowids[positions[top]], sims[top], "exact"

    def _sync(self, conn: Any, tenant_id: str, embedder: str, dimension: int) -> TenantVectors:
        key = (tenant_id, embedder)
        vectors = self._tenants.get(key)
        if vectors is None:
            vectors = self._tenants[key] = TenantVectors(dimension=dimension)
        newest = conn.execute("SELECT max(rowid) FROM episodes").fetchone()[0] or 0
        if newest <= vectors.watermark:
            return vectors  # nothing written since the last look (the common case: O(1))
        # NOT INDEXED: walk the rowid range, not the tenant index (which would visit every row).
        rows = conn.execute(
            "SELECT rowid, vector FROM episodes NOT INDEXED WHERE rowid > ? AND tenant_id = ? AND embedder = ? "
            "AND vector IS NOT NULL ORDER BY rowid",
            (vectors.watermark, tenant_id, embedder),
        ).fetchall()
        if rows:
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = unpack_vectors([r[1] for r in rows], dimension)
            vectors.append(ids, matrix)
        vectors.watermark = max(vectors.watermark, newest)  # other tenants' rows need no second look
        return vectors

    def _ann(
        self, vectors: TenantVectors, scope_rowids: np.ndarray, query: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        import faiss

        if vectors.ann is None or vectors.ann_size < len(vectors.rowids):
            if vectors.ann is None:
                graph = faiss.IndexHNSWFlat(vectors.dimension, 16, faiss.METRIC_INNER_PRODUCT)
                graph.hnsw.efConstruction = 64
                vectors.ann = faiss.IndexIDMap(graph)
            fresh = slice(vectors.ann_size, len(vectors.rowids))
            vectors.ann.add_with_ids(vectors.matrix[fresh], vectors.rowids[fresh])
            vectors.ann_size = len(vectors.rowids)
        selector = faiss.IDSelectorBatch(np.ascontiguousarray(scope_rowids, dtype=np.int64))
        # A filter that admits a fraction f of the graph leaves ~f of each beam usable: widen it.
        selectivity = max(len(scope_rowids) / max(vectors.count, 1), 1e-3)
        ef = int(min(max(self.ef_search, k) / selectivity, 2048))
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=ef)  # type: ignore[attr-defined]
        sims, ids = vectors.ann.search(query.reshape(1, -1).astype(np.float32), k, params=params)
        keep = ids[0] >= 0
        return ids[0][keep], sims[0][keep]
