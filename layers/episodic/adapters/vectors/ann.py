"""A tenant's approximate vector index for large scopes: an inverted file over k-means cells.

Why an inverted file (IVF) and not a graph (HNSW): on sentence-like unit vectors with a
filtering scope, a filtered HNSW walk agreed less with exact search on the top 10 than IVF
probing a fraction of its cells, even with a much larger search effort, and needed a long build
paid by the first query (``benchmarks/recall_at_scale.py`` measures the agreement; the reasoning
is in docs/decisions.md). IVF also fits a store that changes under it: a new vector is added by
finding its nearest cell, so the index follows every write and is never rebuilt, and a removed
one simply leaves its cell's list. Only the cells' centres are learned (k-means on a
sample, once per tenant); that is the one step that takes seconds, and it runs off the
request path.

Why the persisted file holds no vectors: it keeps the cell centres and, for every indexed row,
its rowid and its cell -- enough to put each vector back in its cell at the next start without
learning the cells again, while the vectors themselves are read from SQLite (the source of
truth, where an erasure removes them). A rowid in the file whose row is gone is skipped, so an
erased episode leaves nothing of its text or embedding in the file: a centre is the mean of
the ~50 sample vectors nearest it, from which no one vector can be read back.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1
MIN_PROBES = 32
IN_SCOPE_SCANNED = 20_000
"""Cells are probed until about this many of the scope's rows have been looked at (at least
``MIN_PROBES`` cells): a scope admitting a fraction ``s`` of a tenant whose cells hold ``c`` rows
each probes ``20,000 / (c * s)`` cells. A fixed number of cells is not enough: measured on
embedding-like vectors with 1,024 cells, 64 cells at 10% agreed with exact search on 0.995 of
the top 10 for a million rows (~980 a cell) but 0.873 for 100,000 (~98 a cell); with 10,000
rows looked at, a scope of all 100,000 still agreed on only 0.960, with 20,000 on 0.980."""
ROWS_PER_CELL = 40
"""faiss' k-means wants at least ~39 training points per centre."""
MAX_CELLS = 1024
TRAINING_SAMPLE = 50_000


class CellIndex:
    """IVF-Flat over inner product, ids are SQLite rowids. Not thread-safe: the caller locks."""

    def __init__(self, centres: np.ndarray) -> None:
        import faiss

        cells, dimension = centres.shape
        self.centres = np.ascontiguousarray(centres, dtype=np.float32)
        self._quantiser = faiss.IndexFlatIP(dimension)  # kept referenced: the IVF borrows it
        self._quantiser.add(self.centres)
        self._index = faiss.IndexIVFFlat(self._quantiser, dimension, cells, faiss.METRIC_INNER_PRODUCT)
        self._index.is_trained = True

    @classmethod
    def train(cls, vectors: np.ndarray, seed: int = 7) -> CellIndex:
        """Centres learned by k-means on a sample of ``vectors`` (seconds for 50,000)."""
        import faiss

        cells = max(1, min(MAX_CELLS, len(vectors) // ROWS_PER_CELL))
        rng = np.random.default_rng(seed)
        sample = vectors[np.sort(rng.choice(len(vectors), min(len(vectors), TRAINING_SAMPLE), replace=False))]
        kmeans = faiss.Kmeans(vectors.shape[1], cells, niter=20, seed=seed, spherical=True)
        kmeans.train(np.ascontiguousarray(sample, dtype=np.float32))
        return cls(np.asarray(kmeans.centroids))

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    def add(self, rowids: np.ndarray, vectors: np.ndarray, cells: np.ndarray | None = None) -> None:
        """Index these rows, each in its nearest cell or in the given ``cells``."""
        import faiss

        if len(rowids) == 0:
            return
        ids = np.ascontiguousarray(rowids, dtype=np.int64)
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if cells is None:
            self._index.add_with_ids(x, ids)
        else:
            lists = np.ascontiguousarray(cells, dtype=np.int64)
            self._index.add_core(len(ids), faiss.swig_ptr(x), faiss.swig_ptr(ids), faiss.swig_ptr(lists))

    def remove(self, rowids: np.ndarray) -> None:
        import faiss

        if len(rowids):
            self._index.remove_ids(faiss.IDSelectorBatch(np.ascontiguousarray(rowids, dtype=np.int64)))

    def search(
        self, query: np.ndarray, k: int, scope_rowids: np.ndarray, selectivity: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (rowids, inner products) among ``scope_rowids``, the filter applied while
        each probed cell is scanned (a bitmap over rowids: one bit test per listed row)."""
        import faiss

        admitted = np.zeros(int(scope_rowids.max()) + 1, dtype=bool)
        admitted[scope_rowids] = True
        bits = np.packbits(admitted, bitorder="little")
        selector = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))  # size in bytes
        cells = int(self._index.nlist)
        in_scope_per_cell = max(self.size / cells * selectivity, 1e-3)
        probes = min(cells, max(MIN_PROBES, math.ceil(IN_SCOPE_SCANNED / in_scope_per_cell)))
        params = faiss.SearchParametersIVF(sel=selector, nprobe=probes)  # type: ignore[call-arg]
        sims, ids = self._index.search(query.reshape(1, -1).astype(np.float32), k, params=params)
        keep = ids[0] >= 0
        return ids[0][keep], sims[0][keep]

    def assignments(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rowids, cells)`` of every indexed row, read from the inverted lists."""
        import faiss

        lists = self._index.invlists
        if lists is None:  # an IVF index always has its lists; faiss' types allow none
            raise RuntimeError("the index has no inverted lists")
        ids, cells = [], []
        for cell in range(int(self._index.nlist)):
            size = lists.list_size(cell)
            if size:
                ids.append(faiss.rev_swig_ptr(lists.get_ids(cell), size).copy())
                cells.append(np.full(size, cell, dtype=np.int32))
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32)
        return np.concatenate(ids), np.concatenate(cells)


def save(path: Path, index: CellIndex, embedder: str) -> None:
    """Write centres and assignments beside the database, atomically (a reader sees the old
    file or the new one, never half of one; two processes may both write it)."""
    rowids, cells = index.assignments()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with partial.open("wb") as handle:
        np.savez(
            handle,
            format=np.array(FORMAT),
            embedder=np.array(embedder),
            centres=index.centres,
            rowids=rowids,
            cells=cells,
        )
    os.replace(partial, path)


def load(path: Path, embedder: str, dimension: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(centres, rowids, cells)`` from a file :func:`save` wrote for this embedder and
    dimension, or None (no file, another model's, another format, or unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays: dict[str, Any] = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError):
        return None
    try:
        centres, rowids, cells = arrays["centres"], arrays["rowids"], arrays["cells"]
        fits = (
            int(arrays["format"]) == FORMAT
            and str(arrays["embedder"]) == embedder
            and centres.ndim == 2
            and centres.shape[1] == dimension
            and rowids.shape == cells.shape
            and (len(cells) == 0 or 0 <= int(cells.min()) <= int(cells.max()) < len(centres))
        )
    except (KeyError, ValueError, TypeError):
        return None
    return (centres.astype(np.float32), rowids.astype(np.int64), cells.astype(np.int64)) if fits else None
